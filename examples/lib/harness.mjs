// What the real-systems reproductions share: free loopback ports, waiting for a server or a
// worker's line, the child processes of a run (all in the harness's own process group, so that
// killing the group ends every one of them), and a throwaway PostgreSQL cluster run as the
// postgres user (PostgreSQL refuses to run as root).
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

/** The newest PostgreSQL of Debian's packages (`/usr/lib/postgresql/<major>/bin`), if one is installed. */
export const PG_BIN = (() => {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb'))) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  return majors.length > 0 ? join(root, majors[0], 'bin') : undefined;
})();

/**
 * `n` distinct free TCP ports on 127.0.0.1, chosen by the kernel (bind to port 0) at run time, so
 * that runs in parallel (test workers, other checkouts) do not pick the same ones. All `n` are
 * held open together, so one run never gets the same port twice, then released: the servers bind
 * them a moment later.
 */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = createServer();
      servers.push(s);
      await new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
  }
}

/** Poll `check` every 100 ms until it says yes (a throw counts as not yet). */
export async function until(what, check, timeoutMs) {
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

/** What a child has printed on stdout, collected from the first lineFrom() on it. */
const SAID = Symbol('said');
const CLOSED = Symbol('closed');

/**
 * The first match of `pattern` in what `child` prints on stdout, from its start: a line printed
 * before this call (with an earlier line, in one chunk) is found too.
 */
export function lineFrom(child, pattern, timeoutMs) {
  if (child[SAID] === undefined) {
    child[SAID] = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      child[SAID] += d;
      child.emit('said');
    });
    // 'close' comes after its output was all read ('exit' may come before).
    child.once('close', () => (child[CLOSED] = true));
  }
  const re = new RegExp(pattern);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('said', check);
      child.off('close', onExit);
    };
    const check = () => {
      const m = re.exec(child[SAID]);
      if (m === null) return false;
      done();
      resolve(m);
      return true;
    };
    const onExit = (code) => {
      if (check()) return;
      done();
      reject(new Error(`worker exited (${code}) before "${pattern}"; it said: ${child[SAID].slice(-500)}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no "${pattern}" from worker in ${timeoutMs} ms; it said: ${child[SAID].slice(-500)}`));
    }, timeoutMs);
    if (check()) return;
    child.on('said', check);
    if (child[CLOSED] === true) onExit(child.exitCode);
    else child.on('close', onExit);
  });
}

/** The exit code of `child`, once it has exited. */
export function exited(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => reject(new Error(`worker did not finish in ${timeoutMs} ms`)), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** The child processes of a run, none detached: they share the harness's process group. */
export class Children {
  #all = new Set();

  start(cmd, argv, opts = {}) {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    this.#all.add(child);
    child.on('exit', () => this.#all.delete(child));
    return child;
  }

  /** Stop one gently (`signal`), then for good after `graceMs`. */
  async stop(child, signal = 'SIGTERM', graceMs = 5000) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(timer);
  }

  /** Resume and kill every child still running (a paused one cannot die of SIGTERM). */
  killAll() {
    for (const c of this.#all) {
      try {
        c.kill('SIGCONT');
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/**
 * A throwaway PostgreSQL cluster in `dir`, on 127.0.0.1:`port` only, run as the postgres user
 * (initdb and the server are spawned with its uid: PostgreSQL refuses root), as a child of the
 * harness. Resolves once pg_isready says so; `stop()` is a fast shutdown.
 */
export async function startPostgres(children, dir, port) {
  if (PG_BIN === undefined) throw new Error('needs Debian package postgresql');
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  const data = join(dir, 'pgdata');
  const sock = join(dir, 'sock');
  for (const d of [data, sock]) {
    mkdirSync(d, { mode: 0o700 });
    chownSync(d, uid, gid);
  }
  execFileSync(join(PG_BIN, 'initdb'), ['-D', data, '-A', 'trust', '--no-sync', '-U', 'postgres'], { uid, gid, stdio: 'ignore' });
  const server = children.start(join(PG_BIN, 'postgres'), ['-D', data, '-p', String(port), '-k', sock, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'], { uid, gid, cwd: data });
  server.stdout.resume();
  server.stderr.resume();
  await until('postgres', () => spawnSync(join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]).status === 0, 15000);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    // SIGINT is PostgreSQL's fast shutdown.
    stop: () => children.stop(server, 'SIGINT', 10000),
  };
}

/**
 * A run: its children, its throwaway directory (whose name, starting with `prefix`, is the run's
 * marker: every process of the run names it in its command line — the servers their directories,
 * the workers a `--run` argument — and the tests look for leftovers by it; readable by the
 * postgres user), a log to stderr, and `cleanup()` — every child killed, the directory removed
 * unless `keep` — which also runs on Ctrl-C or SIGTERM, or once the process that started the run
 * is gone (then exit 130).
 */
export function startRun(prefix, { mode, keep }) {
  const children = new Children();
  const work = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(work, 0o755);
  const log = (msg) => process.stderr.write(`[example ${mode}] ${msg}\n`);
  const cleanup = () => {
    children.killAll();
    if (!keep) rmSync(work, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  // Whoever started the run is gone (a test runner killed outright, whose own clean-up never ran;
  // a closed terminal): the run ends too, rather than run on, orphaned, with its servers.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid === parent) return;
    log(`its parent ${parent} is gone: stopping`);
    cleanup();
    process.exit(130);
  }, 500).unref();
  // The tests read the marker from this line (test/helpers/reproduction.ts).
  log(`work dir ${work}`);
  return { children, work, marker: basename(work), log, cleanup };
}

/**
 * The programs now running that carry a run's `marker` in their command line (a node script by
 * its file name: `worker.mjs`), sorted: what a leftover check by the marker would find of the run.
 */
export function markedProcesses(marker) {
  const lines = spawnSync('pgrep', ['-a', '-f', marker], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);
  return lines
    .map((l) => {
      const argv = l.split(' ').slice(1);
      const prog = basename(argv[0] ?? '');
      return prog === 'node' || argv[0] === process.execPath ? basename(argv.find((a) => a.endsWith('.mjs')) ?? prog) : prog;
    })
    .sort();
}

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'stalewrite.js');

/**
 * Analyse a run's logs as a user would (`how`: the profile or mapping options), writing
 * report.json, report.md and report.html into `out`; returns the report and what the run prints
 * of it for `resource`.
 */
export function analyseLogs(files, how, out, resource) {
  const run = (format, dest) => spawnSync(process.execPath, [CLI, 'analyze', ...how, '-f', format, '-o', dest, '--quiet', ...files], { encoding: 'utf8' });
  const json = run('json', join(out, 'report.json'));
  run('markdown', join(out, 'report.md'));
  run('html', join(out, 'report.html'));
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  return {
    report,
    stalewrite: {
      exitCode: json.status,
      verdict: report.summary.verdict,
      readiness: report.resources.find((r) => r.resource === resource)?.readiness,
      errors: report.findings.filter((f) => f.severity === 'error').map((f) => f.rule),
      findings: report.findings.map((f) => `${f.rule} (${f.severity}, ${f.certainty})`),
      reasons: report.summary.reasons.map((r) => r.id),
      input: report.input,
    },
  };
}
