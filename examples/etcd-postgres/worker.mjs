#!/usr/bin/env node
// A worker that takes an etcd lock and writes to PostgreSQL, logging every step through pino
// with its own field names. Modes: --mode unsafe (plain UPDATE) or safe (conditional on the token).
//
//   node worker.mjs --name worker-a --mode safe --etcd 127.0.0.1:2379 --pg postgres://… \
//                   --key invoices/7 --value A --ttl 2 --log worker-a.log --run MARKER
//
// It prints "LOCKED <token>" on stdout once it holds the lock (the harness pauses it then),
// "DONE" at the end. The fencing token is the lock key's create revision, read from the
// transaction that created the key (etcd3's Lock helper does not expose it).
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import pg from 'pg';
import { Etcd3 } from 'etcd3';

const { values: args } = parseArgs({
  options: {
    name: { type: 'string' },
    mode: { type: 'string' },
    etcd: { type: 'string' },
    pg: { type: 'string' },
    key: { type: 'string' },
    value: { type: 'string' },
    ttl: { type: 'string', default: '2' },
    log: { type: 'string' },
    // The run's marker (its directory's name): unused here, it marks the process as the run's (see run.mjs).
    run: { type: 'string' },
    'compute-ms': { type: 'string', default: '300' },
    'acquire-timeout-ms': { type: 'string', default: '20000' },
  },
});
for (const k of ['name', 'mode', 'etcd', 'pg', 'key', 'value', 'log']) if (!args[k]) throw new Error(`--${k} is required`);
if (args.mode !== 'safe' && args.mode !== 'unsafe') throw new Error('--mode is safe or unsafe');

const log = pino({ base: { pid: process.pid, hostname: args.name } }, pino.destination({ dest: args.log, sync: true }));
const ttlSeconds = Number(args.ttl);
const lockKey = `locks/${args.key}`;
const ctx = { worker: args.name, lockKey: args.key };

const etcd = new Etcd3({ hosts: `http://${args.etcd}` });
const db = new pg.Client({ connectionString: args.pg });
await db.connect();

// 1. Lease, then the lock key under it, created only if absent, in one transaction.
const lease = etcd.lease(ttlSeconds, { autoKeepAlive: true });
const leaseId = await lease.grant();
lease.on('keepaliveSucceeded', () => log.info({ ...ctx, lease: leaseId, step: 'keepalive', outcome: 'ok' }, 'keepalive ok'));
lease.on('keepaliveFailed', () => log.warn({ ...ctx, lease: leaseId, step: 'keepalive', outcome: 'failed' }, 'keepalive failed'));
let lost = false;
lease.on('lost', () => {
  // etcd3 has been seen to emit "lost" twice for one expiry: log it once.
  if (lost) return;
  lost = true;
  log.warn({ ...ctx, lease: leaseId, step: 'lease-lost' }, 'lease lost');
});

let revision;
const deadline = Date.now() + Number(args['acquire-timeout-ms']);
for (;;) {
  const txn = await etcd
    .if(lockKey, 'Create', '==', 0)
    .then(etcd.put(lockKey).value(args.name).lease(leaseId))
    .commit();
  if (txn.succeeded) {
    revision = txn.header.revision; // the key's create revision: our fencing token
    break;
  }
  log.info({ ...ctx, lease: leaseId, step: 'acquire', outcome: 'busy' }, 'lock busy');
  if (Date.now() > deadline) throw new Error('could not acquire the lock in time');
  await sleep(250);
}
// The TTL as etcd grants it, in seconds (the mapping's units.ttlMs says so).
log.info({ ...ctx, lease: leaseId, revision, ttl: ttlSeconds, step: 'acquire', outcome: 'granted' }, 'lock acquired');
process.stdout.write(`LOCKED ${revision}\n`);

// 2. "Compute" (the harness may pause the whole process here, past the lease's TTL).
await sleep(Number(args['compute-ms']));

// 3. The final write. Unsafe: the resource ignores the token. Safe: it accepts only a newer token.
const sql =
  args.mode === 'unsafe'
    ? { text: 'UPDATE resources SET value = $1 WHERE id = $2', values: [args.value, args.key] }
    : { text: 'UPDATE resources SET value = $1, fence_token = $2 WHERE id = $3 AND fence_token < $2', values: [args.value, revision, args.key] };
const started = Date.now();
const { rowCount } = await db.query(sql);
log.info({ ...ctx, lease: leaseId, revision, value: args.value, rowCount, latencyMs: Date.now() - started, step: 'write' }, rowCount === 0 ? 'write refused: stale revision' : 'write applied');

// 4. Release only our own hold: delete the key if it is still under our lease.
const released = await etcd.if(lockKey, 'Lease', '==', leaseId).then(etcd.delete().key(lockKey)).commit();
log.info({ ...ctx, lease: leaseId, revision, step: 'release', outcome: released.succeeded ? 'released' : 'rejected' }, released.succeeded ? 'lock released' : 'release refused: not our lease');
if (!lost) await lease.revoke().catch(() => undefined);

await db.end();
etcd.close();
process.stdout.write('DONE\n');
