/**
 * The main thread's side of a parsing worker (parse-worker.ts): events of one input file, in
 * order, with the file's counts kept and its invalid lines judged here, batch by batch, at the
 * same points as when the main thread parses (so --strict stops at the same line and the listed
 * problems are the same).
 */
import { Worker } from 'node:worker_threads';
import type { LockEvent } from '../model/event.js';
import type { FileSummary } from '../model/report.js';
import type { ProfileRecipe } from '../profiles/types.js';
import { BatchDecoder } from './handover.js';
import type { ParseJob, WorkerMessage } from './parse-worker.js';
import type { InputStats } from './records.js';
// Whether to start workers at all is decided apart (worker-limits.ts), without loading this.
export { maxWorkers, WORKER_MIN_BYTES } from './worker-limits.js';

// The worker's code is always the built one (tests run the sources, and a worker cannot load TypeScript).
const WORKER_URL = new URL('../../dist/ingest/parse-worker.js', import.meta.url);

export async function* workerEvents(
  job: { path: string; name: string; recipe: ProfileRecipe; maxLineBytes?: number },
  stats: InputStats,
  summary: FileSummary,
  onBatch?: (lines: number, bytes: number) => void,
): AsyncGenerator<LockEvent[]> {
  const worker = new Worker(WORKER_URL, { workerData: job satisfies ParseJob });
  const queue: WorkerMessage[] = [];
  let failure: Error | undefined;
  let exited = false;
  let notify: (() => void) | undefined;
  worker.on('message', (m: WorkerMessage) => {
    queue.push(m);
    notify?.();
  });
  worker.on('error', (err) => {
    failure = err;
    notify?.();
  });
  worker.on('exit', () => {
    exited = true;
    notify?.();
  });
  const decoder = new BatchDecoder(job.name, job.name);
  try {
    for (;;) {
      while (queue.length === 0) {
        if (failure !== undefined) throw failure;
        if (exited) throw new Error(`the parsing worker for ${job.name} stopped before the end of the input`);
        await new Promise<void>((resolve) => (notify = resolve));
        notify = undefined;
      }
      const m = queue.shift()!;
      if (m.kind === 'batch') worker.postMessage(1);
      for (const [line, reason] of m.problems) stats.problem(summary, line, reason);
      const s = m.summary;
      summary.lines = s.lines;
      // Copies found after the merge (duplicates.ts) are counted on this side, out of the worker's events.
      summary.events = s.events - summary.duplicates;
      summary.blank = s.blank;
      summary.ignored = s.ignored;
      summary.expanded = s.expanded;
      summary.joined = s.joined;
      // In the order parseSource sets them (the report's keys come out in the same order).
      if (s.wrapper !== undefined) summary.wrapper = s.wrapper;
      if (s.profile !== undefined) summary.profile = s.profile;
      if (s.service !== undefined) summary.service = s.service;
      if (s.sparse !== undefined) summary.sparse = s.sparse;
      if (m.kind === 'end') {
        if (s.error !== undefined) summary.error = s.error;
        return;
      }
      onBatch?.(m.lines, m.bytes);
      if (m.batch.n > 0) yield decoder.decode(m.batch);
    }
  } finally {
    if (!exited) await worker.terminate();
  }
}
