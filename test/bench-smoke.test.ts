/** The benchmark cannot rot: a tiny, untimed run of `bench/run.mjs --smoke` must print its tables and target lines. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/run.js';

const TARGETS = [
  'analysis vs floor',
  'default run vs DuckDB',
  'peak RSS, 1 GB with 100k resources <= 150 MB',
  'peak RSS, 1M resources <= 400 MB',
  'memory flat as events grow',
  'memory flat as line length grows',
  'app-json vs floor',
  'start-up',
  '--jobs 2 vs --jobs 1',
  'partition skip cost',
];

describe('bench smoke', () => {
  it('prints the table, the ratios, the scaling tables and every target line', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'run.mjs'), '--smoke'], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    for (const s of ['| 1 floor (reader + JSON.parse) |', '| 2 analyze --format json |', '| 4 analyze --profile app-json (pino) |', '| 6 analyze, default (no --jobs flag) |', '2÷1 analyze / floor', '3÷2 jq / analyze', '4÷2 app-json / analyze', '6÷7 default / DuckDB', '| 5 analyze --jobs 2 (two partitions, two threads) |', '5÷2 jobs 2 / jobs 1', '| 8 analyze --partition 1/4 (one partition of four) |', '8÷2 wall, 1 of 4 / single', '| 9 two runs of 2 on pre-split halves, together (the 2-core ceiling) |', '9÷2 pre-split pair / single', 'cores kept busy (CPU time of every thread ÷ wall): 2 analyze ', '--jobs 2 report vs --jobs 1: byte-identical', 'scaling with input size', 'peak RSS against resources', 'peak RSS against events', 'long lines on stdin', 'CLI start-up to first output']) {
      expect(r.stdout).toContain(s);
    }
    const targets = r.stdout.split('\n').filter((l) => /^(PASS|FAIL|SKIP) /.test(l));
    for (const t of TARGETS) {
      const found = targets.filter((l) => l.slice(5).startsWith(t));
      expect(found, `target line "${t}"`).toHaveLength(1);
      if (found[0]!.startsWith('SKIP')) expect(found[0]).toContain('not measured (');
    }
    // The smoke run is small: the 1 GB line is never measured, the others always are (DuckDB when installed).
    expect(targets.find((l) => l.includes('1 GB with 100k'))).toMatch(/^SKIP .*not measured \(needs --mb 1000/);
    for (const t of ['memory flat as events grow', 'memory flat as line length grows', 'analysis vs floor', 'app-json vs floor']) {
      expect(targets.find((l) => l.slice(5).startsWith(t))).toMatch(/^(PASS|FAIL) /);
    }
    // The --jobs target line names the ceiling measured in the same run.
    expect(targets.find((l) => l.includes('--jobs 2 vs --jobs 1'))).toMatch(/ceiling here: two single runs on pre-split halves together \d+\.\d\dx, the single run alone keeping \d+\.\d\d cores busy/);
    // A crash is a FAIL with its reason, never a crashed bench; none is expected here.
    expect(r.stdout).not.toContain('crashed:');

    // DuckDB, when it loads, must find exactly the accepted stale writes stalewrite reports.
    if (/DuckDB v\d/.test(r.stdout)) {
      expect(r.stdout).toContain('| 7 DuckDB headline query (read_json + window) |');
      const checks = r.stdout.split('\n').filter((l) => l.startsWith('DuckDB check: '));
      expect(checks.length).toBeGreaterThanOrEqual(1);
      for (const c of checks) {
        const m = /DuckDB (\d+), stalewrite (\d+) .*: match$/.exec(c);
        expect(m, c).not.toBeNull();
        expect(m![1]).toBe(m![2]);
      }
      expect(checks.some((c) => !/DuckDB 0,/.test(c)), 'the check file has incidents').toBe(true);
      expect(targets.find((l) => l.includes("sanity: DuckDB's count"))).toMatch(/^PASS /);
      expect(targets.find((l) => l.slice(5).startsWith('default run vs DuckDB'))).toMatch(/^(PASS|FAIL) /);
    }
  }, 130_000);
});
