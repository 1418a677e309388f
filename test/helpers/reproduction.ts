/**
 * Running a real-systems reproduction (examples/*-postgres/run.mjs) from a test, the one way all
 * of them are run: each run in a process group of its own (spawned detached), so that a run that
 * outlives its budget, or whose test vitest times out (`afterEach(killRuns)`), is SIGKILLed with
 * everything it started — the harness, the servers, PostgreSQL, the workers, a paused one too —
 * and its throwaway directory removed; the test then fails with what the run printed. What a run
 * left behind is found by its process group and by its marker (the name of its throwaway
 * directory, which every process of the run carries in its command line: PostgreSQL's backends,
 * which rename themselves, are found by the group).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Debian's PostgreSQL, as the reproductions find it (undefined: not installed). */
export { PG_BIN } from '../../examples/lib/harness.mjs';

/** A run's identity: its process group (its harness's pid) and, once the harness printed its work dir, its marker. */
export interface RunHandle {
  readonly pgid: number;
  marker?: string;
  work?: string;
}

export interface Reproduction<R> {
  result: R;
  stderr: string;
  run: RunHandle;
}

/** A run that failed, timed out or printed no result; its group was killed. */
export class ReproductionError extends Error {
  constructor(
    message: string,
    readonly run: RunHandle,
  ) {
    super(message);
    this.name = 'ReproductionError';
  }
}

/** Runs not finished yet: killRuns() ends them. */
const live = new Map<ChildProcess, RunHandle>();

/** SIGKILL to a whole process group (it ends stopped processes too). */
function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // the group is gone
  }
}

const pgrep = (args: string[]) => spawnSync('pgrep', args, { encoding: 'utf8' }).stdout.trim();

/** Whether `pid` is a process that still runs (not gone, not a zombie waiting to be reaped: PID 1 may take seconds). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** `pgrep -a` lines of the processes that still run. */
const running = (out: string) => out.split('\n').filter((l) => l !== '' && alive(Number(l.split(' ')[0])));

/**
 * The run's group SIGKILLed (only while it has members: a group id is free again once they are
 * gone, and may name another group later), and every process carrying its marker; its directory removed.
 */
function kill(run: RunHandle): void {
  if (pgrep(['-g', String(run.pgid)]) !== '') killGroup(run.pgid);
  if (run.marker === undefined) return;
  for (const pid of pgrep(['-f', run.marker]).split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(run.work!, { recursive: true, force: true });
}

/**
 * Every run still going, killed with its whole group and its directory removed: for
 * `afterEach`, so that a test vitest timed out leaves nothing running. Also on the test worker's exit.
 */
export function killRuns(): void {
  for (const [child, run] of live) {
    live.delete(child);
    kill(run);
  }
}
process.on('exit', killRuns);

/**
 * Run `script` with `args` (in its own process group); resolves with its last stdout line parsed
 * as JSON. After `timeoutMs` the whole group is killed and the promise rejects. A good run's
 * group is left as it is, for the test to check with leftovers(); a failed run's is killed.
 * `onStart` gets the run's handle at once (its marker follows when the harness prints it).
 */
export function runReproduction<R>(script: string, args: string[], timeoutMs: number, onStart?: (run: RunHandle) => void): Promise<Reproduction<R>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const run: RunHandle = { pgid: child.pid! };
    live.set(child, run);
    onStart?.(run);
    const what = `${basename(script)} ${args.join(' ')}`;
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (run.work === undefined) {
        const m = /work dir (\S+)/.exec(stderr);
        if (m !== null) {
          run.work = m[1]!;
          run.marker = basename(run.work);
        }
      }
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill(run);
    }, timeoutMs);
    const fail = (message: string) => {
      kill(run);
      reject(new ReproductionError(message, run));
    };
    child.on('error', (err) => {
      clearTimeout(timer);
      live.delete(child);
      fail(`${what}: ${err.message}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (!live.delete(child)) return; // killRuns() ended it: the test has failed already
      if (timedOut) return fail(`${what} did not finish in ${timeoutMs} ms (its process group was killed): ${stderr}`);
      if (code !== 0) return fail(`${what} failed (${code ?? signal}): ${stderr}`);
      try {
        resolve({ result: JSON.parse(stdout.trim().split('\n').at(-1)!) as R, stderr, run });
      } catch (err) {
        fail(`${what} printed no result (${(err as Error).message}): ${stdout}${stderr}`);
      }
    });
  });
}

/**
 * The processes of `run` that still run, one `pgrep -a` line each ('' when none): those of its
 * process group, and those carrying its marker.
 */
export function processesOf(run: RunHandle): string {
  const group = running(pgrep(['-a', '-g', String(run.pgid)]));
  const marked = run.marker === undefined ? [] : running(pgrep(['-a', '-f', run.marker]));
  return [...new Set([...group, ...marked])].join('\n');
}

/**
 * What `run` left running: processesOf(run), asked again for up to `graceMs` (a process killed a
 * moment ago may take a moment to be gone) before it counts. What is found is then killed
 * (the test fails on it, and leaves nothing running).
 */
export async function leftovers(run: RunHandle, graceMs = 2000): Promise<string> {
  if (run.marker === undefined) throw new Error(`run ${run.pgid} never printed its work dir: no marker to look for`);
  const end = Date.now() + graceMs;
  for (;;) {
    const found = processesOf(run);
    if (found === '') return found;
    if (Date.now() > end) {
      kill(run);
      return found;
    }
    await sleep(100);
  }
}
