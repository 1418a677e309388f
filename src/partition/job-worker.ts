/**
 * One job of `--jobs` (jobs.ts): analyze() of one partition on this worker thread, with findings,
 * problems and progress passed to the main thread as they come, then the partition's report.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { analyze } from '../analyze.js';
import { rebuildProfile } from '../profiles/index.js';
import type { JobMessage, JobSpec } from './jobs.js';
import { FedQueue, type FeedMessage } from './feed.js';

const port = parentPort;
if (port !== null) void run(workerData as JobSpec, port);

async function run(spec: JobSpec, out: NonNullable<typeof parentPort>): Promise<void> {
  const send = (m: JobMessage) => out.postMessage(m);
  // The inputs the main thread reads for every job (feed.ts), by their index in spec.fed.
  const queues = spec.fed.map((_, file) => new FedQueue(() => send({ kind: 'ack', file })));
  out.on('message', (m: FeedMessage) => queues[m.file]!.push(m));
  const fed = new Map(spec.fed.map((path, i) => [path, queues[i]!]));
  try {
    const report = await analyze({
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
    send({ kind: 'report', report });
  } catch (err) {
    const e = err as Error & { problem?: { file: string; line: number; reason: string }; option?: string };
    send({ kind: 'error', name: e?.name ?? 'Error', message: e?.message ?? String(err), problem: e?.problem, option: e?.option });
  }
  out.close();
}
