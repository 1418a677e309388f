/**
 * The article's incident on real systems: etcd + PostgreSQL from Debian's packages, two Node
 * workers, a SIGSTOP past the lease's TTL. The ground truth is the database's final row; the
 * analyzer's verdict on the workers' own logs must agree with it, in both modes.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/run.js';

const haveServices = existsSync('/usr/bin/etcd') && ['15', '16', '17'].some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`));
if (!haveServices && process.env.CI) throw new Error('etcd-server and postgresql are missing: .ci/run installs them');

interface Result {
  mode: string;
  tokens: { a: string; b: string };
  database: { value: string; fenceToken: string };
  stalewrite: { exitCode: number; verdict: string; readiness: string; errors: string[]; findings: string[] };
}

function run(mode: 'safe' | 'unsafe'): Result {
  const out = join(ROOT, 'examples', 'etcd-postgres', 'out', `test-${mode}`);
  const r = spawnSync(process.execPath, [join(ROOT, 'examples', 'etcd-postgres', 'run.mjs'), '--mode', mode, '--out', out], { encoding: 'utf8', timeout: 110_000 });
  if (r.status !== 0) throw new Error(`run.mjs --mode ${mode} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Result;
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

function leftovers(): string {
  return spawnSync('pgrep', ['-af', 'stalewrite-etcd-pg-'], { encoding: 'utf8' }).stdout.trim();
}

describe.skipIf(!haveServices)('etcd + PostgreSQL reproduction', () => {
  it('unsafe: A\'s late write overwrote B\'s in the database, and stalewrite finds the accepted stale write (also with the suggested mapping)', async () => {
    const r = run('unsafe');
    expect(BigInt(r.tokens.b)).toBeGreaterThan(BigInt(r.tokens.a));
    expect(r.database.value).toBe('A'); // ground truth: the stale value survived
    expect(r.stalewrite.errors).toContain('accepted-stale-write');
    expect(r.stalewrite.readiness).toBe('violated');
    expect(r.stalewrite.exitCode).toBe(1);
    expect(leftovers()).toBe('');
    const suggested = await withSuggestedMapping('unsafe');
    expect(suggested.errors).toContain('accepted-stale-write');
    expect(suggested.readiness).toBe('violated');
    expect(suggested.code).toBe(1);
  }, 120_000);

  it('safe: the conditional UPDATE kept B\'s value, and stalewrite says verified with no error (also with the suggested mapping)', async () => {
    const r = run('safe');
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b }); // ground truth: B's write stands
    expect(r.stalewrite.errors).toEqual([]);
    expect(r.stalewrite.readiness).toBe('verified');
    expect(r.stalewrite.verdict).toBe('verified');
    expect(r.stalewrite.exitCode).toBe(0);
    expect(leftovers()).toBe('');
    const suggested = await withSuggestedMapping('safe');
    expect(suggested.errors).toEqual([]);
    expect(suggested.readiness).toBe('verified');
  }, 120_000);
});
