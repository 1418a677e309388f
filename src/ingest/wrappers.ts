/**
 * Container log wrappers: logs collected from the nodes rather than through `kubectl logs`
 * arrive wrapped, one physical line per piece of the application's line:
 *
 * - docker's json-file driver: `{"log":"…\n","stream":"stderr","time":"2026-…Z"}`. A line longer
 *   than 16 KiB is split into pieces; all but the last lack the trailing `\n` of `log`.
 * - CRI runtimes (containerd, CRI-O): `<RFC 3339 nano time> <stdout|stderr> <F|P> <text>`, where
 *   `P` marks a partial line, continued by the following lines of the same stream up to an `F`.
 * - `kubectl logs --timestamps`: `<RFC 3339 nano time> <text>`.
 *
 * The wrapper is detected per input from its first non-blank lines (most of them must agree),
 * whatever batches they come in (WrapperGate holds the first ones until it is decided), and
 * then every line of the input is unwrapped; a line that is not in the wrapper's form is passed on
 * as it is (the profile judges it). Partial pieces are joined, per stream, into one line whose
 * number is that of its first piece; the pieces merged into a following one are counted as
 * `joined`, so that `lines + expanded = events + blank + ignored + invalid + joined`. A joined
 * line is still bound by the line-length cap: past it, its pieces are dropped as they come and it
 * is reported as too long. The wrapper's time travels with each line, a fallback for records that
 * carry no timestamp of their own.
 */
import type { LineBatch } from './lines.js';

export type WrapperKind = 'docker' | 'cri' | 'kubectl';
export const WRAPPER_KINDS: readonly WrapperKind[] = ['docker', 'cri', 'kubectl'];

/** How many of the first non-blank lines are looked at to detect the wrapper. */
export const DETECT_LINES = 8;
/**
 * Lines, from the first non-blank one on, within which those DETECT_LINES are looked for: an
 * input with fewer non-blank lines among them is decided from those (as is one that ends first).
 */
export const DETECT_WINDOW = 4096;
/**
 * Bytes of input, from the start of the first non-blank line, within which those DETECT_LINES are
 * looked for: a line that ends past them is not considered, and the input is decided from the
 * lines before it. Measured on the input's bytes (LineBatch.offsets), not on the batches held,
 * so it is the same whatever chunks they were read in; it bounds what WrapperGate holds (only an
 * input whose first DETECT_LINES non-blank lines are spread over more than this, blank or
 * over-long lines between them, is decided from fewer).
 */
export const DETECT_HOLD_BYTES = 64 * 1024 * 1024;

/** One physical line, unwrapped. */
interface Piece {
  /** The stream partial pieces are joined within. */
  stream: string;
  time: string;
  text: string;
  /** More of the same line follows. */
  partial: boolean;
}

/** RFC 3339 with a zone, as runtimes write it (nanoseconds, usually Z). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const MAX_TIME_CHARS = 35;

function timeAt(text: string): { time: string; end: number } | undefined {
  const c = text.charCodeAt(0);
  if (c < 48 || c > 57) return undefined;
  const sp = text.indexOf(' ');
  if (sp < 20 || sp > MAX_TIME_CHARS) return undefined;
  const time = text.slice(0, sp);
  return RFC3339.test(time) ? { time, end: sp } : undefined;
}

/** `<time> <stdout|stderr> <tags> <text>`; the first tag `P` marks a partial line. */
export function parseCri(text: string): Piece | undefined {
  const t = timeAt(text);
  if (t === undefined) return undefined;
  const s = t.end + 1;
  const stream = text.startsWith('stdout ', s) ? 'stdout' : text.startsWith('stderr ', s) ? 'stderr' : undefined;
  if (stream === undefined) return undefined;
  const tagStart = s + 7;
  let tagEnd = text.indexOf(' ', tagStart);
  if (tagEnd === -1) tagEnd = text.length;
  const tag = text.slice(tagStart, tagEnd);
  const first = tag.split(':', 1)[0];
  if (first !== 'F' && first !== 'P') return undefined;
  return { stream, time: t.time, text: tagEnd < text.length ? text.slice(tagEnd + 1) : '', partial: first === 'P' };
}

/** `<time> <text>` (kubectl logs --timestamps). */
export function parseKubectl(text: string): Piece | undefined {
  const t = timeAt(text);
  if (t === undefined) return undefined;
  return { stream: '', time: t.time, text: text.slice(t.end + 1), partial: false };
}

const DOCKER_KEYS = new Set(['log', 'stream', 'time', 'attrs']);

/** docker json-file: `{"log":"…\n","stream":"…","time":"…"}`; `log` without its `\n` is a partial piece. */
export function parseDocker(text: string, strict = false): Piece | undefined {
  if (text.charCodeAt(0) !== 123 /* { */ || text.indexOf('"log"') === -1) return undefined;
  let rec: unknown;
  try {
    rec = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) return undefined;
  const r = rec as Record<string, unknown>;
  const log = r.log;
  const stream = r.stream ?? '';
  const time = r.time;
  if (typeof log !== 'string' || (stream !== '' && stream !== 'stdout' && stream !== 'stderr') || typeof time !== 'string') return undefined;
  // Detection is stricter: docker writes these keys only, so a log record of an application
  // that happens to have a `log` field is not taken for a wrapper.
  if (strict && (!RFC3339.test(time) || Object.keys(r).some((k) => !DOCKER_KEYS.has(k)))) return undefined;
  let inner = log;
  let partial = true;
  if (inner.endsWith('\n')) {
    partial = false;
    inner = inner.slice(0, inner.endsWith('\r\n') ? -2 : -1);
  }
  return { stream, time, text: inner, partial };
}

function parseDockerStrict(text: string): Piece | undefined {
  return parseDocker(text, true);
}

function parserOf(kind: WrapperKind): (text: string) => Piece | undefined {
  // Strict for docker on every line, not only for detection: a line of the application's own
  // (with a `log` and a `time` field among others) in a docker-wrapped input is read as it is.
  return kind === 'docker' ? parseDockerStrict : kind === 'cri' ? parseCri : parseKubectl;
}

export function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13 && c !== 11 && c !== 12) return false;
  }
  return true;
}

/** The wrapper of one line, if it is in one's form (CRI before kubectl: a CRI line also starts with a time). */
export function wrapperOf(text: string): WrapperKind | undefined {
  if (parseDocker(text, true) !== undefined) return 'docker';
  if (parseCri(text) !== undefined) return 'cri';
  if (parseKubectl(text) !== undefined) return 'kubectl';
  return undefined;
}

/**
 * Whether these first lines of an input hold its first DETECT_LINES non-blank lines and none of
 * them is in a wrapper's form. Then an Unwrapper decides null for the input, whatever it was
 * decided from: those lines, or the fewer of them in its window (lines or bytes).
 */
export function noWrapperLine(lines: readonly (string | null)[]): boolean {
  let seen = 0;
  for (const l of lines) {
    if (l === null || isBlank(l)) continue;
    if (wrapperOf(l) !== undefined) return false;
    if (++seen === DETECT_LINES) return true;
  }
  return false;
}

/**
 * The wrapper of an input from its first non-blank lines: the kind that most of them (at least
 * half, up to DETECT_LINES) are in, or null for none. Undefined while no content line was seen.
 */
export function detectWrapper(lines: readonly (string | null)[]): WrapperKind | null | undefined {
  const counts = new Map<WrapperKind, number>();
  let seen = 0;
  for (const l of lines) {
    if (l === null || isBlank(l)) continue;
    const k = wrapperOf(l);
    if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
    if (++seen === DETECT_LINES) break;
  }
  if (seen === 0) return undefined;
  let best: WrapperKind | null = null;
  let most = 0;
  for (const k of WRAPPER_KINDS) {
    const n = counts.get(k) ?? 0;
    if (n > most) {
      best = k;
      most = n;
    }
  }
  return most * 2 >= seen ? best : null;
}

interface Pending {
  line: number;
  time: string;
  parts: string[];
  bytes: number;
  /** Past the line-length cap: its parts are dropped. */
  over: boolean;
  badUtf8: boolean;
  /** Physical lines taken so far. */
  pieces: number;
}

/**
 * Unwraps the batches of one input. Undecided until it has considered (consider()) the input's
 * first DETECT_LINES non-blank lines, or DETECT_WINDOW lines or DETECT_HOLD_BYTES bytes from the
 * first of them, or was told the input ended (settle()); then it either passes every batch on untouched (no wrapper) or
 * unwraps each line and joins partial lines. A batch pushed while undecided passes untouched:
 * WrapperGate holds the batches with content until the decision.
 */
export class Unwrapper {
  /** undefined: not decided yet; null: no wrapper. */
  kind: WrapperKind | null | undefined = undefined;
  private parse: ((text: string) => Piece | undefined) | undefined;
  private readonly pending = new Map<string, Pending>();
  /** While undecided: the non-blank lines considered, and the lines from the first of them on. */
  private votes: string[] = [];
  private looked = 0;
  /** The byte offset in the input of the first non-blank line, where its offsets are known. */
  private from: number | undefined;

  constructor(private readonly maxLineBytes: number) {}

  /** Whether a non-blank line was considered and the wrapper is still undecided. */
  get deciding(): boolean {
    return this.kind === undefined && this.looked > 0;
  }

  /**
   * Consider the next lines of the input, in order, for the decision (until it is made); with
   * where each is in the input (LineBatch.offsets, lengths), for the DETECT_HOLD_BYTES bound.
   */
  consider(lines: readonly (string | null)[], offsets?: ArrayLike<number>, lengths?: ArrayLike<number>): void {
    if (this.kind !== undefined) return;
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i]!;
      const content = l !== null && !isBlank(l);
      if (this.looked === 0) {
        if (!content) continue;
        this.from = offsets?.[i];
      } else if (this.from !== undefined && offsets !== undefined && lengths !== undefined && offsets[i]! + lengths[i]! - this.from > DETECT_HOLD_BYTES) return this.decide();
      this.looked++;
      if (content) this.votes.push(l);
      if (this.votes.length === DETECT_LINES || this.looked === DETECT_WINDOW) return this.decide();
    }
  }

  /** The input ended (or went quiet, or too much is held): decide from the lines considered, if any. */
  settle(): void {
    if (this.deciding) this.decide();
  }

  private decide(): void {
    this.kind = detectWrapper(this.votes);
    this.votes = [];
    if (this.kind != null) this.parse = parserOf(this.kind);
  }

  push(batch: LineBatch): LineBatch {
    const parse = this.parse;
    if (parse === undefined) return batch;
    const out = new Out();
    const { lines, firstLine, invalidUtf8 } = batch;
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!;
      const line = firstLine + i;
      const bad = invalidUtf8 !== undefined && invalidUtf8.has(i);
      const piece = text === null || isBlank(text) ? undefined : parse(text);
      if (piece === undefined) {
        out.add(text, line, undefined, bad);
        continue;
      }
      let p = this.pending.get(piece.stream);
      if (piece.partial) {
        if (p === undefined) this.pending.set(piece.stream, (p = { line, time: piece.time, parts: [], bytes: 0, over: false, badUtf8: false, pieces: 0 }));
        this.take(p, piece.text, bad);
        continue;
      }
      if (p === undefined) {
        out.add(piece.text, line, piece.time, bad);
        continue;
      }
      this.pending.delete(piece.stream);
      this.take(p, piece.text, bad);
      out.joined += p.pieces - 1;
      out.add(p.over ? null : p.parts.join(''), p.line, p.time, p.badUtf8);
    }
    return out.batch(firstLine);
  }

  /** At the end of the input: lines whose last piece never came (a rotated or cut-off log), as they are. */
  end(): LineBatch | undefined {
    if (this.pending.size === 0) return undefined;
    const out = new Out();
    for (const p of [...this.pending.values()].sort((a, b) => a.line - b.line)) {
      out.joined += p.pieces - 1;
      out.add(p.over ? null : p.parts.join(''), p.line, p.time, p.badUtf8);
    }
    this.pending.clear();
    return out.batch(0);
  }

  private take(p: Pending, text: string, bad: boolean): void {
    p.pieces++;
    if (bad) p.badUtf8 = true;
    if (p.over) return;
    p.bytes += Buffer.byteLength(text, 'utf8');
    if (p.bytes > this.maxLineBytes) {
      p.over = true;
      p.parts = [];
    } else p.parts.push(text);
  }
}

/** An unwrapped batch being built: its lines need their numbers (joined lines leave gaps). */
class Out {
  readonly lines: (string | null)[] = [];
  readonly numbers: number[] = [];
  readonly times: (string | undefined)[] = [];
  bad: Set<number> | undefined;
  joined = 0;

  add(text: string | null, line: number, time: string | undefined, badUtf8: boolean): void {
    if (badUtf8) (this.bad ??= new Set()).add(this.lines.length);
    this.lines.push(text);
    this.numbers.push(line);
    this.times.push(time);
  }

  batch(firstLine: number): LineBatch {
    return { firstLine: this.numbers[0] ?? firstLine, lines: this.lines, invalidUtf8: this.bad, lineNumbers: this.numbers, times: this.times, joined: this.joined };
  }
}

/**
 * The first lines of an input (a sample, e.g. for `map --suggest`) as the profiles see them:
 * unwrapped and joined when they are in a container log wrapper, else as they are.
 */
export function unwrapSample(lines: readonly (string | null)[], maxLineBytes: number): (string | null)[] {
  const u = new Unwrapper(maxLineBytes);
  u.consider(lines);
  u.settle();
  const batch = u.push({ firstLine: 1, lines: [...lines] });
  const rest = u.end();
  return rest === undefined ? [...batch.lines] : [...batch.lines, ...rest.lines];
}

/**
 * An input's batches of lines unwrapped by `unwrapper`, its wrapper decided from the same first
 * lines as analyze's (WrapperGate), then the lines whose last piece never came: what `map` shows.
 */
export async function* unwrapLines(batches: AsyncIterable<LineBatch>, unwrapper: Unwrapper): AsyncGenerator<LineBatch> {
  const gate = new WrapperGate(unwrapper, (b: LineBatch) => b.lines);
  for await (const raw of batches) for (const b of gate.offer(raw)) yield unwrapper.push(b);
  for (const b of gate.settle()) yield unwrapper.push(b);
  const rest = unwrapper.end();
  if (rest !== undefined) yield rest;
}

/**
 * Holds the first batches of one input (raw bytes or lines, as its reader has them) while its
 * Unwrapper is deciding, and gives them back in order once it has decided, so the decision is
 * the same whatever the batches the input's lines come in (the read chunk, a pipe's writes).
 * A batch before the first non-blank line passes at once. Bounded by the Unwrapper's window:
 * DETECT_WINDOW lines and DETECT_HOLD_BYTES bytes of input (by the batches' offsets), after which
 * it decides from the lines seen. What is held is those bytes, at most twice (a byte batch's
 * chunk and the long lines joined from it), and the batch the window ends in.
 */
export class WrapperGate<B extends { readonly offsets?: ArrayLike<number>; readonly lengths?: ArrayLike<number> }> {
  private held: B[] = [];

  constructor(
    private readonly unwrapper: Unwrapper,
    /** The batch's lines in order, decoded: all of them, or its first up to its DETECT_LINES-th non-blank one. */
    private readonly sample: (batch: B) => readonly (string | null)[],
    /** The batch as it can be held past the reader's next batch (a copy of bytes the reader reuses). */
    private readonly keep: (batch: B) => B = (batch) => batch,
  ) {}

  /** Whether batches are held, waiting for the decision. */
  get holding(): boolean {
    return this.held.length > 0;
  }

  /** The batches that go on now, in order: none while the decision waits for lines after this batch's. */
  offer(batch: B): B[] {
    const u = this.unwrapper;
    if (u.kind !== undefined) return [batch];
    u.consider(this.sample(batch), batch.offsets, batch.lengths);
    if (u.kind === undefined && !u.deciding) return [batch];
    if (u.kind !== undefined) return [...this.release(), batch];
    this.held.push(this.keep(batch));
    return [];
  }

  /** The input ended or went quiet: decide from the lines seen; the batches held. */
  settle(): B[] {
    this.unwrapper.settle();
    return this.release();
  }

  private release(): B[] {
    const out = this.held;
    this.held = [];
    return out;
  }
}
