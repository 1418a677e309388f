/**
 * One input, from byte chunks to batches of canonical events: lines, container log wrappers
 * unwrapped (wrappers.ts), records, events, every line counted in the input's summary. Shared by
 * the main thread and the parsing worker threads.
 */
import type { LockEvent } from '../model/event.js';
import type { FileSummary } from '../model/report.js';
import { canonical } from '../profiles/canonical.js';
import type { Profile } from '../profiles/types.js';
import { decodeBatch, decodeLine, DEFAULT_MAX_LINE_BYTES, isByteBatch, readLineBytes, readLines, type ByteLineBatch, type LineBatch } from './lines.js';
import { InputError } from './open.js';
import { firstContentLine, toEvents, type InputStats } from './records.js';
import type { PartitionFilter } from './partition.js';
import { DETECT_LINES, isBlank, Unwrapper, WrapperGate } from './wrappers.js';

export async function* parseSource(
  chunks: AsyncIterable<Buffer>,
  name: string,
  profile: Profile,
  stats: InputStats,
  summary: FileSummary,
  maxLineBytes: number | undefined,
  /** The input is a plain file that can be read again: events keep where their line is, not the line (see readback.ts). */
  byReference = false,
  /** A partition run: only this partition's events, and placeholders for the others' (partition.ts). */
  part?: PartitionFilter,
  /**
   * An input not read by reference, parsed on the main thread: its lines are read as bytes too,
   * so that a long line goes the byte path (toEvents' `longLines`); its other lines are decoded
   * and parsed as before.
   */
  longLines = false,
  /**
   * Live input (stdin, a pipe, a stream) that may go quiet or trickle: the first batches held
   * while the container log wrapper is undecided (WrapperGate) wait at most this many ms from the
   * first of them, then go on decided from the lines seen, so that no finding of theirs waits for
   * lines that have not come.
   */
  quietMs?: number,
): AsyncGenerator<{ events: LockEvent[]; lines: number }> {
  const unwrapper = new Unwrapper(maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
  const asBytes = byReference || (longLines && part === undefined);
  const events = eventsOf(name, profile, stats, summary, byReference, part, unwrapper, asBytes && !byReference);
  // The wrapper is decided from the input's first lines, whatever batches they come in: the
  // batches with them are held until it is (wrappers.ts).
  const gate = new WrapperGate<LineBatch | ByteLineBatch>(
    unwrapper,
    (raw) => (isByteBatch(raw) ? sampleOf(raw) : raw.lines),
    // A byte batch's chunk is valid only until the next batch is read (lines.ts).
    (raw) => (isByteBatch(raw) ? { ...raw, chunk: Buffer.from(raw.chunk) } : raw),
  );
  const one = (raw: LineBatch | ByteLineBatch): { events: LockEvent[]; lines: number } => {
    const lines = raw.lines.length;
    // Lines by reference are read as bytes, and decoded only when the profile's byte path is not
    // to take them: until the wrapper and the profile are known, and for wrapped inputs.
    if (isByteBatch(raw)) return { events: events(unwrapper.kind === null ? raw : unwrapper.push(decodeBatch(raw))), lines };
    return { events: events(unwrapper.push(raw)), lines };
  };
  const it = (asBytes ? readLineBytes(chunks, { maxLineBytes }) : readLines(chunks, { maxLineBytes }))[Symbol.asyncIterator]();
  let done = false;
  /** A read under way while the held batches went on (quietMs): not waited for if the run stops. */
  let reading: Promise<unknown> | undefined;
  /** When the gate began to hold (Date.now()). */
  let heldSince = 0;
  try {
    for (;;) {
      let r: IteratorResult<LineBatch | ByteLineBatch>;
      if (quietMs !== undefined && gate.holding) {
        const next = it.next();
        let timer: NodeJS.Timeout | undefined;
        const quiet = new Promise<'quiet'>((resolve) => (timer = setTimeout(resolve, Math.max(0, heldSince + quietMs - Date.now()), 'quiet')));
        const first = await Promise.race([next, quiet]).finally(() => clearTimeout(timer));
        if (first === 'quiet') {
          reading = next;
          // Awaited below, unless the run stops first: a failed read then is no unhandled rejection.
          next.catch(() => undefined);
          for (const raw of gate.settle()) yield one(raw);
          r = await next;
          reading = undefined;
        } else r = first;
      } else r = await it.next();
      if (r.done) break;
      const holding = gate.holding;
      const out = gate.offer(r.value);
      if (!holding && gate.holding) heldSince = Date.now();
      for (const raw of out) yield one(raw);
    }
    done = true;
  } catch (err) {
    // Another error (--strict's, thrown while this input's lines were made events): the finally
    // closes the reader, whose file is open.
    if (!(err instanceof InputError)) throw err;
    done = true;
    // The input broke off (truncated gzip, read error): keep what was read, and say so.
    summary.error = err.message;
  } finally {
    // Stopped early (the consumer returned, or an error other than the reader's): the reader is
    // closed, as `for await` closes it.
    if (!done) {
      const closing = it.return?.(undefined);
      if (reading === undefined) await closing;
      else void Promise.resolve(closing).catch(() => undefined);
    }
  }
  // The input ended before the wrapper was decided: decided from the lines it had.
  for (const raw of gate.settle()) yield one(raw);
  // Partial lines whose last piece never came (a rotated or cut-off container log).
  const rest = unwrapper.end();
  if (rest !== undefined) yield { events: events(rest), lines: 0 };
}

/** Lines → events of one input, its profile detected from its first content line (shared by parseSource and parseFed). */
function eventsOf(name: string, profile: Profile, stats: InputStats, summary: FileSummary, byReference: boolean, part: PartitionFilter | undefined, unwrapper: Unwrapper | undefined, longLines = false): (batch: LineBatch | ByteLineBatch) => LockEvent[] {
  let chosen = profile.detect === undefined ? profile : undefined;
  // Whether the input is of the kind its profile expects to be mostly no events (Profile.sparse) is
  // told from its first content line, like the profile of `auto`.
  let kindKnown = false;
  const firstOf = (batch: LineBatch | ByteLineBatch) => (isByteBatch(batch) ? firstContentLine({ firstLine: batch.firstLine, lines: batch.sample ?? sampleOf(batch) }) : firstContentLine(batch));
  return (batch) => {
    if (unwrapper !== undefined && unwrapper.kind != null) summary.wrapper = unwrapper.kind;
    let first: string | undefined;
    if (chosen === undefined) {
      first = firstOf(batch);
      chosen = first === undefined ? undefined : profile.detect!(first);
      if (chosen === undefined) {
        // Only blank or over-long lines so far: count them; any profile does.
        toEvents(batch, canonical, name, name, stats, summary, false, part);
        return [];
      }
      summary.profile = chosen.name;
    }
    // Facts about the input (rules read the service by the events' file): set after the wrapper
    // and the profile, in the order a parsing worker's summary is copied (threaded.ts).
    if (chosen.service !== undefined) summary.service = chosen.service;
    if (!kindKnown) {
      if (chosen.sparse === 'text') first ??= firstOf(batch);
      kindKnown = chosen.sparse !== 'text' || first !== undefined;
      if (chosen.sparse === 'all' || (chosen.sparse === 'text' && first !== undefined && !first.trimStart().startsWith('{'))) summary.sparse = true;
    }
    return toEvents(batch, chosen, name, name, stats, summary, byReference, part, longLines);
  };
}

/** What the reader of `--jobs` sends a job for one input (partition/feed.ts): its line batches, then its end. */
export type FedItem = { batch: ByteLineBatch } | { end: true; error?: string };

/**
 * parseSource for a plain file (read by reference, no container log wrapper) whose lines the one
 * reader of `--jobs` splits and key-reads on the main thread: the batches it hands this job hold
 * the bytes of this partition's lines (and of the lines its key reader declined), and what the
 * placeholders of the other partitions' lines need (ByteLineBatch.looks).
 */
export async function* parseFed(items: AsyncIterable<FedItem>, name: string, profile: Profile, stats: InputStats, summary: FileSummary, part: PartitionFilter, byReference = true): AsyncGenerator<{ events: LockEvent[]; lines: number }> {
  const events = eventsOf(name, profile, stats, summary, byReference, part, undefined);
  for await (const item of items) {
    if ('batch' in item) {
      yield { events: events(item.batch), lines: item.batch.lines.length };
      continue;
    }
    if (item.error !== undefined) summary.error = item.error;
    return;
  }
}

/**
 * The first lines of a batch of bytes, decoded, up to the DETECT_LINES-th that is not blank: all
 * that wrapper and profile detection look at (detectWrapper, firstContentLine).
 */
export function sampleOf(batch: ByteLineBatch): (string | null)[] {
  const out: (string | null)[] = [];
  let seen = 0;
  for (let i = 0; i < batch.lines.length && seen < DETECT_LINES; i++) {
    const l = batch.lines[i];
    const text = l === undefined ? decodeLine(batch, i).text : l;
    out.push(text);
    if (text !== null && !isBlank(text)) seen++;
  }
  return out;
}
