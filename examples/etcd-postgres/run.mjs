#!/usr/bin/env node
// The article's incident on real systems: etcd (lock service) + PostgreSQL 15 (the resource),
// both from Debian's packages, on loopback, in throwaway directories.
//
//   node examples/etcd-postgres/run.mjs --mode unsafe|safe [--out DIR] [--keep]
//
// 1. start etcd and PostgreSQL (wait for /health and pg_isready); create the row;
// 2. worker A acquires the lock (token = the key's create revision) and says LOCKED;
// 3. the harness pauses A with SIGSTOP for well past its 2 s TTL, so etcd expires A's lease;
// 4. worker B acquires (a larger token), writes and releases;
// 5. the harness resumes A (SIGCONT); A writes its late value and tries to release;
// 6. the harness reads the final row (the ground truth), stops everything, and analyses the
//    workers' logs with stalewrite and the committed mapping.json.
// Prints one JSON line with the database's final state and stalewrite's verdict. Always cleans up.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { analyseLogs, exited, freePorts, lineFrom, markedProcesses, PG_BIN, startPostgres, startRun, until } from '../lib/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: { mode: { type: 'string', default: 'unsafe' }, out: { type: 'string' }, keep: { type: 'boolean', default: false }, pause: { type: 'string', default: '5000' } },
});
if (args.mode !== 'safe' && args.mode !== 'unsafe') throw new Error('--mode is safe or unsafe');
const out = args.out ?? join(here, 'out', args.mode);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const ETCD = ['/usr/bin/etcd', '/usr/local/bin/etcd'].find((p) => existsSync(p));
if (PG_BIN === undefined || ETCD === undefined) {
  console.error('needs Debian packages etcd-server and postgresql (apt-get install etcd-server postgresql)');
  process.exit(3);
}

// Every child runs in this process's group (none detached): killing the group ends them all.
// Every process of the run names the run's marker in its arguments (the test looks for leftovers by it).
const { children, work, marker, log, cleanup } = startRun('stalewrite-etcd-pg-', args);

let result;
try {
  // etcd on loopback, ports free at run time, a throwaway data dir.
  const [clientPort, peerPort, pgPort] = await freePorts(3);
  const etcdAddr = `127.0.0.1:${clientPort}`;
  const etcd = children.start(ETCD, [
    '--name', 'stalewrite-example', '--data-dir', join(work, 'etcd'),
    '--listen-client-urls', `http://${etcdAddr}`, '--advertise-client-urls', `http://${etcdAddr}`,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `stalewrite-example=http://127.0.0.1:${peerPort}`, '--log-level', 'warn',
  ]);
  etcd.stderr.resume();
  etcd.stdout.resume();
  await until('etcd', async () => (await fetch(`http://${etcdAddr}/health`)).ok, 15000);
  log(`etcd ready on ${etcdAddr}`);

  // PostgreSQL refuses to run as root: a cluster owned by the postgres user.
  const postgres = await startPostgres(children, work, pgPort);
  const pgUrl = postgres.url;
  log(`postgres ready on port ${pgPort}`);

  const key = 'invoices/7';
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  await db.query('CREATE TABLE resources (id text PRIMARY KEY, value text NOT NULL, fence_token bigint NOT NULL DEFAULT 0)');
  await db.query("INSERT INTO resources (id, value) VALUES ($1, 'initial')", [key]);

  const worker = (name, value) =>
    children.start(process.execPath, [join(here, 'worker.mjs'), '--name', name, '--mode', args.mode, '--etcd', etcdAddr, '--pg', pgUrl, '--key', key, '--value', value, '--ttl', '2', '--log', join(out, `${name}.log`), '--run', marker]);

  // A takes the lock, then is frozen right after it says so: no keepalives, its lease expires.
  const a = worker('worker-a', 'A');
  a.stderr.setEncoding('utf8').on('data', (d) => log(`worker-a: ${d.trim()}`));
  const [, tokenA] = await lineFrom(a, 'LOCKED (\\d+)', 20000);
  a.kill('SIGSTOP');
  // What a leftover check by the marker finds of the run now: the servers and the paused worker.
  const marked = markedProcesses(marker);
  log(`worker-a holds token ${tokenA}; paused for ${args.pause} ms (TTL 2 s)`);
  await sleep(Number(args.pause));

  // B acquires once etcd has expired A's lease (it retries while busy), writes and releases.
  const b = worker('worker-b', 'B');
  b.stderr.setEncoding('utf8').on('data', (d) => log(`worker-b: ${d.trim()}`));
  const [, tokenB] = await lineFrom(b, 'LOCKED (\\d+)', 20000);
  await lineFrom(b, 'DONE', 20000);
  if ((await exited(b, 10000)) !== 0) throw new Error('worker-b failed');
  log(`worker-b wrote with token ${tokenB}`);

  // A wakes up a moment later and finishes its write with its old token.
  await sleep(1000);
  a.kill('SIGCONT');
  if ((await exited(a, 20000)) !== 0) throw new Error('worker-a failed');
  const { rows } = await db.query('SELECT value, fence_token FROM resources WHERE id = $1', [key]);
  await db.end();
  await postgres.stop();

  // Analyse the workers' logs, as a user would, with the committed mapping.
  const files = ['worker-a.log', 'worker-b.log'].map((f) => join(out, f));
  const { stalewrite } = analyseLogs(files, ['--mapping', join(here, 'mapping.json')], out, key);
  result = {
    mode: args.mode,
    tokens: { a: tokenA, b: tokenB },
    database: { value: rows[0].value, fenceToken: String(rows[0].fence_token) },
    stalewrite,
    marked,
    out,
  };
} finally {
  cleanup();
}
process.stdout.write(JSON.stringify(result) + '\n');
