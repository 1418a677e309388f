/**
 * How many jobs `jobs: 'auto'` means (README "Scaling out"). Apart from jobs.ts, so that deciding
 * on one thread (most runs) loads neither the jobs' machinery nor worker_threads.
 */
import { availableParallelism } from 'node:os';

/** With `jobs: 'auto'`, inputs of at least this many bytes in all are analysed on every core. */
export const JOBS_MIN_BYTES = 64 * 1024 * 1024;

/** Worker threads `jobs: 'auto'` starts at most. */
export const MAX_AUTO_JOBS = 8;

/**
 * Cores `jobs: 'auto'` needs to start jobs at all. On 2 cores the main thread's reader competes
 * with the two jobs (README "Scaling out"); from 3 cores on it has a core of its own.
 */
export const MIN_AUTO_CORES = 3;

/** The number of jobs `auto` means for inputs of `bytes` in all, on `cores` cores. */
export function autoJobs(bytes: number, cores = availableParallelism()): number {
  return bytes >= JOBS_MIN_BYTES && cores >= MIN_AUTO_CORES ? Math.min(MAX_AUTO_JOBS, cores) : 1;
}
