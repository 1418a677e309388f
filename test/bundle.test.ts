// bin/stalewrite.js runs the bundle scripts/bundle.mjs builds (dist/bundle): yargs, cliui and the
// ajv runtime bundled, some of their modules patched (help.cjs loaded on first use, the locales
// beside the bundle, assertions, the version guess), built-ins taken by require(). The bundled CLI
// must say exactly what the compiled one (dist/cli/main.js) says: help in every language yargs
// has, usage errors, reports, exit codes.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, FIXTURES, ROOT, runCli } from './helpers/run.js';

const UNBUNDLED = join(ROOT, 'test', 'helpers', 'unbundled-cli.mjs');
const BUNDLE = join(ROOT, 'dist', 'bundle');

/** Runs with LANG=C unless told otherwise, whatever the tests' own environment says. */
const run = (script: string, args: string[], env: Record<string, string | undefined> = {}) => runCli(args, { script, env: { LANG: 'C', LC_ALL: undefined, LC_MESSAGES: undefined, LANGUAGE: undefined, ...env } });

async function same(args: string[], env?: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [bundled, compiled] = await Promise.all([run(BIN, args, env), run(UNBUNDLED, args, env)]);
  expect(bundled, `stalewrite ${args.join(' ')}`).toEqual(compiled);
  return bundled;
}

const article = join(FIXTURES, 'article-unsafe.ndjson');

describe('the bundled CLI (bin/stalewrite.js) against the compiled one (dist/cli/main.js)', () => {
  it('prints the same help for every command, and in other languages', async () => {
    for (const args of [['--help'], ['analyze', '--help'], ['merge', '--help'], ['rules', '--help'], ['explain', '--help'], ['timeline', '--help'], ['check', '--help'], ['map', '--help'], ['--version']]) {
      const r = await same(args);
      expect(r.code).toBe(0);
      expect(r.stdout.length).toBeGreaterThan(0);
    }
    // yargs' own strings (Options:, [boolean], [default: …]) come from the locale files copied beside the bundle.
    const de = await same(['analyze', '--help'], { LANG: 'de_DE.UTF-8' });
    expect(de.stdout).toContain('Optionen:');
    await same(['--help'], { LC_ALL: 'ja_JP' });
    await same(['map', '--help'], { LANG: 'pirate' });
  }, 120000);

  it('gives the same usage errors and exit codes', async () => {
    for (const args of [[], ['--bogus'], ['anlyze'], ['analyze', '--fial-on', 'error', article], ['analyze', '-f', 'bogus', article], ['analyze', '--max-findings', 'x', article], ['analyze', '--jobs', '0', article], ['merge'], ['explain', 'nope'], ['timeline', article], ['analyze', join(FIXTURES, 'no-such-file.ndjson')]]) {
      const r = await same(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^stalewrite: /);
    }
    await same(['analyze', '--fial-on', 'x'], { LANG: 'fr_FR' });
  }, 120000);

  it('writes the same reports, in every format, and reads mappings and gzip', async () => {
    for (const format of ['json', 'ndjson', 'markdown', 'html', 'junit', 'github', 'table']) await same(['analyze', '-f', format, article]);
    for (const f of readdirSync(FIXTURES).filter((f) => f.endsWith('.ndjson')).slice(0, 12)) await same(['analyze', join(FIXTURES, f)]);
    await same(['analyze', '--mapping', join(ROOT, 'examples', 'mapping', 'billing.json'), join(ROOT, 'examples', 'mapping', 'billing.log')]);
    await same(['rules', '-f', 'markdown']);
    await same(['explain', 'accepted-stale-write']);
    await same(['timeline', '-r', 'resource-7', article]);
  }, 180000);

  // Where the bundle differs most: workers and partition jobs run the compiled dist/ code beside
  // the bundled main thread; gzip, digests and report files go through built-ins taken by require().
  it('gives the same results with --jobs, --partition, stdin, gzip input and -o', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-bundle-'));
    try {
      const log = join(dir, 'mixed.ndjson');
      const lines: string[] = [];
      for (const f of readdirSync(FIXTURES).filter((f) => f.endsWith('.ndjson')).slice(0, 8)) lines.push(...readFileSync(join(FIXTURES, f), 'utf8').split('\n').filter((l) => l !== ''));
      writeFileSync(log, lines.join('\n') + '\n');
      writeFileSync(`${log}.gz`, gzipSync(readFileSync(log)));
      for (const args of [['--partition', '1/2'], ['--partition', '0/3']]) {
        const r = await same(['analyze', '-f', 'json', ...args, log]);
        expect(r.code, args.join(' ')).not.toBe(2);
      }
      // With --jobs the live list of invalid lines on stderr comes in the order the jobs find
      // them (README "--jobs"); the report and the exit code are the same.
      const jobs = await Promise.all([BIN, UNBUNDLED].map((script) => run(script, ['analyze', '-f', 'json', '--jobs', '2', log])));
      expect(jobs[0]!.code).toBe(jobs[1]!.code);
      expect(jobs[0]!.stdout.replace(/"elapsedMs": [0-9.]+/, '')).toBe(jobs[1]!.stdout.replace(/"elapsedMs": [0-9.]+/, ''));
      await same(['analyze', '-f', 'ndjson', `${log}.gz`]);
      const piped = await Promise.all([BIN, UNBUNDLED].map((script) => runCli(['analyze', '-f', 'markdown', '-'], { stdin: readFileSync(log), env: { LANG: 'C' } })));
      expect(piped[0]).toEqual(piped[1]);
      const outs = [join(dir, 'a.json'), join(dir, 'b.json')];
      const written = await Promise.all([BIN, UNBUNDLED].map((script, i) => run(script, ['analyze', '-o', outs[i]!, log])));
      expect(written[0]!.code).toBe(written[1]!.code);
      const strip = (t: string) => t.replace(/"elapsedMs": [0-9.]+/, '');
      expect(strip(readFileSync(outs[0]!, 'utf8'))).toBe(strip(readFileSync(outs[1]!, 'utf8')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180000);

  it('keeps what only help needs out of the start-up bundle', () => {
    const entry = readFileSync(join(BUNDLE, 'stalewrite.js'), 'utf8');
    // cliui and string-width (their Unicode-property expressions cost some 40 ms to compile) are in help.cjs only.
    expect(entry).not.toContain('RGI_Emoji');
    expect(entry).not.toContain('Intl.Segmenter');
    expect(readFileSync(join(BUNDLE, 'help.cjs'), 'utf8')).toContain('Intl.Segmenter');
    // Built-ins by require(), not by ES import (whose facade loads the lazy parts of each).
    expect(entry).not.toMatch(/^import[^;]*from "(node:)?(fs|crypto|zlib|assert|util|stream)"/m);
    expect(existsSync(join(BUNDLE, 'locales', 'en.json'))).toBe(true);
    expect(readFileSync(join(BUNDLE, 'THIRD-PARTY-LICENSES.md'), 'utf8')).toContain('## yargs@');
  });
});
