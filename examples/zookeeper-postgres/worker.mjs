#!/usr/bin/env node
// A worker that takes a ZooKeeper lock (the lock recipe: an ephemeral sequential node under the
// lock's path; the lowest sequence number holds the lock, the others watch their predecessor)
// and writes to PostgreSQL, logging every step through pino. Modes: --mode unsafe (plain UPDATE)
// or safe (conditional on the token).
//
//   node worker.mjs --name worker-a --mode safe --zk 127.0.0.1:2181 --pg postgres://… \
//                   --key invoices/7 --value A --session-timeout 800 --log worker-a.log --run MARKER
//
// It prints "LOCKED <token>" on stdout once it holds the lock (the harness pauses it then),
// "DONE" at the end. The fencing token is the lock node's czxid (the zxid of the transaction that
// created it), as a decimal string; the lease id is the session id, as the client gives it
// (16 hex digits: the stalewrite profile `zookeeper` normalises it to the server's 0x… form).
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import pg from 'pg';
import zookeeper from 'node-zookeeper-client';

const { values: args } = parseArgs({
  options: {
    name: { type: 'string' },
    mode: { type: 'string' },
    zk: { type: 'string' },
    pg: { type: 'string' },
    key: { type: 'string' },
    value: { type: 'string' },
    'session-timeout': { type: 'string', default: '800' },
    log: { type: 'string' },
    // The run's marker (its directory's name): unused here, it marks the process as the run's (see run.mjs).
    run: { type: 'string' },
    'compute-ms': { type: 'string', default: '300' },
    'acquire-timeout-ms': { type: 'string', default: '20000' },
  },
});
for (const k of ['name', 'mode', 'zk', 'pg', 'key', 'value', 'log']) if (!args[k]) throw new Error(`--${k} is required`);
if (args.mode !== 'safe' && args.mode !== 'unsafe') throw new Error('--mode is safe or unsafe');

const log = pino({ base: { pid: process.pid, hostname: args.name } }, pino.destination({ dest: args.log, sync: true }));
const lockDir = `/locks/${args.key}`;
const ctx = { worker: args.name, resource: args.key };

/** A node-zookeeper-client call as a promise. */
const call = (fn, ...rest) => new Promise((resolve, reject) => fn(...rest, (err, ...out) => (err ? reject(err) : resolve(out))));

// retries: 0, so that a create is never sent twice (a second sequential node would be a second place in the queue).
const zk = zookeeper.createClient(args.zk, { sessionTimeout: Number(args['session-timeout']), retries: 0 });
const db = new pg.Client({ connectionString: args.pg });
await db.connect();

await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('could not connect to ZooKeeper')), 10000);
  zk.once('connected', () => {
    clearTimeout(timer);
    resolve();
  });
  zk.connect();
});
// The session id as this client gives it (8 bytes, 16 hex digits) and the timeout the server granted.
const session = zk.getSessionId().toString('hex');
const sessionTimeoutMs = zk.getSessionTimeout();
const own = { ...ctx, session };

// The client's own view of its session: what it sees once it runs again (logged once).
let expired = false;
let closing = false;
zk.on('state', (state) => {
  if (closing) return;
  if (state === zookeeper.State.DISCONNECTED && !expired) log.warn({ ...own, event: 'keepalive.failed', state: String(state) }, 'disconnected from ZooKeeper');
  if (state === zookeeper.State.EXPIRED && !expired) {
    expired = true;
    log.warn({ ...own, event: 'expired', state: String(state) }, 'session expired');
  }
});

// 1. The lock recipe: our ephemeral sequential node, then wait until no lower one is left.
await call(zk.mkdirp.bind(zk), lockDir, zookeeper.CreateMode.PERSISTENT);
const [node] = await call(zk.create.bind(zk), `${lockDir}/lock-`, Buffer.from(args.name), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
const mine = node.slice(lockDir.length + 1);
const deadline = Date.now() + Number(args['acquire-timeout-ms']);
let waitedFor;
for (;;) {
  const [children] = await call(zk.getChildren.bind(zk), lockDir);
  const queue = children.filter((c) => c.startsWith('lock-')).sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
  const at = queue.indexOf(mine);
  if (at === -1) throw new Error(`our lock node ${node} is gone`);
  if (at === 0) break;
  const predecessor = `${lockDir}/${queue[at - 1]}`;
  if (waitedFor !== predecessor) {
    log.info({ ...own, event: 'busy', lockNode: node, waitingFor: predecessor }, 'lock busy: waiting for the node before ours');
    waitedFor = predecessor;
  }
  if (Date.now() > deadline) throw new Error('could not acquire the lock in time');
  // Watch the predecessor; when it goes (released, or its session expired), look again.
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    zk.exists(
      predecessor,
      () => {
        clearTimeout(timer);
        resolve();
      },
      (err, stat) => {
        if (err) {
          clearTimeout(timer);
          reject(err);
        } else if (!stat) {
          clearTimeout(timer);
          resolve(); // already gone
        }
      },
    );
  });
}
// The fencing token: the czxid of our lock node, a 64-bit zxid, as a decimal string (exact).
const [stat] = await call(zk.exists.bind(zk), node);
const czxid = BigInt('0x' + stat.czxid.toString('hex')).toString();
log.info({ ...own, event: 'acquire', lockNode: node, czxid, ttlMs: sessionTimeoutMs }, 'lock acquired');
process.stdout.write(`LOCKED ${czxid}\n`);

// 2. "Compute" (the harness may pause the whole process here, past the session timeout).
await sleep(Number(args['compute-ms']));

// 3. The final write. Unsafe: the resource ignores the token. Safe: it accepts only a newer token.
const sql =
  args.mode === 'unsafe'
    ? { text: 'UPDATE resources SET value = $1 WHERE id = $2', values: [args.value, args.key] }
    : { text: 'UPDATE resources SET value = $1, fence_token = $2 WHERE id = $3 AND fence_token < $2', values: [args.value, czxid, args.key] };
const started = Date.now();
const { rowCount } = await db.query(sql);
log.info({ ...own, event: 'write', czxid, value: args.value, rowCount, latencyMs: Date.now() - started }, rowCount === 0 ? 'write refused: stale czxid' : 'write applied');

// 4. Release: delete our node (refused once the session has expired: the node is gone already).
try {
  await Promise.race([call(zk.remove.bind(zk), node, -1), sleep(3000).then(() => Promise.reject(new Error('no answer in 3 s')))]);
  log.info({ ...own, event: 'release', lockNode: node, czxid }, 'lock released');
} catch (err) {
  log.warn({ ...own, event: 'release.rejected', lockNode: node, czxid, error: String(err.message ?? err) }, 'release refused');
}

closing = true;
zk.close();
await db.end();
// The client's reconnect timers would keep the process alive for seconds after close().
process.stdout.write('DONE\n', () => process.exit(0));
