/**
 * The article's incident on real systems: etcd + PostgreSQL from Debian's packages, two Node
 * workers, a SIGSTOP past the lease's TTL. The ground truth is the database's final row; the
 * analyzer's verdict on the workers' own logs must agree with it, in both modes.
 *
 * Each run is its own process group (test/helpers/reproduction.ts): a run that takes too long, or
 * a test that vitest times out, has the whole group killed — the harness, etcd, PostgreSQL and
 * the workers — and its throwaway directory removed.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/run.js';
import { killRuns, leftovers, PG_BIN, runReproduction } from './helpers/reproduction.js';

const haveServices = existsSync('/usr/bin/etcd') && PG_BIN !== undefined;
if (!haveServices && process.env.CI) throw new Error('etcd-server and postgresql are missing: .ci/run installs them');

/** A run's whole budget; the test's own timeout is longer, so this is what ends a stuck run. */
const RUN_MS = 100_000;

interface Result {
  mode: string;
  tokens: { a: string; b: string };
  database: { value: string; fenceToken: string };
  stalewrite: { exitCode: number; verdict: string; readiness: string; errors: string[]; findings: string[] };
  marked: string[];
}

afterEach(killRuns);

/** A run, and then nothing it started is still running (by its process group, and by its marker). */
async function run(mode: 'safe' | 'unsafe'): Promise<Result> {
  const out = join(ROOT, 'examples', 'etcd-postgres', 'out', `test-${mode}`);
  const r = await runReproduction<Result>(join(ROOT, 'examples', 'etcd-postgres', 'run.mjs'), ['--mode', mode, '--out', out], RUN_MS);
  // While A was paused, the marker found etcd, the postmaster and A itself: the check below would see them.
  expect(r.result.marked).toEqual(expect.arrayContaining(['etcd', 'postgres', 'worker.mjs']));
  expect(await leftovers(r.run)).toBe('');
  return r.result;
}

/**
 * The workers' own logs of a run, read with the mapping `map --suggest` drafts from them, unedited
 * (it asks for no edit on these logs): the findings a user gets without writing a mapping.
 */
async function withSuggestedMapping(mode: 'safe' | 'unsafe') {
  const out = join(ROOT, 'examples', 'etcd-postgres', 'out', `test-${mode}`);
  const logs = ['worker-a.log', 'worker-b.log'].map((f) => join(out, f));
  const s = await runCli(['map', '--suggest', ...logs]);
  expect(s.code, s.stderr).toBe(0);
  expect(s.stderr).not.toMatch(/stalewrite: \?/); // no open question
  const mapping = join(out, 'suggested-mapping.json');
  writeFileSync(mapping, s.stdout);
  const a = await runCli(['analyze', '-f', 'json', '--mapping', mapping, ...logs]);
  const report = JSON.parse(a.stdout) as { findings: { rule: string; severity: string }[]; resources: { resource: string; readiness: string }[] };
  return { code: a.code, errors: report.findings.filter((f) => f.severity === 'error').map((f) => f.rule), readiness: report.resources.find((r) => r.resource === 'invoices/7')?.readiness };
}

describe.skipIf(!haveServices)('etcd + PostgreSQL reproduction', () => {
  it('unsafe: A\'s late write overwrote B\'s in the database, and stalewrite finds the accepted stale write (also with the suggested mapping)', async () => {
    const r = await run('unsafe');
    expect(BigInt(r.tokens.b)).toBeGreaterThan(BigInt(r.tokens.a));
    expect(r.database.value).toBe('A'); // ground truth: the stale value survived
    expect(r.stalewrite.errors).toContain('accepted-stale-write');
    expect(r.stalewrite.readiness).toBe('violated');
    expect(r.stalewrite.exitCode).toBe(1);
    const suggested = await withSuggestedMapping('unsafe');
    expect(suggested.errors).toContain('accepted-stale-write');
    expect(suggested.readiness).toBe('violated');
    expect(suggested.code).toBe(1);
  }, 120_000);

  it('safe: the conditional UPDATE kept B\'s value, and stalewrite says verified with no error (also with the suggested mapping)', async () => {
    const r = await run('safe');
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b }); // ground truth: B's write stands
    expect(r.stalewrite.errors).toEqual([]);
    expect(r.stalewrite.readiness).toBe('verified');
    expect(r.stalewrite.verdict).toBe('verified');
    expect(r.stalewrite.exitCode).toBe(0);
    const suggested = await withSuggestedMapping('safe');
    expect(suggested.errors).toEqual([]);
    expect(suggested.readiness).toBe('verified');
  }, 120_000);
});
