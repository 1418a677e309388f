/**
 * Redis locks on real systems: Redis 7 + PostgreSQL from Debian's packages, two Node workers
 * (ioredis), a keyspace-notification subscriber, a SIGSTOP past the lock's TTL. The ground truth
 * is the database's final row and, for the release modes, the lock key right after the old
 * handle's release; the analyzer's verdict on the three logs must agree with it.
 *
 * Each run is its own process group (test/helpers/reproduction.ts): a run that takes too long, or
 * a test that vitest times out, has the whole group killed — the harness, redis-server,
 * PostgreSQL, the subscriber and the workers — and its throwaway directory removed.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/run.js';
import { killRuns, leftovers, PG_BIN, runReproduction } from './helpers/reproduction.js';

const haveServices = existsSync('/usr/bin/redis-server') && PG_BIN !== undefined;
if (!haveServices && process.env.CI) throw new Error('redis-server and postgresql are missing: .ci/run installs them');

const EXAMPLE = join(ROOT, 'examples', 'redis-postgres');
/** A run's whole budget; the test's own timeout is longer, so this is what ends a stuck run. */
const RUN_MS = 90_000;
const SERVICE_NAMES = /redis|etcd|zookeeper|consul|kubernetes/i;

interface Result {
  mode: string;
  lockValues: { a: string; b: string };
  tokens: { a: string; b: string };
  database: { value: string; fenceToken: string };
  redis: { keyAfterOldRelease?: string | null; keyAtEnd: string | null; expiryLagMs: number | null };
  stalewrite: { exitCode: number; verdict: string; readiness: string; errors: string[]; findings: string[]; messages: string[] };
  marked: string[];
  seconds: number;
  out: string;
}

afterEach(killRuns);

/** A run, and then nothing it started is still running (by its process group, and by its marker). */
async function run(mode: string, extra: string[] = []): Promise<Result> {
  const out = join(EXAMPLE, 'out', `test-${mode}${extra.length > 0 ? '-lazy' : ''}`);
  const r = await runReproduction<Result>(join(EXAMPLE, 'run.mjs'), ['--mode', mode, '--out', out, ...extra], RUN_MS);
  // While A was paused, the marker found redis-server, the postmaster, the subscriber and A itself: the check below would see them.
  expect(r.result.marked).toEqual(expect.arrayContaining(['postgres', 'redis-server', 'subscriber.mjs', 'worker.mjs']));
  expect(await leftovers(r.run)).toBe('');
  return r.result;
}

const rules = (r: Result) => r.stalewrite.findings.map((f) => f.split(' ')[0]);

/** The run's logs analysed with the committed mapping minus its `service`: the generic messages. */
async function withoutService(r: Result) {
  const spec = JSON.parse(readFileSync(join(EXAMPLE, 'mapping.json'), 'utf8')) as Record<string, unknown>;
  delete spec.service;
  const mapping = join(r.out, 'mapping-without-service.json');
  writeFileSync(mapping, JSON.stringify(spec));
  const a = await runCli(['analyze', '-f', 'json', '--mapping', mapping, ...['worker-a.log', 'worker-b.log', 'keyspace.log'].map((f) => join(r.out, f))]);
  return JSON.parse(a.stdout) as { findings: { rule: string; messageId: string; message: string }[]; input: { files: { service?: string }[] } };
}

describe.skipIf(!haveServices)('Redis + PostgreSQL reproduction', () => {
  it('random value, no token: A\'s late plain UPDATE stands; missing-token says the Redis lock value is no fencing token, and write-after-lease-end', async () => {
    const r = await run('random');
    expect(r.tokens).toEqual({ a: '-', b: '-' });
    expect(r.database.value).toBe('A'); // ground truth: the late write overwrote B's
    expect(r.stalewrite.errors).toContain('missing-token');
    expect(rules(r)).toContain('write-after-lease-end');
    expect(r.stalewrite.readiness).toBe('violated');
    expect(r.stalewrite.exitCode).toBe(1);
    const missing = r.stalewrite.messages.filter((m) => m.includes('without a fencing token'));
    expect(missing).toHaveLength(2);
    for (const m of missing) expect(m).toContain('a Redis lock value is random and can only be compared for equality; it is not a fencing token');
    // The subscriber logged A's key's expiry (its second view of the lease end).
    expect(r.redis.expiryLagMs).not.toBeNull();
    // Without the mapping's "service", the same findings, and no message names a service.
    const generic = await withoutService(r);
    expect(generic.findings.map((f) => f.rule).sort()).toEqual(rules(r).sort());
    expect(generic.input.files.every((f) => f.service === undefined)).toBe(true);
    expect(generic.findings.filter((f) => f.rule === 'missing-token').map((f) => f.messageId)).toEqual(['missing-token/noToken', 'missing-token/noToken']);
    for (const f of generic.findings) expect(f.message).not.toMatch(SERVICE_NAMES);
  }, 120_000);

  it('unsafe release: A\'s plain DEL removed B\'s lock (the key is gone), and stalewrite finds the stale release', async () => {
    const r = await run('unsafe-release');
    expect(BigInt(r.tokens.b)).toBeGreaterThan(BigInt(r.tokens.a));
    expect(r.redis.keyAfterOldRelease).toBeNull(); // ground truth: B still worked, its lock was gone
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b });
    expect(r.stalewrite.errors).toEqual(['stale-release']);
    expect(r.stalewrite.findings).toContain('stale-release (error, likely)');
    expect(r.stalewrite.messages.find((m) => m.startsWith('a release from worker-a'))).toContain('a plain Redis DEL removes the key whoever holds it');
    expect(r.stalewrite.readiness).toBe('violated');
    expect(r.stalewrite.exitCode).toBe(1);
    const generic = await withoutService(r);
    expect(generic.findings.find((f) => f.rule === 'stale-release')?.messageId).toBe('stale-release/oldHandleReleased');
    for (const f of generic.findings) expect(f.message).not.toMatch(SERVICE_NAMES);
  }, 120_000);

  it('safe release: A\'s compare-and-delete deleted nothing (B still held the key), the release is rejected and nothing is found about it', async () => {
    const r = await run('safe-release');
    expect(r.redis.keyAfterOldRelease).toBe('worker-b'); // ground truth: B's lock survived A's release
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b });
    // A's release, in node-redlock's own words, read as a rejected release.
    expect(readFileSync(join(r.out, 'worker-a.log'), 'utf8')).toContain('"msg":"Unable to fully release the lock on resource \\"invoices/7\\"."');
    // No error, no finding about the release: the one warning is A's pause itself (it acted again, by releasing, after its TTL).
    expect(r.stalewrite.findings).toEqual(['keepalive-gap (warning, definite)']);
    expect(r.stalewrite.readiness).toBe('verified');
    expect(r.stalewrite.verdict).toBe('verified');
    expect(r.stalewrite.exitCode).toBe(0);
  }, 120_000);

  it('fenced: the INCR token taken with the lock and the conditional UPDATE keep B\'s row; verified, exit 0', async () => {
    const r = await run('fenced');
    expect(BigInt(r.tokens.b)).toBeGreaterThan(BigInt(r.tokens.a));
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b }); // ground truth: A's late write matched no row
    expect(readFileSync(join(r.out, 'worker-a.log'), 'utf8')).toMatch(/"rowCount":0,.*"step":"write"/);
    expect(r.stalewrite.errors).toEqual([]);
    expect(r.stalewrite.readiness).toBe('verified');
    expect(r.stalewrite.verdict).toBe('verified');
    expect(r.stalewrite.exitCode).toBe(0);
  }, 120_000);

  it('a late expiry (active expiry off: Redis deletes A\'s key when B\'s SET touches it) ends A\'s lease, not B\'s: the stale release is still found', async () => {
    const r = await run('unsafe-release', ['--lazy-expire']);
    // The notification came with B's grant, seconds after A's TTL ran out.
    expect(r.redis.expiryLagMs).toBeGreaterThan(1000);
    expect(r.redis.keyAfterOldRelease).toBeNull();
    expect(r.stalewrite.errors).toEqual(['stale-release']);
    expect(rules(r)).not.toContain('write-after-lease-end');
    expect(r.stalewrite.exitCode).toBe(1);
  }, 120_000);
});
