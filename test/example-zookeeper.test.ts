/**
 * The article's incident on real systems: ZooKeeper 3.8 + PostgreSQL from Debian's packages, two
 * Node workers taking the lock recipe's ephemeral sequential node, a SIGSTOP past the session
 * timeout. The ground truth is the database's final row; the analyzer's verdict on the workers'
 * logs and the ZooKeeper server's own log must agree with it, in both modes, and A's lease end
 * must be the server's "Expiring session" line.
 *
 * Each run is its own process group (test/helpers/reproduction.ts): a run that takes too long,
 * or a test that vitest times out, has the whole group killed — the harness, ZooKeeper's JVM,
 * PostgreSQL and the workers — and its throwaway directory removed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/run.js';
import { killRuns, leftovers, PG_BIN, runReproduction } from './helpers/reproduction.js';

const JARS = ['zookeeper.jar', 'slf4j-api.jar', 'slf4j-log4j12.jar', 'log4j-1.2.jar'].map((j) => join('/usr/share/java', j));
const haveServices = JARS.every((j) => existsSync(j)) && existsSync('/usr/bin/java') && PG_BIN !== undefined;
if (!haveServices && process.env.CI) throw new Error('zookeeper and postgresql are missing: .ci/run installs them');

const EXAMPLE = join(ROOT, 'examples', 'zookeeper-postgres');
/** A run's whole budget; the test's own timeout is longer, so this is what ends a stuck run. */
const RUN_MS = 80_000;

interface Result {
  mode: string;
  tokens: { a: string; b: string };
  database: { value: string; fenceToken: string };
  stalewrite: { exitCode: number; verdict: string; readiness: string; errors: string[]; findings: string[]; reasons: string[]; input: { files: { file: string; events: number; invalid: number; sparse?: true }[] } };
  leaseEnd: { finding: string; role: string; file: string; line: number; observer: string; inferred: boolean; text: string } | null;
  timing: { pauseMs: number; totalMs: number };
  marked: string[];
}

afterEach(killRuns);

/**
 * A run, and then nothing it started is still running: by its process group (PostgreSQL's
 * backends rename themselves) and by its marker (ZooKeeper's JVM, the postmaster, the workers).
 */
async function run(mode: 'safe' | 'unsafe'): Promise<Result> {
  const out = join(EXAMPLE, 'out', `test-${mode}`);
  const r = await runReproduction<Result>(join(EXAMPLE, 'run.mjs'), ['--mode', mode, '--out', out], RUN_MS);
  // While A was paused, the marker found the JVM, the postmaster and A itself: the check below would see them.
  expect(r.result.marked).toEqual(expect.arrayContaining(['java', 'postgres', 'worker.mjs']));
  expect(await leftovers(r.run)).toBe('');
  return r.result;
}

/** The session id worker A logged (the client's 16 hex digits), in the server's spelling. */
function sessionOfA(mode: string): string {
  const first = JSON.parse(readFileSync(join(EXAMPLE, 'out', `test-${mode}`, 'worker-a.log'), 'utf8').split('\n')[0]!) as { session: string };
  expect(first.session).toMatch(/^[0-9a-f]{16}$/);
  return '0x' + BigInt('0x' + first.session).toString(16);
}

describe.skipIf(!haveServices)('ZooKeeper + PostgreSQL reproduction', () => {
  it("unsafe: A's late write overwrote B's in the database; stalewrite finds the accepted stale write, with A's lease end from the server's own log", async () => {
    const r = await run('unsafe');
    expect(BigInt(r.tokens.b)).toBeGreaterThan(BigInt(r.tokens.a)); // czxids
    expect(r.database.value).toBe('A'); // ground truth: the stale value survived
    expect(r.stalewrite.errors).toContain('accepted-stale-write');
    expect(r.stalewrite.readiness).toBe('violated');
    expect(r.stalewrite.exitCode).toBe(1);
    // A's lease ended where the authority said so: the ZooKeeper server's expiry of A's session.
    expect(r.leaseEnd).toMatchObject({ finding: 'accepted-stale-write', file: 'zookeeper.log', observer: 'authority', inferred: false });
    expect(r.leaseEnd!.text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000 \[SessionTracker\] INFO {2}org\.apache\.zookeeper\.server\.ZooKeeperServer - Expiring session 0x[0-9a-f]+, timeout of 800ms exceeded$/);
    expect(r.leaseEnd!.text).toContain(`Expiring session ${sessionOfA('unsafe')},`);
    expect(r.stalewrite.input.files.find((f) => f.file.endsWith('zookeeper.log'))).toMatchObject({ events: 1, invalid: 0, sparse: true });
    // The server's start-up chatter (most of the lines) raises no warning: its log is sparse.
    expect(r.stalewrite.reasons).not.toContain('mostly-unread');
  }, 100_000);

  it("safe: the conditional UPDATE kept B's value, and stalewrite says verified with no error", async () => {
    const r = await run('safe');
    expect(r.database).toEqual({ value: 'B', fenceToken: r.tokens.b }); // ground truth: B's write stands
    expect(r.stalewrite.errors).toEqual([]);
    expect(r.stalewrite.readiness).toBe('verified');
    expect(r.stalewrite.verdict).toBe('verified');
    expect(r.stalewrite.exitCode).toBe(0);
    // The server expired A's session here too, and the analysis read that line.
    const serverLog = readFileSync(join(EXAMPLE, 'out', 'test-safe', 'zookeeper.log'), 'utf8');
    expect(serverLog).toContain(`Expiring session ${sessionOfA('safe')}, timeout of 800ms exceeded`);
    expect(r.stalewrite.input.files.find((f) => f.file.endsWith('zookeeper.log'))).toMatchObject({ events: 1, invalid: 0, sparse: true });
    expect(r.stalewrite.reasons).not.toContain('unmatched-lease-ends');
    expect(r.stalewrite.reasons).not.toContain('mostly-unread');
  }, 100_000);

  it('profile auto recognises the server log, and map shows its expiry as a lease-scoped event', async () => {
    const log = join(EXAMPLE, 'out', 'test-safe', 'zookeeper.log');
    if (!existsSync(log)) return; // the safe run above failed: it says why
    const m = await runCli(['map', '--profile', 'auto', '-n', '1000', log]);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout).toContain('(auto: zookeeper)');
    expect(m.stdout).toMatch(/Expiring session (0x[0-9a-f]+), timeout of 800ms exceeded\n {2}-> \{"ts":"[^"]+","type":"expire","scope":"lease","leaseId":"0x[0-9a-f]+","result":"expired","observer":"authority"/);
  });
});
