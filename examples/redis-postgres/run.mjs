#!/usr/bin/env node
// Redis locks on real systems: Redis 7 (the lock service) + PostgreSQL 15 (the resource), both
// from Debian's packages, on loopback, in throwaway directories.
//
//   node examples/redis-postgres/run.mjs --mode random|unsafe-release|safe-release|fenced
//                                        [--out DIR] [--keep] [--pause MS] [--lazy-expire]
//
// 1. start redis-server (keyspace notifications for expiries on) and PostgreSQL; create the row;
//    start the subscriber that logs Redis's `expired` messages;
// 2. worker A takes the lock (`SET key value NX PX 1500`) and says LOCKED; the harness pauses it
//    at once with SIGSTOP, for well past its TTL, so Redis expires A's key;
// 3. worker B takes the lock (TTL 10 s) and writes; in the release modes it then holds the lock
//    while A releases;
// 4. the harness resumes A (SIGCONT): A writes (random, fenced) and releases;
// 5. the harness reads the final row and the lock key (the ground truth), stops everything, and
//    analyses the three logs (A, B, the subscriber) with stalewrite and the committed mapping.json.
// Prints one JSON line with the ground truth and stalewrite's verdict. Always cleans up.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Redis } from 'ioredis';
import { analyseLogs, exited, freePorts, lineFrom, markedProcesses, PG_BIN, startPostgres, startRun, until } from '../lib/harness.mjs';

const MODES = ['random', 'unsafe-release', 'safe-release', 'fenced'];
const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    mode: { type: 'string', default: 'random' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    pause: { type: 'string', default: '4000' },
    'lazy-expire': { type: 'boolean', default: false },
  },
});
if (!MODES.includes(args.mode)) throw new Error(`--mode is one of ${MODES.join(', ')}`);
const out = args.out ?? join(here, 'out', args.mode);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const REDIS = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p));
if (PG_BIN === undefined || REDIS === undefined) {
  console.error('needs Debian packages redis-server and postgresql (apt-get install redis-server postgresql)');
  process.exit(3);
}

const TTL_A = 1500;
const TTL_B = 10000;
const releaseMode = args.mode === 'unsafe-release' || args.mode === 'safe-release';
const started = Date.now();
// Every child runs in this process's group (none detached): killing the group ends them all.
// Every process of the run names the run's marker in its arguments (the test looks for leftovers by it).
const { children, work, marker, log, cleanup } = startRun('stalewrite-redis-pg-', args);

let result;
try {
  // Redis on loopback, ports free at run time, a throwaway dir, no persistence; expiry notifications on.
  const [redisPort, pgPort] = await freePorts(2);
  const redisAddr = `127.0.0.1:${redisPort}`;
  const redisDir = join(work, 'redis');
  mkdirSync(redisDir);
  const server = children.start(REDIS, [
    '--port', String(redisPort), '--bind', '127.0.0.1', '--dir', redisDir, '--save', '', '--appendonly', 'no',
    '--notify-keyspace-events', 'Ex', '--daemonize', 'no', '--loglevel', 'warning',
    // Keep the command line (with the run's directory) as the process title, for the leftover check.
    '--set-proc-title', 'no',
    ...(args['lazy-expire'] ? ['--enable-debug-command', 'local'] : []),
  ]);
  server.stdout.resume();
  server.stderr.resume();
  const admin = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true, retryStrategy: () => 100 });
  admin.on('error', () => undefined); // refused until the server listens: `until` retries
  await until('redis', async () => {
    if (admin.status !== 'ready') await admin.connect().catch(() => undefined);
    return (await admin.ping()) === 'PONG';
  }, 15000);
  // --lazy-expire: no active expiry cycle; a key is removed (and `expired` sent) only when a
  // command touches it, here B's SET: the notification then comes with B's grant, seconds after A's TTL.
  if (args['lazy-expire']) await admin.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0');
  log(`redis ready on ${redisAddr}`);

  const postgres = await startPostgres(children, work, pgPort);
  log(`postgres ready on port ${pgPort}`);

  const key = 'invoices/7';
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  await db.query('CREATE TABLE resources (id text PRIMARY KEY, value text NOT NULL, fence_token bigint NOT NULL DEFAULT 0)');
  await db.query("INSERT INTO resources (id, value) VALUES ($1, 'initial')", [key]);

  const subscriber = children.start(process.execPath, [join(here, 'subscriber.mjs'), '--redis', redisAddr, '--log', join(out, 'keyspace.log'), '--run', marker]);
  subscriber.stderr.setEncoding('utf8').on('data', (d) => log(`subscriber: ${d.trim()}`));
  await lineFrom(subscriber, 'READY', 15000);

  const worker = (name, value, ttl, extra = []) => {
    const argv = [join(here, 'worker.mjs'), '--name', name, '--mode', args.mode, '--redis', redisAddr, '--pg', postgres.url, '--key', key, '--value', value, '--ttl', String(ttl), '--log', join(out, `${name}.log`), '--run', marker, ...extra];
    const child = children.start(process.execPath, argv, extra.includes('--wait-before-release') ? { stdio: ['pipe', 'pipe', 'pipe'] } : {});
    child.stderr.setEncoding('utf8').on('data', (d) => log(`${name}: ${d.trim()}`));
    return child;
  };

  // A takes the lock, then is frozen right after it says so; Redis expires its key meanwhile.
  // In the release modes A's work was done before the pause: after it, A only releases.
  const a = worker('worker-a', 'A', TTL_A, releaseMode ? ['--no-write'] : []);
  const [, valueA, tokenA] = await lineFrom(a, 'LOCKED (\\S+) (\\S+)', 20000);
  a.kill('SIGSTOP');
  // What a leftover check by the marker finds of the run now: the servers, the subscriber and the paused worker.
  const marked = markedProcesses(marker);
  log(`worker-a holds the lock (value ${valueA}, token ${tokenA}); paused for ${args.pause} ms (TTL ${TTL_A} ms)`);
  await sleep(Number(args.pause));

  // B acquires once Redis has removed A's key (it retries while busy) and writes.
  const b = worker('worker-b', 'B', TTL_B, releaseMode ? ['--wait-before-release'] : []);
  const [, valueB, tokenB] = await lineFrom(b, 'LOCKED (\\S+) (\\S+)', 20000);
  await lineFrom(b, 'WROTE', 20000);
  let keyAfterOldRelease;
  if (releaseMode) {
    // B holds the lock while A wakes up a second later and releases with its old value.
    await lineFrom(b, 'HOLDING', 10000);
    await sleep(1000);
    a.kill('SIGCONT');
    if ((await exited(a, 20000)) !== 0) throw new Error('worker-a failed');
    // Ground truth: is B's lock still there after A's release?
    const v = await admin.get(key);
    keyAfterOldRelease = v === null ? null : v === valueB ? 'worker-b' : v === valueA ? 'worker-a' : 'other';
    log(`after worker-a's release the lock key holds ${keyAfterOldRelease ?? 'nothing'}`);
    b.stdin.end('release\n');
    if ((await exited(b, 10000)) !== 0) throw new Error('worker-b failed');
  } else {
    if ((await exited(b, 10000)) !== 0) throw new Error('worker-b failed');
    // A wakes up a moment after B finished and does its late write with its old lock.
    await sleep(500);
    a.kill('SIGCONT');
    if ((await exited(a, 20000)) !== 0) throw new Error('worker-a failed');
  }
  log(`worker-b held the lock with value ${valueB}, token ${tokenB}`);
  const { rows } = await db.query('SELECT value, fence_token FROM resources WHERE id = $1', [key]);
  await db.end();
  const keyAtEnd = await admin.get(key);
  admin.disconnect();
  // Let the subscriber log what is still on its way, then stop it and the servers.
  await sleep(200);
  await children.stop(subscriber);
  await children.stop(server);
  await postgres.stop();

  // Analyse the logs, as a user would, with the committed mapping.
  const files = ['worker-a.log', 'worker-b.log', 'keyspace.log'].map((f) => join(out, f));
  const { report, stalewrite } = analyseLogs(files, ['--mapping', join(here, 'mapping.json')], out, key);
  result = {
    mode: args.mode,
    lazyExpire: args['lazy-expire'],
    lockValues: { a: valueA, b: valueB },
    tokens: { a: tokenA, b: tokenB },
    database: { value: rows[0].value, fenceToken: String(rows[0].fence_token) },
    redis: { keyAfterOldRelease, keyAtEnd, expiryLagMs: expiryLag(join(out, 'worker-a.log'), join(out, 'keyspace.log'), key) },
    stalewrite: { ...stalewrite, messages: report.findings.map((f) => f.message) },
    marked,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    out,
  };
} finally {
  cleanup();
}
process.stdout.write(JSON.stringify(result) + '\n');

/** How long after A's TTL ran out (by A's own acquire line) the subscriber logged the key's `expired`. */
function expiryLag(workerLog, keyspaceLog, key) {
  const lines = (f) => readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const grant = lines(workerLog).find((r) => r.step === 'acquire' && r.outcome === 'granted');
  const expired = lines(keyspaceLog).find((r) => r.key === key && r.time >= grant.time);
  return expired === undefined ? null : expired.time - (grant.time + grant.ttlMs);
}
