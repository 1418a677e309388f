/**
 * `--jobs N` (README "Scaling out"): the partitions on worker threads of one run, merged in
 * memory, give the report of one thread byte for byte; live ndjson keeps streaming; auto stays on
 * one thread below its size; what jobs cannot do is refused clearly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import type { Finding } from '../src/model/report.js';
import { autoJobs, JOBS_MIN_BYTES } from '../src/partition/jobs.js';
import { renderJson } from '../src/report/json.js';
import { FIXTURES, runCli } from './helpers/run.js';

const mixed = join(FIXTURES, 'mixed-incidents.ndjson');

describe('--jobs', () => {
  it('gives the report of one thread, byte for byte', async () => {
    const sets = [[mixed], [join(FIXTURES, 'invalid-lines.ndjson'), mixed], [join(FIXTURES, 'rule-clock-went-backwards.ndjson')], [join(FIXTURES, 'views.ndjson')]];
    for (const files of sets) {
      const one = renderJson(await analyze({ files, jobs: 1 }));
      for (const jobs of [2, 3]) expect(renderJson(await analyze({ files, jobs })), `${files.join(' ')} --jobs ${jobs}`).toBe(one);
      const html = { files, timelines: { all: true } };
      expect(renderJson(await analyze({ ...html, jobs: 2 }))).toBe(renderJson(await analyze({ ...html, jobs: 1 })));
    }
  }, 60_000);

  it('in the CLI, every format; live ndjson streams each finding as its partition has it', async () => {
    for (const f of ['json', 'markdown', 'junit', 'table']) {
      const one = await runCli(['analyze', '-q', '-f', f, '--jobs', '1', mixed]);
      const two = await runCli(['analyze', '-q', '-f', f, '--jobs', '2', mixed]);
      expect(two.stdout, f).toBe(one.stdout);
      expect(two.code).toBe(one.code);
    }
    const one = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '1', mixed]);
    const two = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '2', mixed]);
    const lines = (t: string) => t.trim().split('\n');
    // The same finding lines (in the order their partitions had them), the same summary line last.
    expect(lines(two.stdout).slice(0, -1).sort()).toEqual(lines(one.stdout).slice(0, -1).sort());
    expect(lines(two.stdout).at(-1)).toBe(lines(one.stdout).at(-1));
    expect(two.code).toBe(one.code);
    const live: Finding[] = [];
    const report = await analyze({ files: [mixed], jobs: 3, onFinding: (f) => live.push(f) });
    expect(live.map((f) => f.id).sort()).toEqual(report.findings.map((f) => f.id).sort());
  }, 60_000);

  it('analyses again on one thread when the merge is not exactly one run (input out of order)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-jobs-'));
    try {
      // An invalid line far ahead in time in one input, read by the key reader: the witness flags it.
      const a = join(dir, 'a.ndjson');
      const b = join(dir, 'b.ndjson');
      const ev = (ts: string, resource: string, extra = '') => `{"ts":"2026-03-01T10:00:${ts}Z","type":"acquire","resource":"${resource}","ownerId":"w","leaseId":"l-${resource}","fenceToken":"1"${extra}}`;
      writeFileSync(a, [ev('01', 'r1'), '{"ts":"2026-03-01T10:00:59Z","type":"grab","resource":"r2"}', ev('02', 'r1'), ev('03', 'r3')].join('\n') + '\n');
      writeFileSync(b, [ev('30', 'r4'), ev('31', 'r5')].join('\n') + '\n');
      const files = [a, b];
      const parts = [];
      for (let i = 0; i < 2; i++) parts.push(await analyze({ files, partition: { index: i, count: 2 } }));
      expect(parts.some((p) => p.partition!.inexact.length > 0)).toBe(true);
      const one = renderJson(await analyze({ files, jobs: 1 }));
      expect(renderJson(await analyze({ files, jobs: 2 }))).toBe(one);
      expect(JSON.parse(one).partitions).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('auto uses every core (at most 8) from JOBS_MIN_BYTES on and from 3 cores on, one thread otherwise', () => {
    expect(autoJobs(JOBS_MIN_BYTES - 1, 16)).toBe(1);
    expect(autoJobs(JOBS_MIN_BYTES, 2)).toBe(1);
    expect(autoJobs(JOBS_MIN_BYTES, 3)).toBe(3);
    expect(autoJobs(JOBS_MIN_BYTES, 16)).toBe(8);
    expect(autoJobs(JOBS_MIN_BYTES)).toBe(availableParallelism() >= 3 ? Math.min(8, availableParallelism()) : 1);
  });

  it('says what it cannot run on jobs, and that --workers was replaced', async () => {
    await expect(analyze({ files: ['-'], jobs: 2 })).rejects.toThrow(/stdin/);
    await expect(analyze({ files: [mixed], jobs: 2, strict: true })).rejects.toThrow(/strict and maxInvalid/);
    await expect(analyze({ files: [mixed], jobs: 0 })).rejects.toThrow(/jobs must be/);
    expect((await runCli(['analyze', '--jobs', '2', '-'], { stdin: readFileSync(mixed) })).stderr).toMatch(/stdin/);
    expect((await runCli(['analyze', '--jobs', 'many', mixed])).stderr).toMatch(/--jobs "many" is not auto or a whole number/);
    const w = await runCli(['analyze', '--workers', 'on', mixed]);
    expect(w.code).toBe(2);
    expect(w.stderr).toMatch(/--workers was replaced by --jobs/);
    // A missing file: the same one line as on one thread.
    const missing = await runCli(['analyze', '--jobs', '2', join(FIXTURES, 'no-such.ndjson')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^stalewrite: cannot read .*no-such\.ndjson/);
  }, 60_000);
});
