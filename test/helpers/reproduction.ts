/**
 * Running a real-systems reproduction (examples/*-postgres/run.mjs) from a test: in a process
 * group of its own, so that a run that outlives its timeout is killed with everything it started
 * (servers, workers), and the test fails with what the run printed.
 */
import { spawn, spawnSync } from 'node:child_process';

export interface Reproduction<R> {
  result: R;
  stderr: string;
  /** Its process group: check for leftovers first, then `killGroup(pgid)`. */
  pgid: number;
}

/** Run `script` with `args`; resolves with its last stdout line parsed as JSON. */
export function runReproduction<R>(script: string, args: string[], timeoutMs: number): Promise<Reproduction<R>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid!);
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      // A failed run's leftovers go with it; a good run's are for the test to find (leftovers()).
      if (timedOut || code !== 0) killGroup(child.pid!);
      if (timedOut) return reject(new Error(`${script} ${args.join(' ')} did not finish in ${timeoutMs} ms (its process group was killed): ${stderr}`));
      if (code !== 0) return reject(new Error(`${script} ${args.join(' ')} failed (${code}): ${stderr}`));
      try {
        resolve({ result: JSON.parse(stdout.trim().split('\n').at(-1)!) as R, stderr, pgid: child.pid! });
      } catch (err) {
        reject(new Error(`${script} printed no result (${(err as Error).message}): ${stdout}${stderr}`));
      }
    });
  });
}

/** SIGKILL to a whole process group (it ends stopped processes too). */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // the group is gone
  }
}

/** Command lines of running processes that name `marker` (the run's directory prefix). */
export function leftovers(marker: string): string {
  return spawnSync('pgrep', ['-af', marker], { encoding: 'utf8' }).stdout.trim();
}
