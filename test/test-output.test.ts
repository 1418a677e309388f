// `npm test 2>&1 | cat` (CI logs) carries no colour codes (issue 12, point 7). scripts/test.mjs is
// run on a probe project with one failing test — the most colourful output vitest has — with
// FORCE_COLOR=0 in the environment, which alone used to give colours; and tsc, which the build
// runs, is run on a broken file with the environment test.mjs gives it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/run.js';
// @ts-expect-error: a plain .mjs script without types
import { plainEnv } from '../scripts/plain-env.mjs';

const ESC = /\u001b\[/;
const dir = mkdtempSync(join(tmpdir(), 'stalewrite-test-output-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment a pipe-fed `npm test` may have: colour asked off the old way. */
function pipedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0' };
  delete env.NO_COLOR;
  return env;
}

describe('npm test output on a pipe', () => {
  it('has no colour codes from vitest, even for a failure with a diff', () => {
    const probe = join(dir, 'probe');
    mkdirSync(join(probe, 'test'), { recursive: true });
    writeFileSync(join(probe, 'test', 'probe.test.ts'), "test('colour probe', () => { expect({ a: 1, b: 'x' }).toEqual({ a: 2, b: 'y' }); });\n");
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'test.mjs'), '--root', probe, '--globals'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120000,
      env: { ...pipedEnv(), STALEWRITE_TEST_NO_BUILD: '1', STALEWRITE_TEST_RESULTS: join(dir, 'results.json') },
    });
    const output = r.stdout + r.stderr;
    expect(r.status, output).toBe(1);
    expect(output).toContain('colour probe');
    expect(output).toMatch(/Expected/);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('0 passed, 1 failed');
    expect(output).not.toMatch(ESC);
  });

  it('has no colour codes from tsc, which colours on FORCE_COLOR=0 by itself', () => {
    const broken = join(dir, 'broken.ts');
    writeFileSync(broken, 'const n: number = "text";\nexport { n };\n');
    const tsc = (env: NodeJS.ProcessEnv) => spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['--noEmit', broken], { cwd: dir, encoding: 'utf8', env, timeout: 60000 });
    const plain = tsc(plainEnv(pipedEnv(), false));
    expect(plain.stdout + plain.stderr).toMatch(/error TS2322/);
    expect(plain.stdout + plain.stderr).not.toMatch(ESC);
    // The detector works: the environment as it was gives colours.
    const before = tsc(pipedEnv());
    expect(before.stdout + before.stderr).toMatch(ESC);
  });

  it('keeps colours on a terminal, and an explicit FORCE_COLOR=1', () => {
    expect(plainEnv({ FORCE_COLOR: '0' }, true)).toEqual({ FORCE_COLOR: '0' });
    expect(plainEnv({ FORCE_COLOR: '1' }, false)).toEqual({ FORCE_COLOR: '1' });
    expect(plainEnv({ FORCE_COLOR: '0', PATH: '/bin' }, false)).toEqual({ NO_COLOR: '1', PATH: '/bin' });
    expect(plainEnv({}, false)).toEqual({ NO_COLOR: '1' });
  });
});
