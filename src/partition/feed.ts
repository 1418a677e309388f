/**
 * The one reader of `--jobs` (README "Scaling out"). The main thread reads each plain input file
 * once, splits its lines and reads each line's resource key with the profile's key reader
 * (profiles/canonical-key.ts), then hands every job the same batch per chunk, in shared memory
 * (SharedArrayBuffer: read into it, or copied once, never per job, and written by no one once
 * sent): the chunk's bytes, where each line is, and per line the partition the key reader read, with the time and
 * source a placeholder of it needs (ingest/partition.ts). A job parses only the lines of its own
 * partition (and those the key reader declined, which every job parses), and places the others
 * in its merge from the columns. So no job reads, splits or key-reads a line again.
 *
 * Every job gets one entry per line of the input, in order, so each job counts every line as a
 * partition run does (`otherPartitions`), and the report is the one a job reading the file itself
 * would write. An input that is not a plain file as read by reference (gzip, a container log, a
 * first chunk that does not tell its wrapper) is read by every job itself, as before.
 *
 * Bounded: at most WINDOW batches of one input are in flight, MIN_WINDOW or more of each of
 * several (the jobs share them); the next chunk of an input is read only when every job has room
 * for it, so the reader never runs ahead of the slowest job by more than that.
 */
import { isByteBatch, NOT_LOOKED, readLineBytes, type ByteLineBatch, type LineBatch } from '../ingest/lines.js';
import { fileSource, InputError, READ_CHUNK } from '../ingest/open.js';
import { sampleOf, type FedItem } from '../ingest/parse-source.js';
import { lookLines, PartitionFilter } from '../ingest/partition.js';
import { firstContentLine } from '../ingest/records.js';
import { noWrapperLine } from '../ingest/wrappers.js';
import type { Profile } from '../profiles/types.js';

/** Bytes per chunk the reader reads: fewer, larger messages than a job's own 256 KiB reads. */
export const FEED_CHUNK = 4 * READ_CHUNK;

/**
 * Batches of one input sent to a job before it has taken one, with one input: deep enough that
 * the reader and the jobs rarely wait for each other on a busy machine. The jobs share each batch,
 * so this many chunks are held whatever the number of jobs. With several inputs (each read at
 * once) it is shared out: WINDOW / inputs each, at least MIN_WINDOW.
 */
export const WINDOW = 16;
/** Batches of one of several inputs in flight at least. */
export const MIN_WINDOW = 4;
/** With many inputs (each read at once, see analyze's MANY_FILES), fewer. */
export const MANY_INPUTS_WINDOW = 1;

/** One batch as sent to every job: typed arrays in shared memory (read only), texts only for lines decoded already. */
export interface WireBatch {
  firstLine: number;
  n: number;
  /** Lines decoded by the splitter (over chunks) or over the cap (null), by index. */
  texts?: [number, string | null][];
  invalidUtf8?: number[];
  chunk: Uint8Array;
  starts: Int32Array;
  ends: Int32Array;
  offsets?: Float64Array;
  lengths?: Float64Array;
  looks: Int32Array;
  lookTs: Float64Array;
  lookSource: Int32Array;
  lookSources: string[];
  sample?: (string | null)[];
}

/** Main thread → job, for input `file` (an index into JobSpec.fed). */
export type FeedMessage = { kind: 'feed'; file: number; batch: WireBatch } | { kind: 'feed-end'; file: number; error?: string } | { kind: 'feed-self'; file: number };

/** A job's side: the ByteLineBatch a WireBatch stands for. */
export function unwire(w: WireBatch): ByteLineBatch {
  const lines: (string | null | undefined)[] = new Array(w.n).fill(undefined);
  for (const [i, t] of w.texts ?? []) lines[i] = t;
  return {
    firstLine: w.firstLine,
    lines,
    invalidUtf8: w.invalidUtf8 === undefined ? undefined : new Set(w.invalidUtf8),
    offsets: w.offsets,
    lengths: w.lengths,
    chunk: Buffer.from(w.chunk.buffer, w.chunk.byteOffset, w.chunk.byteLength),
    starts: w.starts,
    ends: w.ends,
    looks: w.looks,
    lookTs: w.lookTs,
    lookSource: w.lookSource,
    lookSources: w.lookSources,
    sample: w.sample,
  };
}

/**
 * A job's side: the items of one fed input, from its messages; the batches taken are acknowledged
 * (`ack`) every `every` of them (Feeder.ackEvery: fewer messages between the threads).
 */
export class FedQueue implements AsyncIterable<FedItem | { self: true }> {
  private readonly items: (FedItem | { self: true })[] = [];
  private wake: (() => void) | undefined;
  private taken = 0;

  constructor(
    private readonly ack: (batches: number) => void,
    private readonly every = 1,
  ) {}

  push(m: FeedMessage): void {
    this.items.push(m.kind === 'feed' ? { batch: unwire(m.batch) } : m.kind === 'feed-end' ? { end: true, error: m.error } : { self: true });
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<FedItem | { self: true }> {
    for (;;) {
      while (this.items.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
      const item = this.items.shift()!;
      if ('batch' in item && ++this.taken === this.every) {
        this.ack(this.taken);
        this.taken = 0;
      }
      yield item;
      if (!('batch' in item)) return;
    }
  }
}

export interface FeedOptions {
  /** The inputs to read, in JobSpec.fed order. */
  files: readonly string[];
  /** The profile as the jobs rebuild it (its detection and key reader). */
  profile: Profile;
  jobs: number;
  maxLineBytes?: number;
  /** Read each input by reopening it per chunk (many inputs, see analyze's MANY_FILES). */
  reopen: boolean;
  post: (job: number, m: FeedMessage, transfer: ArrayBuffer[]) => void;
  /** Bytes and lines read, after each batch. */
  onRead?: (file: string, bytes: number, lines: number) => void;
}

/** The main thread's reader for the fed inputs of one `--jobs` run. */
export class Feeder {
  /** Batches in flight, by job and input. */
  private readonly inFlight: Int32Array;
  private readonly waiting: ((() => void) | undefined)[];
  private stopped = false;
  private readonly window: number;

  constructor(private readonly o: FeedOptions) {
    this.inFlight = new Int32Array(o.jobs * o.files.length);
    this.waiting = new Array(o.files.length).fill(undefined);
    this.window = o.reopen ? MANY_INPUTS_WINDOW : Math.max(MIN_WINDOW, Math.floor(WINDOW / o.files.length));
  }

  /**
   * How many batches a job takes before it says so (ack): a quarter of the window, so the reader
   * rarely waits, and never more than what it keeps in flight (a job that waits for a batch has
   * acknowledged every batch but fewer than this, which leaves the reader room to send one).
   */
  get ackEvery(): number {
    return Math.max(1, Math.floor(this.window / 4));
  }

  /** A job took `batches` batches of input `file`. */
  ack(job: number, file: number, batches = 1): void {
    this.inFlight[job * this.o.files.length + file]! -= batches;
    const w = this.waiting[file];
    if (w !== undefined && this.hasRoom(file)) {
      this.waiting[file] = undefined;
      w();
    }
  }

  /** Stop reading (the run ended or failed). */
  stop(): void {
    this.stopped = true;
    for (let f = 0; f < this.waiting.length; f++) {
      const w = this.waiting[f];
      this.waiting[f] = undefined;
      w?.();
    }
  }

  /** Read every input to its end (or until stopped). */
  async run(): Promise<void> {
    await Promise.all(this.o.files.map((_, f) => this.read(f)));
  }

  private hasRoom(file: number): boolean {
    const n = this.o.files.length;
    for (let j = 0; j < this.o.jobs; j++) if (this.inFlight[j * n + file]! >= this.window) return false;
    return true;
  }

  private room(file: number): Promise<void> | undefined {
    if (this.stopped || this.hasRoom(file)) return undefined;
    return new Promise<void>((resolve) => (this.waiting[file] = resolve));
  }

  private all(m: FeedMessage): void {
    for (let j = 0; j < this.o.jobs; j++) this.o.post(j, m, []);
  }

  private async read(file: number): Promise<void> {
    const path = this.o.files[file]!;
    const { profile, jobs } = this.o;
    let bytes = 0;
    async function* counted(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
      for await (const c of chunks) {
        bytes += c.length;
        yield c;
      }
    }
    // Read into shared memory (but when reopening): each chunk goes to the jobs as it was read.
    const source = fileSource(path, this.o.reopen ? { reopen: true } : { chunkBytes: FEED_CHUNK, shared: true });
    const it = readLineBytes(counted(source.open()), { maxLineBytes: this.o.maxLineBytes })[Symbol.asyncIterator]();
    const part = new PartitionFilter({ index: 0, count: jobs });
    let chosen = profile.detect === undefined ? profile : undefined;
    let first = true;
    let error: string | undefined;
    try {
      for (;;) {
        const wait = this.room(file);
        if (wait !== undefined) await wait;
        if (this.stopped) return;
        const r = await it.next();
        if (r.done) break;
        const raw = r.value;
        if (first) {
          first = false;
          // Only an input that is plainly no container log is fed: one whose first DETECT_LINES
          // non-blank lines, which the wrapper is decided from (wrappers.ts), are in this batch
          // and none of them is in a wrapper's form. Any other input (a container log, or one
          // whose first such lines are not all in its first megabytes) is read by every job
          // itself, as one thread reads it.
          if (!noWrapperLine(isByteBatch(raw) ? sampleOf(raw) : raw.lines)) {
            this.all({ kind: 'feed-self', file });
            return;
          }
        }
        let sample: (string | null)[] | undefined;
        if (chosen === undefined) {
          sample = isByteBatch(raw) ? sampleOf(raw) : (raw.lines as (string | null)[]);
          const line = firstContentLine({ firstLine: raw.firstLine, lines: sample });
          chosen = line === undefined ? undefined : profile.detect!(line);
        }
        this.send(file, raw, chosen, part, sample);
        this.o.onRead?.(path, bytes, raw.lines.length);
        bytes = 0;
      }
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      // The input broke off: what was read is kept, and its summary says so (as parseSource does).
      error = err.message;
    } finally {
      // Stopped, or left to the jobs (feed-self): the file is closed now, not when collected.
      await it.return?.(undefined).catch(() => undefined);
    }
    if (!this.stopped) this.all({ kind: 'feed-end', file, error });
  }

  /**
   * One batch of lines to every job. The chunk (read into shared memory, or copied there once)
   * and the columns are in shared memory (SharedArrayBuffer), which every job reads and none writes: a job parses the lines of its own
   * partition (and those the key reader declined) from the chunk, and places every other line in
   * its merge from the columns. No line is copied per job.
   */
  private send(file: number, raw: LineBatch | ByteLineBatch, chosen: Profile | undefined, part: PartitionFilter, sample: (string | null)[] | undefined): void {
    const jobs = this.o.jobs;
    const n = raw.lines.length;
    const byte = isByteBatch(raw) ? raw : undefined;
    const looks = sharedInt32(n).fill(NOT_LOOKED);
    const lookTs = sharedFloat64(n);
    const lookSource = sharedInt32(n).fill(-1);
    const starts = sharedInt32(n);
    const ends = sharedInt32(n);
    // Before the profile is known every line is blank or over the cap; a blank line is looked at by the job.
    const lookSources = chosen === undefined || byte === undefined ? [] : lookLines(part, chosen, byte, looks, lookTs, lookSource);
    let texts: [number, string | null][] | undefined;
    const src = byte?.chunk;
    // The bytes from the first whole line's start to the last one's end: the rest of the chunk
    // (a line carried over from the previous chunk, the start of the next one) is sent as text.
    let from = -1;
    let to = 0;
    for (let i = 0; i < n; i++) {
      const l = raw.lines[i];
      if (l !== undefined) {
        (texts ??= []).push([i, l]);
        continue;
      }
      const s = byte!.starts[i]!;
      const e = byte!.ends[i]!;
      if (from === -1) from = s;
      to = e;
      starts[i] = s;
      ends[i] = e;
    }
    // The chunk's bytes the lines are in, at the same places less `from`: the chunk itself when it
    // was read into shared memory (never written again), else a copy.
    const base = from === -1 ? 0 : from;
    const size = Math.max(0, to - base);
    let chunk: Uint8Array;
    if (src !== undefined && src.buffer instanceof SharedArrayBuffer) chunk = new Uint8Array(src.buffer, src.byteOffset + base, size);
    else {
      chunk = new Uint8Array(new SharedArrayBuffer(size));
      if (src !== undefined && to > base) chunk.set(src.subarray(base, to));
    }
    if (base !== 0) {
      for (let i = 0; i < n; i++) {
        if (raw.lines[i] !== undefined) continue;
        starts[i] -= base;
        ends[i] -= base;
      }
    }
    const offsets = raw.offsets === undefined ? undefined : sharedFloat64(n, raw.offsets);
    const lengths = raw.lengths === undefined ? undefined : sharedFloat64(n, raw.lengths);
    const invalidUtf8 = raw.invalidUtf8 === undefined ? undefined : [...raw.invalidUtf8];
    const batch: WireBatch = { firstLine: raw.firstLine, n, texts, invalidUtf8, chunk, starts, ends, offsets, lengths, looks, lookTs, lookSource, lookSources, sample };
    const n1 = this.o.files.length;
    for (let j = 0; j < jobs; j++) {
      this.inFlight[j * n1 + file]!++;
      this.o.post(j, { kind: 'feed', file, batch }, []);
    }
  }
}

/** An Int32Array of `n` in shared memory (zero-filled). */
function sharedInt32(n: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(n * 4));
}

/** A Float64Array of `n` in shared memory, with `values` when given. */
function sharedFloat64(n: number, values?: ArrayLike<number>): Float64Array {
  const a = new Float64Array(new SharedArrayBuffer(n * 8));
  if (values !== undefined) a.set(values);
  return a;
}
