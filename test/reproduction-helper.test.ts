/**
 * The reproductions' runner (test/helpers/reproduction.ts), on a stand-in harness that starts a
 * child carrying the run's marker and a paused one that does not: a run past its budget, and a
 * test that vitest times out, leave nothing running; a run that leaves processes behind is
 * caught by the leftover check, by its marker and by its process group.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { killRuns, leftovers, processesOf, ReproductionError, runReproduction, type RunHandle } from './helpers/reproduction.js';

const FAKE = join(import.meta.dirname, 'helpers', 'fake-reproduction.mjs');

afterEach(killRuns);

/** The most processes of the run seen at once while it went (the harness and its two children: 3). */
function watch(run: RunHandle): { most: number } {
  const seen = { most: 0 };
  void (async () => {
    for (let i = 0; i < 200 && seen.most < 3; i++) {
      seen.most = Math.max(seen.most, processesOf(run).split('\n').filter(Boolean).length);
      await sleep(50);
    }
  })();
  return seen;
}

/** The run vitest timed out (the next test checks what it left), and whether its promise ever settled. */
let timedOut: RunHandle | undefined;
let settled = false;

describe('reproduction runner', () => {
  it('a run past its budget: its whole process group is killed (the paused child too), its work dir removed, and the test fails with what it printed', async () => {
    let seen = { most: 0 };
    const err = await runReproduction(FAKE, [], 5000, (r) => (seen = watch(r))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReproductionError);
    expect((err as Error).message).toMatch(/did not finish in 5000 ms \(its process group was killed\): \[example fake\] work dir /);
    const run = (err as ReproductionError).run;
    expect(seen.most).toBe(3);
    expect(run.marker).toMatch(/^stalewrite-fake-run-/);
    expect(await leftovers(run)).toBe('');
    expect(existsSync(run.work!)).toBe(false);
  }, 20_000);

  it('a run that finished but left processes behind: the leftover check finds them by marker and by group, then kills them', async () => {
    const { result, run } = await runReproduction<{ ok: boolean }>(FAKE, ['--leak'], 20_000);
    expect(result).toEqual({ ok: true });
    const left = await leftovers(run, 200);
    expect(left).toContain(run.marker); // the marked child
    expect(left).toMatch(/\bsleep 600\b/); // the paused child, by its group only
    expect(await leftovers(run)).toBe('');
  }, 20_000);

  it.fails('a test that vitest times out (this one, on purpose) …', async () => {
    await runReproduction(FAKE, [], 60_000, (r) => {
      timedOut = r;
      watch(r);
    }).finally(() => (settled = true));
  }, 3000);

  it('… has its run killed whole by afterEach(killRuns)', async () => {
    expect(settled).toBe(false); // it failed by timing out, while the run went on
    expect(timedOut?.marker).toMatch(/^stalewrite-fake-run-/);
    expect(await leftovers(timedOut!)).toBe('');
    expect(existsSync(timedOut!.work!)).toBe(false);
  });
});
