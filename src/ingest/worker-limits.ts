/**
 * When input files are parsed on worker threads (threaded.ts). Apart from it, so that deciding not
 * to (small files, 2 cores) loads neither it nor worker_threads.
 */
import { availableParallelism } from 'node:os';

/** Files at least this large are parsed on a worker thread (below it, starting one costs more than it saves). */
export const WORKER_MIN_BYTES = 8 * 1024 * 1024;

/** Parsing workers at most: the cores beside the main thread's, and at least one. */
export function maxWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}
