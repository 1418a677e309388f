#!/usr/bin/env node
// The article's incident on real systems: ZooKeeper 3.8 (lock service) + PostgreSQL 15 (the
// resource), both from Debian's packages, on loopback, in throwaway directories.
//
//   node examples/zookeeper-postgres/run.mjs --mode unsafe|safe [--out DIR] [--keep]
//
// 1. start ZooKeeper (its own log file, timestamped lines with a zone) and PostgreSQL (wait for
//    `ruok` and pg_isready); create the row;
// 2. worker A takes the lock (an ephemeral sequential node; token = its czxid) and says LOCKED;
// 3. the harness pauses A with SIGSTOP: no pings, so the server expires A's session (800 ms) and
//    deletes A's lock node, and logs "Expiring session 0x…, timeout of 800ms exceeded";
// 4. worker B, queued behind A's node, gets the lock when that node goes, writes and releases;
// 5. the harness resumes A (SIGCONT); A writes its late value and tries to release;
// 6. the harness reads the final row (the ground truth), stops everything, and analyses the
//    workers' logs and the ZooKeeper server's log with `stalewrite analyze --profile zookeeper`.
// Prints one JSON line with the database's final state and stalewrite's verdict. Always cleans up.
// Every child runs in the harness's process group (none detached), so killing the group ends all.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { analyseLogs, exited, freePorts, lineFrom, markedProcesses, PG_BIN, startPostgres, startRun, until } from '../lib/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    mode: { type: 'string', default: 'unsafe' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'session-timeout': { type: 'string', default: '800' },
  },
});
if (args.mode !== 'safe' && args.mode !== 'unsafe') throw new Error('--mode is safe or unsafe');
const out = args.out ?? join(here, 'out', args.mode);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// Debian's zookeeper package, with log4j 1.2 as the SLF4J binding: with zookeeper.jar alone SLF4J
// finds no binding and the server logs nothing; with every jar of /usr/share/java it picks Maven's
// logger, whose lines have no timestamp.
const JAVA = ['/usr/bin/java', '/usr/lib/jvm/default-java/bin/java'].find((p) => existsSync(p));
const JARS = ['zookeeper.jar', 'slf4j-api.jar', 'slf4j-log4j12.jar', 'log4j-1.2.jar'].map((j) => join('/usr/share/java', j));
if (PG_BIN === undefined || JAVA === undefined || !JARS.every((j) => existsSync(j))) {
  console.error('needs Debian packages zookeeper and postgresql, and Java (apt-get install zookeeper postgresql)');
  process.exit(3);
}

const started = Date.now();
const { children, work, marker, log, cleanup } = startRun('stalewrite-zk-pg-', args);
let postgres;
let zkServer;

/** ZooKeeper's four-letter word: "imok" once it serves. */
function ruok(port) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.end('ruok'));
    let answer = '';
    s.setEncoding('utf8').on('data', (d) => (answer += d));
    s.on('close', () => resolve(answer === 'imok'));
    s.on('error', () => resolve(false));
    s.setTimeout(1000, () => s.destroy());
  });
}

async function startZooKeeper(port) {
  const conf = join(work, 'zk-conf');
  mkdirSync(conf);
  // tickTime 200 ms: session timeouts from 400 ms (2 ticks) to 4 s; the server checks for expired sessions every tick.
  writeFileSync(
    join(conf, 'zoo.cfg'),
    [`tickTime=200`, `dataDir=${join(work, 'zk-data')}`, `clientPort=${port}`, `clientPortAddress=127.0.0.1`, 'minSessionTimeout=400', 'maxSessionTimeout=4000', 'admin.enableServer=false', '4lw.commands.whitelist=ruok', ''].join('\n'),
  );
  // One file, every line with a timestamp that carries its zone.
  writeFileSync(
    join(conf, 'log4j.properties'),
    [
      'log4j.rootLogger=INFO, FILE',
      'log4j.appender.FILE=org.apache.log4j.FileAppender',
      `log4j.appender.FILE.File=${join(work, 'zookeeper.log')}`,
      'log4j.appender.FILE.layout=org.apache.log4j.PatternLayout',
      "log4j.appender.FILE.layout.ConversionPattern=%d{yyyy-MM-dd'T'HH:mm:ss.SSSZ} [%t] %-5p %c - %m%n",
      '',
    ].join('\n'),
  );
  const server = children.start(JAVA, ['-Xmx128m', '-XX:TieredStopAtLevel=1', '-cp', [conf, ...JARS].join(':'), `-Dlog4j.configuration=file:${join(conf, 'log4j.properties')}`, 'org.apache.zookeeper.server.ZooKeeperServerMain', join(conf, 'zoo.cfg')]);
  server.stdout.resume();
  server.stderr.resume();
  await until('zookeeper', () => ruok(port), 20000);
  return server;
}

let result;
try {
  const [zkPort, pgPort] = await freePorts(2);
  // Both servers start at once (each takes about a second).
  [zkServer, postgres] = await Promise.all([startZooKeeper(zkPort), startPostgres(children, work, pgPort)]);
  log(`zookeeper ready on 127.0.0.1:${zkPort}, postgres on port ${pgPort}`);

  const key = 'invoices/7';
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  await db.query('CREATE TABLE resources (id text PRIMARY KEY, value text NOT NULL, fence_token bigint NOT NULL DEFAULT 0)');
  await db.query("INSERT INTO resources (id, value) VALUES ($1, 'initial')", [key]);

  const worker = (name, value) =>
    children.start(process.execPath, [
      join(here, 'worker.mjs'), '--name', name, '--mode', args.mode, '--zk', `127.0.0.1:${zkPort}`, '--pg', postgres.url, '--key', key, '--value', value,
      '--session-timeout', args['session-timeout'], '--log', join(out, `${name}.log`), '--run', marker,
    ]);

  // A takes the lock, then is frozen right after it says so: no pings, its session expires.
  const a = worker('worker-a', 'A');
  a.stderr.setEncoding('utf8').on('data', (d) => log(`worker-a: ${d.trim()}`));
  const [, tokenA] = await lineFrom(a, 'LOCKED (\\d+)', 20000);
  a.kill('SIGSTOP');
  const pausedAt = Date.now();
  // What a leftover check by the marker finds of the run now: the servers and the paused worker.
  const marked = markedProcesses(marker);
  log(`worker-a holds czxid ${tokenA}; paused (session timeout ${args['session-timeout']} ms)`);

  // B queues behind A's node and gets the lock when the server deletes it (A's session expired).
  const b = worker('worker-b', 'B');
  b.stderr.setEncoding('utf8').on('data', (d) => log(`worker-b: ${d.trim()}`));
  const [, tokenB] = await lineFrom(b, 'LOCKED (\\d+)', 20000);
  log(`worker-b got the lock ${Date.now() - pausedAt} ms after A was paused`);
  await lineFrom(b, 'DONE', 20000);
  if ((await exited(b, 10000)) !== 0) throw new Error('worker-b failed');
  log(`worker-b wrote with czxid ${tokenB} and released (${Date.now() - pausedAt} ms after A was paused)`);

  // A wakes up a moment later and finishes its write with its old token.
  await sleep(1000);
  a.kill('SIGCONT');
  const pauseMs = Date.now() - pausedAt;
  if ((await exited(a, 20000)) !== 0) throw new Error('worker-a failed');
  const { rows } = await db.query('SELECT value, fence_token FROM resources WHERE id = $1', [key]);
  await db.end();

  // The server's log, complete once it has stopped.
  await children.stop(zkServer);
  copyFileSync(join(work, 'zookeeper.log'), join(out, 'zookeeper.log'));
  await postgres.stop();

  // Analyse the workers' logs and the server's, as a user would, with the built-in profile.
  const files = ['worker-a.log', 'worker-b.log', 'zookeeper.log'].map((f) => join(out, f));
  const { report, stalewrite } = analyseLogs(files, ['--profile', 'zookeeper'], out, key);
  // Where A's lease end came from: the evidence of the finding about A's late write.
  const late = report.findings.find((f) => f.rule === 'accepted-stale-write');
  const end = late?.evidence.find((e) => e.role.startsWith("late writer's lease ended"));
  result = {
    mode: args.mode,
    tokens: { a: tokenA, b: tokenB },
    database: { value: rows[0].value, fenceToken: String(rows[0].fence_token) },
    stalewrite,
    leaseEnd:
      end === undefined
        ? null
        : { finding: late.rule, role: end.role, file: basename(end.file), line: end.line, observer: end.observer, inferred: end.inferred === true, text: readFileSync(end.file, 'utf8').split('\n')[end.line - 1] },
    timing: { pauseMs, totalMs: Date.now() - started },
    marked,
    out,
  };
} finally {
  cleanup();
}
process.stdout.write(JSON.stringify(result) + '\n');
