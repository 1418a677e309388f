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
  readonly offsets?: number[];
  readonly lengths?: number[];
}

export interface LineReaderOptions {
  maxLineBytes?: number;
}

export async function* readLines(chunks: AsyncIterable<Buffer>, options: LineReaderOptions = {}): AsyncGenerator<LineBatch> {
  const max = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  // Bytes of the current, unfinished line, as copied pieces: joined once, when the line ends (a
  // line over many chunks is not copied again with each chunk).
  let carry: Buffer[] | undefined;
  let carryLength = 0;
  let skipping = false; // inside a line that is over the cap
  let lineNo = 1;
  let first = true;
  /** Bytes before the current chunk, and where the current (carried) line started. */
  let pos = 0;
  let lineStart = 0;
  for await (const chunk of chunks) {
    const lines: (string | null)[] = [];
    const offsets: number[] = [];
    const lengths: number[] = [];
    const bad: { set?: Set<number> } = {};
    const firstLine = lineNo;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) break;
      if (carry === undefined && !skipping) lineStart = pos + start;
      offsets.push(lineStart);
      lengths.push(pos + nl - lineStart);
      if (skipping) {
        lines.push(null);
        skipping = false;
      } else if (carry !== undefined) {
        const total = carryLength + (nl - start);
        if (total > max) lines.push(null);
        else {
          carry.push(chunk.subarray(start, nl));
          push(lines, decode(Buffer.concat(carry, total), 0, total, first), bad);
        }
        carry = undefined;
        carryLength = 0;
      } else if (nl - start > max) {
        lines.push(null);
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
        (carry ??= []).push(Buffer.from(rest));
        carryLength = size;
      }
    }
    pos += chunk.length;
    if (lines.length > 0) yield { firstLine, lines, invalidUtf8: bad.set, offsets, lengths };
  }
  if (skipping) yield { firstLine: lineNo, lines: [null] };
  else if (carry !== undefined && carryLength > 0) {
    const lines: (string | null)[] = [];
    const bad: { set?: Set<number> } = {};
    push(lines, decode(Buffer.concat(carry, carryLength), 0, carryLength, first), bad);
    yield { firstLine: lineNo, lines, invalidUtf8: bad.set, offsets: [lineStart], lengths: [carryLength] };
  }
}

function decode(buf: Buffer, start: number, end: number, first: boolean): string {
  if (end > start && buf[end - 1] === 13) end--; // CRLF
  if (first && end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) start += 3; // BOM
  const text = buf.toString('utf8', start, end);
  // U+FFFD in the text: either written as such, or bytes that are not UTF-8. Only the bytes can tell.
  if (text.indexOf('\ufffd') !== -1 && !isUtf8(buf.subarray(start, end))) badUtf8 = true;
  return text;
}

/** Set by decode() when the line it decoded was not valid UTF-8; read and reset by the reader. */
let badUtf8 = false;

function push(lines: (string | null)[], text: string | null, bad: { set?: Set<number> }): void {
  if (badUtf8) {
    (bad.set ??= new Set()).add(lines.length);
    badUtf8 = false;
  }
  lines.push(text);
}
