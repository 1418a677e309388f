/** The benchmark cannot rot: a tiny, untimed run of `bench/run.mjs --smoke` must print its tables and target lines. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/run.js';

describe('bench smoke', () => {
  it('prints the table, the ratios, the scaling tables and every target line', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'run.mjs'), '--smoke'], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    for (const s of ['| 1 floor (reader + JSON.parse) |', '| 2 analyze --format json |', '| 4 analyze --profile app-json (pino) |', '2÷1 analyze / floor', '3÷2 jq / analyze', '4÷2 app-json / analyze', '| 5 analyze --workers on (parsing thread) |', '5÷1 workers / floor', 'scaling with input size', 'peak RSS against resources', 'CLI start-up to first output']) {
      expect(r.stdout).toContain(s);
    }
    const targets = r.stdout.split('\n').filter((l) => /^(PASS|FAIL|SKIP) /.test(l));
    expect(targets).toHaveLength(6);
  }, 130_000);
});
