// Pieces shared by the reproductions (examples/*-postgres/run.mjs): free loopback ports, child
// processes that are always cleaned up, waiting for a server or a worker's line, and a throwaway
// PostgreSQL cluster owned by the postgres user.
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export const PG_BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((d) => existsSync(join(d, 'initdb')));

/** A TCP port free on 127.0.0.1 right now (bound to :0, then released). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Poll `check` every 100 ms until it returns true; throws after `timeoutMs`. */
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

/**
 * The child processes of one run, all in the harness's own process group (none is detached), so
 * that killing the group kills them all; `stopAll()` kills what is still running.
 */
export class Children {
  constructor() {
    this.set = new Set();
  }

  /** Start a child; its stdout is collected for `waitFor`. */
  start(cmd, argv, opts = {}) {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    this.set.add(child);
    child.on('exit', () => this.set.delete(child));
    child.said = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      child.said += d;
      child.emit('said');
    });
    return child;
  }

  /** Kill every child still running (resumed first, should one be stopped) and wait until they are gone. */
  async stopAll() {
    const running = [...this.set];
    for (const c of running) {
      try {
        c.kill('SIGCONT');
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.all(running.map((c) => exited(c, 5000).catch(() => undefined)));
  }
}

/** The first match of `pattern` in everything the child has printed on stdout, waiting up to `timeoutMs`. */
export function waitFor(child, pattern, timeoutMs) {
  const re = new RegExp(pattern);
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = re.exec(child.said);
      if (m === null) return false;
      done();
      resolve(m);
      return true;
    };
    const onExit = (code) => {
      if (!check()) {
        done();
        reject(new Error(`process exited (${code}) before "${pattern}"; it said: ${child.said.slice(-500)}`));
      }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no "${pattern}" in ${timeoutMs} ms; it said: ${child.said.slice(-500)}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.off('said', check);
      child.off('exit', onExit);
    };
    if (check()) return;
    child.on('said', check);
    if (child.exitCode !== null) onExit(child.exitCode);
    else child.on('exit', onExit);
  });
}

/** The child's exit code, waiting up to `timeoutMs`. */
export function exited(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => reject(new Error(`process did not finish in ${timeoutMs} ms`)), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * A throwaway PostgreSQL cluster in `dir` on 127.0.0.1:`port`. PostgreSQL refuses to run as
 * root, so it belongs to the postgres user; the postmaster runs as a child of `children` (not
 * through pg_ctl, which would put it in a session of its own, out of reach of a process-group
 * kill). Returns the connection URL and `stop()` (immediate shutdown: SIGQUIT to the postmaster).
 */
export async function startPostgres(children, dir, port) {
  if (PG_BIN === undefined) throw new Error('needs Debian package postgresql');
  const data = join(dir, 'pgdata');
  const sock = join(dir, 'sock');
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  mkdirSync(sock);
  chownSync(sock, uid, gid);
  mkdirSync(data, { mode: 0o700 });
  chownSync(data, uid, gid);
  execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'initdb'), '-D', data, '-A', 'trust', '--no-sync', '-U', 'postgres'], { stdio: 'ignore' });
  const postmaster = children.start('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'postgres'), '-D', data, '-p', String(port), '-k', sock, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off']);
  postmaster.stdout.resume();
  postmaster.stderr.resume();
  await until('postgres', () => spawnSync(join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]).status === 0, 15000);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      let pid;
      try {
        pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        return; // never started, or gone
      }
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        return;
      }
      await exited(postmaster, 10000).catch(() => postmaster.kill('SIGKILL'));
    },
  };
}

/**
 * One run of a reproduction: a throwaway directory (`prefix` + random, readable by the postgres
 * user; every process of the run names it in its arguments, so that a test can look for
 * leftovers by it), the children, a log line on stderr, and `cleanup()`: PostgreSQL stopped,
 * every child killed, the directory removed (unless `keep`). Ctrl-C and SIGTERM clean up too.
 */
export class Run {
  constructor(prefix, label, keep) {
    this.work = mkdtempSync(join(tmpdir(), prefix));
    chmodSync(this.work, 0o755);
    this.label = label;
    this.keep = keep;
    this.children = new Children();
    this.postgres = undefined;
    for (const sig of ['SIGINT', 'SIGTERM']) {
      process.on(sig, () => {
        void this.cleanup().finally(() => process.exit(130));
      });
    }
  }

  log(msg) {
    process.stderr.write(`[${this.label}] ${msg}\n`);
  }

  /** PostgreSQL in the run's directory on `port` (see startPostgres), stopped by cleanup(). */
  async startPostgres(port) {
    this.postgres = await startPostgres(this.children, this.work, port);
    this.log(`postgres ready on port ${port}`);
    return this.postgres;
  }

  async cleanup() {
    await this.postgres?.stop().catch(() => undefined);
    await this.children.stopAll();
    if (!this.keep) rmSync(this.work, { recursive: true, force: true });
  }
}

/** A fresh output folder for a run's logs and reports. */
export function freshDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'stalewrite.js');

/**
 * Analyse a run's logs as a user would, with `mapping`: the reports report.json, report.md and
 * report.html in `out`, and stalewrite's verdict on `resource` in short.
 */
export function analyseRun(mapping, files, out, resource) {
  const analyse = (format, dest) => spawnSync(process.execPath, [CLI, 'analyze', '--mapping', mapping, '-f', format, '-o', dest, '--quiet', ...files], { encoding: 'utf8' });
  const json = analyse('json', join(out, 'report.json'));
  analyse('markdown', join(out, 'report.md'));
  analyse('html', join(out, 'report.html'));
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  return {
    exitCode: json.status,
    verdict: report.summary.verdict,
    readiness: report.resources.find((r) => r.resource === resource)?.readiness,
    errors: report.findings.filter((f) => f.severity === 'error').map((f) => f.rule),
    findings: report.findings.map((f) => `${f.rule} (${f.severity}, ${f.certainty})`),
    messages: report.findings.map((f) => f.message),
    input: report.input,
  };
}
