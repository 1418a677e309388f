#!/usr/bin/env node
// A worker that takes a Redis lock and writes to PostgreSQL, logging every step through pino
// with its own field names (step, outcome, key, worker, lockValue, fence, ttlMs, rowCount).
//
//   node worker.mjs --name worker-a --mode random|unsafe-release|safe-release|fenced \
//                   --redis 127.0.0.1:6379 --pg postgres://… --key invoices/7 --value A \
//                   --ttl 1500 --log worker-a.log [--no-write] [--wait-before-release] --run MARKER
//
// The lock is `SET key <random value> NX PX ttl`. Modes:
// - random: that SET alone (Redlock style): the random value is no fencing token, and the write
//   is a plain UPDATE that carries none;
// - fenced, unsafe-release, safe-release: the SET and an INCR of a counter in one Lua script
//   (atomic: a token is taken exactly when the lock is), and the write is the conditional
//   `UPDATE … WHERE fence_token < $token`;
// - the release: `DEL key` in unsafe-release; elsewhere compare-and-delete in a Lua script, the
//   script node-redlock 4 runs, whose refusal this worker logs with node-redlock's own text
//   (`Unable to fully release the lock on resource "…".`).
// Prints "LOCKED <value> <token|->" on stdout once it holds the lock (the harness pauses it then),
// "WROTE <rowCount>" after the write, "HOLDING" when it waits (--wait-before-release: for a line
// on stdin), "DONE" at the end. --run is the run's marker (its directory's name): unused here, it marks the process as the run's.
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import pg from 'pg';
import { Redis } from 'ioredis';

export const MODES = ['random', 'unsafe-release', 'safe-release', 'fenced'];

const { values: args } = parseArgs({
  options: {
    name: { type: 'string' },
    mode: { type: 'string' },
    redis: { type: 'string' },
    pg: { type: 'string' },
    key: { type: 'string' },
    value: { type: 'string' },
    ttl: { type: 'string', default: '1500' },
    log: { type: 'string' },
    run: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    'wait-before-release': { type: 'boolean', default: false },
    'compute-ms': { type: 'string', default: '200' },
    'acquire-timeout-ms': { type: 'string', default: '20000' },
  },
});
for (const k of ['name', 'mode', 'redis', 'pg', 'key', 'value', 'log']) if (!args[k]) throw new Error(`--${k} is required`);
if (!MODES.includes(args.mode)) throw new Error(`--mode is one of ${MODES.join(', ')}`);

const log = pino({ base: { pid: process.pid, hostname: args.name } }, pino.destination({ dest: args.log, sync: true }));
const ttlMs = Number(args.ttl);
const key = args.key;
const counter = `${key}:fence`;
const fenced = args.mode !== 'random';
const ctx = { worker: args.name, key };

// Take the lock and a token in one step: INCR runs only when the SET did.
const ACQUIRE_FENCED = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) else return false end";
// Compare-and-delete: remove the key only while it still holds our value (node-redlock 4's unlock script).
const RELEASE_OWN = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

const [host, port] = args.redis.split(':');
const redis = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1, enableOfflineQueue: true });
const db = new pg.Client({ connectionString: args.pg });
await db.connect();

// 1. The lock: a random value (what Redlock uses), the key set only if absent, with a TTL.
const lockValue = randomBytes(16).toString('hex');
let fence;
const deadline = Date.now() + Number(args['acquire-timeout-ms']);
for (;;) {
  const got = fenced ? await redis.eval(ACQUIRE_FENCED, 2, key, counter, lockValue, String(ttlMs)) : await redis.set(key, lockValue, 'PX', ttlMs, 'NX');
  if (fenced ? got !== null : got === 'OK') {
    if (fenced) fence = String(got);
    break;
  }
  log.info({ ...ctx, lockValue, step: 'acquire', outcome: 'busy' }, 'lock busy');
  if (Date.now() > deadline) throw new Error('could not acquire the lock in time');
  await sleep(100);
}
log.info({ ...ctx, lockValue, ...(fenced ? { fence } : {}), ttlMs, step: 'acquire', outcome: 'granted' }, 'lock acquired');
process.stdout.write(`LOCKED ${lockValue} ${fence ?? '-'}\n`);

// 2. "Compute" (the harness may pause the whole process here, past the lock's TTL).
await sleep(Number(args['compute-ms']));

// 3. The write. Random: a plain UPDATE (nothing to fence with). Fenced: only a newer token wins.
if (!args['no-write']) {
  const sql = fenced
    ? { text: 'UPDATE resources SET value = $1, fence_token = $2 WHERE id = $3 AND fence_token < $2', values: [args.value, fence, key] }
    : { text: 'UPDATE resources SET value = $1 WHERE id = $2', values: [args.value, key] };
  const started = Date.now();
  const { rowCount } = await db.query(sql);
  log.info({ ...ctx, lockValue, ...(fenced ? { fence } : {}), value: args.value, rowCount, latencyMs: Date.now() - started, step: 'write' }, rowCount === 0 ? 'write refused: stale fence' : 'write applied');
  process.stdout.write(`WROTE ${rowCount}\n`);
}

// 4. Hold the lock until the harness says (so that an old handle can be seen releasing it).
if (args['wait-before-release']) {
  process.stdout.write('HOLDING\n');
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.close();
}

// 5. The release.
if (args.mode === 'unsafe-release') {
  // A plain DEL removes the key whoever holds it now.
  const deleted = await redis.del(key);
  log.info({ ...ctx, lockValue, fence, deleted, step: 'release', outcome: deleted === 1 ? 'released' : 'rejected' }, deleted === 1 ? 'lock released (DEL)' : 'release: no key to delete');
} else {
  const deleted = await redis.eval(RELEASE_OWN, 1, key, lockValue);
  if (deleted === 1) log.info({ ...ctx, lockValue, ...(fenced ? { fence } : {}), step: 'release', outcome: 'released' }, 'lock released');
  // node-redlock 4 rejects unlock() with this LockError when the script deleted nothing.
  else log.warn({ ...ctx, lockValue, ...(fenced ? { fence } : {}), step: 'release' }, `Unable to fully release the lock on resource "${key}".`);
}

await db.end();
redis.disconnect();
process.stdout.write('DONE\n');
