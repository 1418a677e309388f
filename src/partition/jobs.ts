/**
 * `--jobs N` (README "Scaling out"): the partitions of one run on N worker threads of this
 * process, each reading every input and analysing the resources of its partition, their reports
 * merged in memory (mergeReports), so the report is the one a single thread writes. Findings are
 * passed on as soon as their partition has them (live ndjson), problems and progress as they come.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Finding, Problem, Report } from '../model/report.js';
import type { ProfileRecipe } from '../profiles/types.js';
import { InputError } from '../ingest/open.js';
import { StrictInputError } from '../ingest/records.js';
import { OptionError } from '../model/options.js';
import { MappingError } from '../profiles/names.js';
import { MAX_PARTITIONS } from './hash.js';
import { mergeReports } from './merge.js';

/** With `jobs: 'auto'`, inputs of at least this many bytes in all are analysed on every core. */
export const JOBS_MIN_BYTES = 64 * 1024 * 1024;

/** Worker threads `jobs: 'auto'` starts at most. */
export const MAX_AUTO_JOBS = 8;

/**
 * Cores `jobs: 'auto'` needs to start jobs at all. Every job reads and key-reads every line, so on
 * 2 cores two jobs take about 1.5x the CPU time of one thread and gain little wall time (more on a
 * busy machine: README "Scaling out"); from 3 cores on, the share of each job shrinks faster than
 * that fixed cost grows.
 */
export const MIN_AUTO_CORES = 3;

/** The number of jobs `auto` means for inputs of `bytes` in all, on `cores` cores. */
export function autoJobs(bytes: number, cores = availableParallelism()): number {
  return bytes >= JOBS_MIN_BYTES && cores >= MIN_AUTO_CORES ? Math.min(MAX_AUTO_JOBS, cores) : 1;
}

/** What a job's worker thread runs: analyze() of one partition, with plain data only. */
export interface JobSpec {
  files: readonly string[];
  recipe: ProfileRecipe;
  /** The analysis options that are plain data (no callbacks, no profile, no streams). */
  options: Record<string, unknown>;
  index: number;
  count: number;
  /** Pass on findings as they are final / problems / progress / notes. */
  findings: boolean;
  problems: boolean;
  progress: boolean;
  notes: boolean;
}

export type JobMessage =
  | { kind: 'finding'; finding: Finding }
  | { kind: 'problem'; problem: Problem }
  | { kind: 'progress'; progress: { file: string; bytes: number; lines: number } }
  | { kind: 'note'; note: string }
  | { kind: 'report'; report: Report }
  | { kind: 'error'; name: string; message: string; problem?: Problem; option?: string };

/** Thrown in the main thread for a job that failed: the job's error, by its name and message. */
export class JobError extends Error {
  constructor(
    name: string,
    message: string,
    readonly problem?: Problem,
    readonly option?: string,
  ) {
    super(message);
    this.name = name;
  }
}

/** The error a job sent, as the class it was (so the CLI says it as it would from one thread). */
function revive(m: Extract<JobMessage, { kind: 'error' }>): Error {
  switch (m.name) {
    case 'StrictInputError':
      return new StrictInputError(m.message, m.problem!);
    case 'OptionError':
      return new OptionError(m.option ?? 'options', m.message);
    case 'InputError':
      return new InputError(m.message);
    case 'MappingError':
      return new MappingError(m.message);
    default:
      return new JobError(m.name, m.message, m.problem, m.option);
  }
}

export interface JobCallbacks {
  onFinding?: (f: Finding) => void;
  onProblem?: (p: Problem) => void;
  onProgress?: (p: { file: string; bytes: number; lines: number }) => void;
  onNote?: (note: string) => void;
}

// The worker's code is always the built one (tests run the sources; a worker cannot load TypeScript).
const WORKER_URL = new URL('../../dist/partition/job-worker.js', import.meta.url);

/** Run the `count` partitions of one run on worker threads; the merged report. */
export async function runJobs(base: Omit<JobSpec, 'index' | 'count'>, count: number, callbacks: JobCallbacks): Promise<Report> {
  if (!(Number.isInteger(count) && count >= 1 && count <= MAX_PARTITIONS)) throw new RangeError(`jobs must be a whole number from 1 to ${MAX_PARTITIONS}`);
  const workers: Worker[] = [];
  const done = Array.from({ length: count }, (_, index) => {
    const spec: JobSpec = { ...base, index, count, progress: base.progress && index === 0, notes: base.notes && index === 0 };
    const worker = new Worker(WORKER_URL, { workerData: spec });
    workers.push(worker);
    return new Promise<Report>((resolve, reject) => {
      let report: Report | undefined;
      worker.on('message', (m: JobMessage) => {
        switch (m.kind) {
          case 'finding':
            callbacks.onFinding?.(Object.freeze(m.finding));
            break;
          case 'problem':
            callbacks.onProblem?.(m.problem);
            break;
          case 'progress':
            callbacks.onProgress?.(m.progress);
            break;
          case 'note':
            callbacks.onNote?.(m.note);
            break;
          case 'report':
            report = m.report;
            break;
          case 'error':
            reject(revive(m));
            break;
        }
      });
      worker.on('error', reject);
      worker.on('exit', (code) => {
        if (report !== undefined) resolve(report);
        else reject(new Error(`the job of partition ${index}/${count} stopped (exit ${code}) before its report`));
      });
    });
  });
  try {
    return mergeReports(await Promise.all(done));
  } finally {
    // One job failed: the others stop too.
    await Promise.all(workers.map((w) => w.terminate().catch(() => undefined)));
  }
}
