/**
 * One job of `--jobs` (jobs.ts): analyze() of one partition on this worker thread, with findings,
 * problems and progress passed to the main thread as they come, then the partition's report.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { analyzeJob } from '../analyze.js';
import { rebuildProfile } from '../profiles/index.js';
import type { JobMessage, JobSpec } from './jobs.js';
import { FedQueue, type FeedMessage } from './feed.js';
import { wireResources, wireTransfer } from './wire-resources.js';

const port = parentPort;
if (port !== null) void run(workerData as JobSpec, port);

async function run(spec: JobSpec, out: NonNullable<typeof parentPort>): Promise<void> {
  const send = (m: JobMessage) => out.postMessage(m);
  // The inputs the main thread reads for every job (feed.ts), by their index in spec.fed.
  const queues = spec.fed.map((_, file) => new FedQueue((batches) => send({ kind: 'ack', file, batches }), spec.ackEvery));
  out.on('message', (m: FeedMessage) => queues[m.file]!.push(m));
  const fed = new Map(spec.fed.map((path, i) => [path, queues[i]!]));
  try {
    const report = await analyzeJob({
      ...spec.options,
      files: spec.files,
      profile: rebuildProfile(spec.recipe),
      partition: { index: spec.index, count: spec.count },
      jobs: 1,
      onFinding: spec.findings ? (finding) => send({ kind: 'finding', finding }) : undefined,
      onProblem: spec.problems ? (problem) => send({ kind: 'problem', problem }) : undefined,
      onProgress: spec.progress ? (progress) => send({ kind: 'progress', progress: { ...progress } }) : undefined,
      onNote: spec.notes ? (note) => send({ kind: 'note', note }) : undefined,
    }, { fed: (path) => fed.get(path) });
    // The summaries in columns, handed over (wire-resources.ts); the rest of the report cloned.
    const wire = wireResources(report.resources);
    if (wire === undefined) send({ kind: 'report', report: { ...report, resources: [...report.resources] } });
    else out.postMessage({ kind: 'report', report: { ...report, resources: [] }, resources: wire } satisfies JobMessage, wireTransfer(wire));
  } catch (err) {
    const e = err as Error & { problem?: { file: string; line: number; reason: string }; option?: string };
    send({ kind: 'error', name: e?.name ?? 'Error', message: e?.message ?? String(err), problem: e?.problem, option: e?.option });
  }
  out.close();
}
