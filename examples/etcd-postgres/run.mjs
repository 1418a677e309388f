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
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const { values: args } = parseArgs({
  options: { mode: { type: 'string', default: 'unsafe' }, out: { type: 'string' }, keep: { type: 'boolean', default: false }, pause: { type: 'string', default: '5000' } },
});
if (args.mode !== 'safe' && args.mode !== 'unsafe') throw new Error('--mode is safe or unsafe');
const out = args.out ?? join(here, 'out', args.mode);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const PG_BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((d) => existsSync(join(d, 'initdb')));
const ETCD = ['/usr/bin/etcd', '/usr/local/bin/etcd'].find((p) => existsSync(p));
if (PG_BIN === undefined || ETCD === undefined) {
  console.error('needs Debian packages etcd-server and postgresql (apt-get install etcd-server postgresql)');
  process.exit(3);
}

const children = new Set();
const work = mkdtempSync(join(tmpdir(), 'stalewrite-etcd-pg-'));
chmodSync(work, 0o755);
let pgData;

function log(msg) {
  process.stderr.write(`[example ${args.mode}] ${msg}\n`);
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function start(cmd, argv, opts = {}) {
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function until(what, check, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not ready yet
    }
    if (Date.now() > end) throw new Error(`${what} not ready after ${timeoutMs} ms`);
    await sleep(100);
  }
}

function lineFrom(child, pattern, timeoutMs) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`no "${pattern}" from worker in ${timeoutMs} ms; it said: ${buf.slice(-500)}`)), timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      buf += d;
      const m = new RegExp(pattern).exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!new RegExp(pattern).test(buf)) reject(new Error(`worker exited (${code}) before "${pattern}"`));
    });
  });
}

function exited(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => reject(new Error(`worker did not finish in ${timeoutMs} ms`)), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function cleanup() {
  for (const c of children) {
    try {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  if (pgData !== undefined) spawnSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', pgData, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore' });
  if (!args.keep) rmSync(work, { recursive: true, force: true });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

let result;
try {
  // etcd on loopback, non-default ports, a throwaway data dir.
  const [clientPort, peerPort, pgPort] = [await freePort(), await freePort(), await freePort()];
  const etcdAddr = `127.0.0.1:${clientPort}`;
  const etcd = start(ETCD, [
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
  pgData = join(work, 'pgdata');
  const sock = join(work, 'sock');
  mkdirSync(sock);
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  chownSync(sock, uid, gid);
  mkdirSync(pgData, { mode: 0o700 });
  chownSync(pgData, uid, gid);
  const pgLog = join(work, 'postgres.log');
  writeFileSync(pgLog, '');
  chownSync(pgLog, uid, gid);
  execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'initdb'), '-D', pgData, '-A', 'trust', '--no-sync', '-U', 'postgres'], { stdio: 'ignore' });
  execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', pgData, '-l', pgLog, '-o', `-p ${pgPort} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off`, '-w', 'start'], { stdio: 'ignore' });
  await until('postgres', () => spawnSync(join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(pgPort)]).status === 0, 15000);
  const pgUrl = `postgres://postgres@127.0.0.1:${pgPort}/postgres`;
  log(`postgres ready on port ${pgPort}`);

  const key = 'invoices/7';
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  await db.query('CREATE TABLE resources (id text PRIMARY KEY, value text NOT NULL, fence_token bigint NOT NULL DEFAULT 0)');
  await db.query("INSERT INTO resources (id, value) VALUES ($1, 'initial')", [key]);

  const worker = (name, value) =>
    start(process.execPath, [join(here, 'worker.mjs'), '--name', name, '--mode', args.mode, '--etcd', etcdAddr, '--pg', pgUrl, '--key', key, '--value', value, '--ttl', '2', '--log', join(out, `${name}.log`)]);

  // A takes the lock, then is frozen right after it says so: no keepalives, its lease expires.
  const a = worker('worker-a', 'A');
  a.stderr.setEncoding('utf8').on('data', (d) => log(`worker-a: ${d.trim()}`));
  const [, tokenA] = await lineFrom(a, 'LOCKED (\\d+)', 20000);
  a.kill('SIGSTOP');
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

  // Analyse the workers' logs, as a user would, with the committed mapping.
  const files = ['worker-a.log', 'worker-b.log'].map((f) => join(out, f));
  const cli = join(root, 'bin', 'stalewrite.js');
  const analyse = (format, dest) => spawnSync(process.execPath, [cli, 'analyze', '--mapping', join(here, 'mapping.json'), '-f', format, '-o', dest, '--quiet', ...files], { encoding: 'utf8' });
  const json = analyse('json', join(out, 'report.json'));
  analyse('markdown', join(out, 'report.md'));
  analyse('html', join(out, 'report.html'));
  const report = JSON.parse(readText(join(out, 'report.json')));
  const resource = report.resources.find((r) => r.resource === key);
  result = {
    mode: args.mode,
    tokens: { a: tokenA, b: tokenB },
    database: { value: rows[0].value, fenceToken: String(rows[0].fence_token) },
    stalewrite: {
      exitCode: json.status,
      verdict: report.summary.verdict,
      readiness: resource?.readiness,
      errors: report.findings.filter((f) => f.severity === 'error').map((f) => f.rule),
      findings: report.findings.map((f) => `${f.rule} (${f.severity}, ${f.certainty})`),
      input: report.input,
    },
    out,
  };
} finally {
  await cleanup();
}
process.stdout.write(JSON.stringify(result) + '\n');

function readText(p) {
  return execFileSync('cat', [p]).toString();
}
