/**
 * `--jobs N` (README "Scaling out"): the partitions of one run on N worker threads of this
 * process, each analysing the resources of its partition, their reports merged in memory
 * (mergeReports), so the report is the one a single thread writes. The main thread reads each
 * plain input once and hands each job only its own lines (feed.ts); other inputs (gzip, container
 * logs) every job reads itself. Findings are passed on as soon as their partition has them (live
 * ndjson), problems and progress as they come.
 */
import { Worker } from 'node:worker_threads';
import type { Finding, Problem, Report, ReportView } from '../model/report.js';
import type { ProfileRecipe } from '../profiles/types.js';
import { InputError } from '../ingest/open.js';
import { StrictInputError } from '../ingest/records.js';
import { OptionError } from '../model/options.js';
import { MappingError } from '../profiles/names.js';
import { MAX_PARTITIONS } from './hash.js';
import { mergeReports, mergeReportView, type PartitionReport } from './merge.js';
import type { WireResources } from './wire-resources.js';
import { Feeder } from './feed.js';
// How many jobs `auto` means lives apart (auto.ts): deciding it loads none of this.
export { autoJobs, JOBS_MIN_BYTES, MAX_AUTO_JOBS, MIN_AUTO_CORES } from './auto.js';
import type { Profile } from '../profiles/types.js';

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
  /** The inputs the main thread reads and hands out (feed.ts), as named in `files`. */
  fed: readonly string[];
  /** Fed batches taken before the job says so (Feeder.ackEvery). */
  ackEvery?: number;
}

export type JobMessage =
  | { kind: 'finding'; finding: Finding }
  | { kind: 'problem'; problem: Problem }
  | { kind: 'progress'; progress: { file: string; bytes: number; lines: number } }
  | { kind: 'note'; note: string }
  /** The partition's report; its summaries in columns (`resources`, wire-resources.ts) when the job could. */
  | { kind: 'report'; report: Report; resources?: WireResources }
  /** The job took a batch of fed input `file` (feed.ts): the reader may read on. */
  | { kind: 'ack'; file: number; batches: number }
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

/** How the main thread reads the fed inputs (JobSpec.fed): the profile as the jobs rebuild it, the options of the line reader. */
export interface FeedSpec {
  profile: Profile;
  maxLineBytes?: number;
  reopen: boolean;
}

/** Run the `count` partitions of one run on worker threads; the merged report. */
export async function runJobs(base: Omit<JobSpec, 'index' | 'count'>, count: number, callbacks: JobCallbacks, feed?: FeedSpec, made = false): Promise<ReportView> {
  if (!(Number.isInteger(count) && count >= 1 && count <= MAX_PARTITIONS)) throw new RangeError(`jobs must be a whole number from 1 to ${MAX_PARTITIONS}`);
  const workers: Worker[] = [];
  // Progress: the fed inputs' as the main thread reads them, plus job 0's of the inputs it reads itself.
  const read = { bytes: 0, lines: 0 };
  const own = { bytes: 0, lines: 0 };
  const progress = (file: string) => callbacks.onProgress?.({ file, bytes: read.bytes + own.bytes, lines: read.lines + own.lines });
  const fed = feed === undefined ? [] : base.fed;
  const feeder =
    fed.length === 0
      ? undefined
      : new Feeder({
          files: fed,
          profile: feed!.profile,
          jobs: count,
          maxLineBytes: feed!.maxLineBytes,
          reopen: feed!.reopen,
          post: (j, m, transfer) => workers[j]!.postMessage(m, transfer),
          onRead:
            callbacks.onProgress === undefined
              ? undefined
              : (file, bytes, lines) => {
                  read.bytes += bytes;
                  read.lines += lines;
                  progress(file);
                },
        });
  const done = Array.from({ length: count }, (_, index) => {
    const spec: JobSpec = { ...base, fed, ackEvery: feeder?.ackEvery ?? 1, index, count, progress: base.progress && index === 0, notes: base.notes && index === 0 };
    const worker = new Worker(WORKER_URL, { workerData: spec });
    workers.push(worker);
    return new Promise<PartitionReport>((resolve, reject) => {
      let report: PartitionReport | undefined;
      worker.on('message', (m: JobMessage) => {
        switch (m.kind) {
          case 'finding':
            callbacks.onFinding?.(Object.freeze(m.finding));
            break;
          case 'problem':
            callbacks.onProblem?.(m.problem);
            break;
          case 'ack':
            feeder?.ack(index, m.file, m.batches);
            break;
          case 'progress':
            own.bytes = m.progress.bytes;
            own.lines = m.progress.lines;
            progress(m.progress.file);
            break;
          case 'note':
            callbacks.onNote?.(m.note);
            break;
          case 'report':
            report = m.resources === undefined ? m.report : { ...m.report, resources: m.resources };
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
    const reading = feeder?.run();
    // A read that fails (not an input that breaks off: the jobs are told of that) fails the run.
    const [reports] = await Promise.all([Promise.all(done), reading]);
    return made ? mergeReportView(reports) : mergeReports(reports);
  } finally {
    feeder?.stop();
    // One job failed: the others stop too.
    await Promise.all(workers.map((w) => w.terminate().catch(() => undefined)));
  }
}
