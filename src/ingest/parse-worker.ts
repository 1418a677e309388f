/**
 * A parsing worker thread: reads one input file, splits, parses and maps its lines exactly as the
 * main thread would (parseSource), and hands the events back in order as columns (handover.ts),
 * with the counts and the invalid lines of each batch. The main thread keeps the merge, the
 * engine and the accounting policy (strict, --max-invalid, the listed problems), so results do not
 * depend on whether a worker parsed the file. At most WINDOW batches are in flight.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { rebuildProfile } from '../profiles/index.js';
import type { ProfileRecipe } from '../profiles/types.js';
import { BatchEncoder, transferList } from './handover.js';
import { fileSource } from './open.js';
import { parseSource } from './parse-source.js';
import { InputStats } from './records.js';
import type { FileSummary } from '../model/report.js';

export interface ParseJob {
  path: string;
  /** The input's name in `file:line` and its default source. */
  name: string;
  recipe: ProfileRecipe;
  maxLineBytes?: number;
}

/** Batches sent before the main thread must take one. */
export const WINDOW = 4;

export type WorkerMessage =
  | { kind: 'batch'; batch: import('./handover.js').EncodedBatch; lines: number; bytes: number; problems: [number, string][]; summary: FileSummary }
  | { kind: 'end'; problems: [number, string][]; summary: FileSummary };

const port = parentPort;
if (port !== null) void run(workerData as ParseJob, port);

async function run(job: ParseJob, out: NonNullable<typeof parentPort>): Promise<void> {
  let credits = WINDOW;
  let wake: (() => void) | undefined;
  out.on('message', (n: number) => {
    credits += n;
    wake?.();
  });
  const profile = rebuildProfile(job.recipe);
  let problems: [number, string][] = [];
  // Problems are only forwarded here; the main thread counts, lists and judges them.
  const stats = new InputStats({ maxProblems: 0, onProblem: (p) => problems.push([p.line, p.reason]) });
  const summary = stats.addFile(job.name);
  const encoder = new BatchEncoder(job.name);
  let bytes = 0;
  async function* counted(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const c of chunks) {
      bytes += c.length;
      yield c;
    }
  }
  for await (const { events, lines } of parseSource(counted(fileSource(job.path).open()), job.name, profile, stats, summary, job.maxLineBytes)) {
    const batch = encoder.encode(events);
    while (credits <= 0) await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
    credits--;
    const message: WorkerMessage = { kind: 'batch', batch, lines, bytes, problems, summary };
    out.postMessage(message, transferList(batch));
    problems = [];
    bytes = 0;
  }
  const end: WorkerMessage = { kind: 'end', problems, summary };
  out.postMessage(end);
  out.close();
}
