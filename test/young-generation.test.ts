import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { knownV8, sizedByUser } from '../src/cli/young-generation.js';
import { ROOT } from './helpers/run.js';

describe('young generation cap (CLI)', () => {
  it('leaves a young generation sized by the user alone', () => {
    expect(sizedByUser([], '')).toBe(false);
    expect(sizedByUser([], '--max-old-space-size=4096')).toBe(false);
    expect(sizedByUser(['--max-semi-space-size=4'], '')).toBe(true);
    expect(sizedByUser([], '--trace-gc --max_semi_space_size=32')).toBe(true);
    expect(sizedByUser([], '--semi-space-growth-factor=4')).toBe(true);
    expect(sizedByUser(['--min-semi-space-size=2'], '')).toBe(true);
  });

  it('knows which V8s have the growth factor', () => {
    expect(knownV8('11.3.244.8-node.38')).toBe(true);
    expect(knownV8('12.4.254.21-node.33')).toBe(false);
    expect(knownV8('13.6.233.10-node.28')).toBe(false);
    expect(knownV8('10.2.154.26-node.1')).toBe(false);
    expect(knownV8('14.0.1')).toBe(false);
  });

  // Objects that survive scavenges, as batches of events do in a long run: without the cap V8
  // grows the young generation to its 16 MB semi-spaces, with it the semi-spaces stay at 8 MB.
  const script = (cap: boolean) => `
    import { getHeapSpaceStatistics } from 'node:v8';
    const { capYoungGeneration } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'cli', 'young-generation.js')).href)});
    const stop = ${cap ? 'capYoungGeneration()' : '() => {}'};
    const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    let max = 0;
    const ring = new Array(20000);
    const t0 = Date.now();
    for (let round = 0; round < 400 && Date.now() - t0 < 5000; round++) {
      for (let i = 0; i < 20000; i++) ring[i] = { a: round, b: i, c: 'x' + i };
      await new Promise((r) => setImmediate(r));
      max = Math.max(max, young());
    }
    stop();
    process.stdout.write(String(max / 1048576));
  `;
  const run = (cap: boolean) => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script(cap)], { encoding: 'utf8', env, timeout: 20000 });
    expect(r.stderr).toBe('');
    return Number(r.stdout);
  };

  // Measured on V8 11 (Node 20); later V8s that hold the factor at 2 or more keep their growth.
  it.runIf(process.versions.v8.startsWith('11.'))('holds the semi-spaces at 8 MB where V8 would grow them to 16', () => {
    const uncapped = run(false);
    const capped = run(true);
    // (A V8 whose maximum is 8 MB or less shows nothing here.)
    if (uncapped > 16) expect(capped).toBeLessThanOrEqual(16);
    expect(capped).toBeGreaterThan(0);
  });
});
