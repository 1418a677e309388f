/**
 * Bytes → numbered lines. A byte splitter on '\n' (not the ndjson package: it stops at the first
 * bad line and has no line numbers). Handles CRLF, a BOM on line 1, a last line without a newline,
 * multi-byte UTF-8 across chunk boundaries (lines are decoded whole) and a cap on line length:
 * a longer line is skipped without being kept in memory, and reported.
 */

import { isUtf8 } from 'node:buffer';

export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/** A batch of consecutive lines. `lines[i]` is line `firstLine + i`; `null` marks a line over the cap. */
export interface LineBatch {
  readonly firstLine: number;
  readonly lines: (string | null)[];
  /** Lines (by index in `lines`) whose bytes are not valid UTF-8. */
  readonly invalidUtf8?: Set<number>;
  /**
   * Set when the lines are not consecutive (unwrapped container logs, see wrappers.ts): the line
   * number of each, the first physical line of a joined one.
   */
  readonly lineNumbers?: readonly number[];
  /** The container wrapper's time of each line (RFC 3339), for records without a timestamp of their own. */
  readonly times?: readonly (string | undefined)[];
  /** Physical lines merged into a following line of this batch (partial container log lines). */
  readonly joined?: number;
  /**
   * The byte offset in the input of each line (`lines[i]` starts at `offsets[i]`) and its length
   * in bytes before the newline: what reads the line back for evidence (ingest/readback.ts).
   * Absent where lines are not the input's bytes as they are (unwrapped container logs).
   */
  readonly offsets?: ArrayLike<number>;
  readonly lengths?: ArrayLike<number>;
}

/**
 * A batch of lines whose bytes are not decoded yet (readLineBytes): `lines[i]` is `undefined`
 * for a line that lies whole in `chunk`, at [starts[i], ends[i]) (its BOM and CR already left
 * out); such a line is decoded only when something needs its text (decodeLine). Lines over the
 * cap are `null`. A line that spanned chunks is not decoded either: its pieces are joined into a
 * buffer of its own, given as a batch of that one line (so a long line is never made a string
 * unless something needs its text). `invalidUtf8` only knows of the decoded ones.
 */
export interface ByteLineBatch extends Omit<LineBatch, 'lines'> {
  readonly lines: (string | null | undefined)[];
  /** The chunk the undecoded lines are in: valid only until the next batch is asked for. */
  readonly chunk: Buffer;
  readonly starts: ArrayLike<number>;
  readonly ends: ArrayLike<number>;
  /**
   * Set on the batches the one reader of `--jobs` hands a job (partition/feed.ts): per line, the
   * partition its key reader read (the line's bytes are in `chunk` only for the job's own
   * partition), DECLINED_LOOK (the key reader declined it: every job parses it), or NOT_LOOKED
   * (blank, over the cap, or a line decoded already: looked at as usual). For another partition's
   * line, the time and the source (an index into `lookSources`, -1 for the input's default) the
   * key reader read, which is all its placeholder needs.
   */
  readonly looks?: Int32Array;
  readonly lookTs?: Float64Array;
  readonly lookSource?: Int32Array;
  readonly lookSources?: readonly string[];
  /** The batch's first lines, decoded (sampleOf), for profile detection where the bytes of other partitions' lines are not in `chunk`. */
  readonly sample?: (string | null)[];
}

/** ByteLineBatch.looks: the key reader declined the line. */
export const DECLINED_LOOK = -1;
/** ByteLineBatch.looks: the key reader has not looked at the line. */
export const NOT_LOOKED = -2;

export interface LineReaderOptions {
  maxLineBytes?: number;
}

export function readLines(chunks: AsyncIterable<Buffer>, options: LineReaderOptions = {}): AsyncGenerator<LineBatch> {
  return split(chunks, options, true) as AsyncGenerator<LineBatch>;
}

/** readLines without decoding the lines that lie whole in a chunk (see ByteLineBatch). */
export function readLineBytes(chunks: AsyncIterable<Buffer>, options: LineReaderOptions = {}): AsyncGenerator<LineBatch | ByteLineBatch> {
  return split(chunks, options, false);
}

/** Whether a batch of readLineBytes has undecoded lines (the last lines of an input may all be decoded). */
export function isByteBatch(batch: LineBatch | ByteLineBatch): batch is ByteLineBatch {
  return (batch as ByteLineBatch).chunk !== undefined;
}

/** The text of undecoded line `i` of a batch, and whether its bytes are valid UTF-8. */
export function decodeLine(batch: ByteLineBatch, i: number): { text: string; badUtf8: boolean } {
  const text = decodeRange(batch.chunk, batch.starts[i]!, batch.ends[i]!);
  const bad = badUtf8;
  badUtf8 = false;
  return { text, badUtf8: bad };
}

/** Every line of a batch decoded: the batch as readLines gives it. */
export function decodeBatch(batch: ByteLineBatch): LineBatch {
  const lines: (string | null)[] = [];
  const bad: { set?: Set<number> } = {};
  for (const i of batch.invalidUtf8 ?? []) (bad.set ??= new Set()).add(i);
  for (let i = 0; i < batch.lines.length; i++) {
    const l = batch.lines[i];
    if (l !== undefined) lines.push(l);
    else push(lines, decodeRange(batch.chunk, batch.starts[i]!, batch.ends[i]!), bad);
  }
  const { chunk: _c, starts: _s, ends: _e, ...rest } = batch;
  return { ...rest, lines, invalidUtf8: bad.set };
}

async function* split(chunks: AsyncIterable<Buffer>, options: LineReaderOptions, decodeAll: boolean): AsyncGenerator<LineBatch | ByteLineBatch> {
  const max = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  // Bytes of the current, unfinished line, as copied pieces: joined once, when the line ends (a
  // line over many chunks is not copied again with each chunk).
  let carry: Buffer[] | undefined;
  let carryLength = 0;
  // Without decoding (readLineBytes), the pieces are copied straight into one buffer, reused from
  // line to line (a batch's chunk is valid only until the next batch is asked for): a long line
  // costs no new buffer of its length. It is let go when a line uses less than a quarter of it,
  // so an input holds one only while its lines are long (with many inputs, at most one each).
  let joinBuf = decodeAll ? undefined : EMPTY;
  const room = (n: number): Buffer => {
    if (joinBuf!.length < n) {
      const next = Buffer.allocUnsafe(Math.min(Math.max(n, joinBuf!.length * 2, 4096), Math.max(n, max)));
      joinBuf!.copy(next, 0, 0, carryLength);
      joinBuf = next;
    }
    return joinBuf!;
  };
  let skipping = false; // inside a line that is over the cap
  let lineNo = 1;
  let first = true;
  /** Bytes before the current chunk, and where the current (carried) line started. */
  let pos = 0;
  let lineStart = 0;
  // A batch's columns are typed arrays of their own (a batch may be held while later ones are
  // read: wrappers.ts), made with room for about as many lines as the chunk before had, so that
  // they are seldom grown (growing arrays line by line was a sixth of what a run allocated).
  let room0 = 256;
  for await (const chunk of chunks) {
    const lines: (string | null | undefined)[] = [];
    let cap = room0;
    let offsets = new Float64Array(cap);
    let lengths = new Float64Array(cap);
    let starts: Int32Array | undefined = decodeAll ? undefined : new Int32Array(cap);
    let ends: Int32Array | undefined = decodeAll ? undefined : new Int32Array(cap);
    /** Lines in the columns. */
    let n = 0;
    const bad: { set?: Set<number> } = {};
    let firstLine = lineNo;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) break;
      if (carry === undefined && !skipping) lineStart = pos + start;
      if (n === cap) {
        cap *= 2;
        offsets = grown(offsets, cap);
        lengths = grown(lengths, cap);
        if (starts !== undefined) {
          starts = grown(starts, cap);
          ends = grown(ends!, cap);
        }
      }
      offsets[n] = lineStart;
      lengths[n] = pos + nl - lineStart;
      if (starts !== undefined) {
        starts[n] = -1;
        ends![n] = -1;
      }
      n++;
      if (skipping) {
        lines.push(null);
        skipping = false;
      } else if (carry !== undefined) {
        const total = carryLength + (nl - start);
        if (total > max) lines.push(null);
        else {
          if (starts !== undefined) {
            chunk.copy(room(total), carryLength, start, nl);
            const joined = joinBuf!.subarray(0, total);
            // Undecoded too: the line's bytes, joined, as a batch of its own (it is the first line
            // of this chunk, so the batch so far is empty), so that a long line is never made a string.
            carry = undefined;
            carryLength = 0;
            const [s, e] = bounds(joined, 0, total, first);
            first = false;
            // The columns are this chunk's: the one line's own, which nothing after changes.
            yield { firstLine, lines: [undefined], offsets: offsets.slice(0, 1), lengths: lengths.slice(0, 1), chunk: joined, starts: [s], ends: [e] };
            if (joinBuf!.length > 16 * 1024 && total * 4 < joinBuf!.length) joinBuf = EMPTY;
            lineNo++;
            start = nl + 1;
            lineStart = pos + start;
            firstLine = lineNo;
            n = 0;
            continue;
          }
          carry.push(chunk.subarray(start, nl));
          push(lines, decode(Buffer.concat(carry, total), 0, total, first), bad);
        }
        carry = undefined;
        carryLength = 0;
      } else if (nl - start > max) {
        lines.push(null);
      } else if (starts !== undefined) {
        let s = start;
        let e = nl;
        if (e > s && chunk[e - 1] === 13) e--; // CRLF
        if (first && e - s >= 3 && chunk[s] === 0xef && chunk[s + 1] === 0xbb && chunk[s + 2] === 0xbf) s += 3; // BOM
        starts[n - 1] = s;
        ends![n - 1] = e;
        lines.push(undefined);
      } else {
        push(lines, decode(chunk, start, nl, first), bad);
      }
      first = false;
      lineNo++;
      start = nl + 1;
      lineStart = pos + start;
    }
    if (start < chunk.length && !skipping) {
      const rest = chunk.subarray(start);
      const size = carryLength + rest.length;
      if (size > max) {
        carry = undefined;
        carryLength = 0;
        skipping = true;
      } else {
        // Copy: the chunk's memory may be reused by the stream.
        carry ??= [];
        if (joinBuf !== undefined) rest.copy(room(size), carryLength);
        else carry.push(Buffer.from(rest));
        carryLength = size;
      }
    }
    pos += chunk.length;
    room0 = Math.max(256, Math.ceil(n * 1.25));
    if (lines.length > 0) {
      // Columns made far too big (a chunk of few lines after one of very many short ones) are
      // copied to their length, so that a batch held for a while (wrappers.ts, the --jobs feed)
      // does not hold the room of the chunk before: at most about 4 times its lines.
      const copy = cap > 4 * n + 1024;
      const cut = <T extends Float64Array | Int32Array>(a: T): T => (copy ? a.slice(0, n) : a.subarray(0, n)) as T;
      const o = cut(offsets);
      const l = cut(lengths);
      yield starts === undefined ? { firstLine, lines: lines as (string | null)[], invalidUtf8: bad.set, offsets: o, lengths: l } : { firstLine, lines, invalidUtf8: bad.set, offsets: o, lengths: l, chunk, starts: cut(starts), ends: cut(ends!) };
    }
  }
  if (skipping) yield { firstLine: lineNo, lines: [null] };
  else if (carry !== undefined && carryLength > 0) {
    const joined = joinBuf !== undefined ? joinBuf.subarray(0, carryLength) : Buffer.concat(carry, carryLength);
    if (!decodeAll) {
      const [s, e] = bounds(joined, 0, carryLength, first);
      yield { firstLine: lineNo, lines: [undefined], offsets: [lineStart], lengths: [carryLength], chunk: joined, starts: [s], ends: [e] };
      return;
    }
    const lines: (string | null)[] = [];
    const bad: { set?: Set<number> } = {};
    push(lines, decode(joined, 0, carryLength, first), bad);
    yield { firstLine: lineNo, lines, invalidUtf8: bad.set, offsets: [lineStart], lengths: [carryLength] };
  }
}

const EMPTY = Buffer.alloc(0);

/** `a` with room for `size` values (its values kept). */
function grown<T extends Float64Array | Int32Array>(a: T, size: number): T {
  const b = new (a.constructor as new (n: number) => T)(size);
  b.set(a);
  return b;
}

function decode(buf: Buffer, start: number, end: number, first: boolean): string {
  const [s, e] = bounds(buf, start, end, first);
  return decodeRange(buf, s, e);
}

/** The line's bytes within buf[start, end): without a CR before the newline, nor a BOM on line 1. */
function bounds(buf: Buffer, start: number, end: number, first: boolean): [number, number] {
  if (end > start && buf[end - 1] === 13) end--; // CRLF
  if (first && end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) start += 3; // BOM
  return [start, end];
}

/** The text of buf[start, end), noting (badUtf8) when those bytes are not valid UTF-8. */
function decodeRange(buf: Buffer, start: number, end: number): string {
  const text = buf.toString('utf8', start, end);
  // U+FFFD in the text: either written as such, or bytes that are not UTF-8. Only the bytes can tell.
  if (text.indexOf('\ufffd') !== -1 && !isUtf8(buf.subarray(start, end))) badUtf8 = true;
  return text;
}

/** Set by decode() when the line it decoded was not valid UTF-8; read and reset by the reader. */
let badUtf8 = false;

function push(lines: (string | null | undefined)[], text: string | null, bad: { set?: Set<number> }): void {
  if (badUtf8) {
    (bad.set ??= new Set()).add(lines.length);
    badUtf8 = false;
  }
  lines.push(text);
}
