/**
 * Lines → records (JSON.parse) → events (via a profile). Every line is accounted for:
 * event, blank, ignored or invalid (with file:line and a reason), or joined into a following
 * line (partial lines of a container log wrapper, see wrappers.ts). An event found to be a copy
 * of one read before (duplicates.ts) moves from `events` to `duplicates` after the merge.
 */
import { isLeaseScoped, MAX_DISPLAY_CHARS, type LockEvent } from '../model/event.js';
import { fastCanonicalBytes } from '../profiles/fast-canonical-bytes.js';
import type { FileSummary, InputSummary, LineCounts, Problem } from '../model/report.js';
import type { Profile } from '../profiles/types.js';
import { decodeLine, isByteBatch, NOT_LOOKED, type ByteLineBatch, type LineBatch } from './lines.js';
import type { LookColumns, PartitionFilter } from './partition.js';
import { digestOfBytes, shortenedLine } from './digest.js';
import { MAX_REMEMBERED_LINE, noteDigest } from './duplicates.js';

export const DEFAULT_MAX_PROBLEMS = 100;

/** Thrown by strict modes; the CLI turns it into exit code 2. */
export class StrictInputError extends Error {
  constructor(message: string, readonly problem: Problem) {
    super(message);
    this.name = 'StrictInputError';
  }
}

export interface InputPolicy {
  /** Stop at the first invalid line. */
  strict?: boolean;
  /** Stop once more than this many lines are invalid. */
  maxInvalid?: number;
  /** Problems listed in the report (all are counted). */
  maxProblems?: number;
  /** Called for every problem, listed or not (for stderr). */
  onProblem?: (problem: Problem) => void;
  /** A partition run (`--partition`): the summaries count the lines of other partitions. */
  partitioned?: boolean;
}

/** Counts for the whole input; each file has its own FileSummary inside. */
export class InputStats {
  readonly files: FileSummary[] = [];
  /**
   * Problems listed, per input, each list capped: inputs are read concurrently, so the report lists
   * them in input order (then line order), whichever input was read first. Each list holds the
   * input's first problems by line (listProblem), as the merge of partitions lists them.
   */
  private readonly listed = new Map<FileSummary, Problem[]>();
  invalid = 0;
  private readonly maxProblems: number;

  constructor(private readonly policy: InputPolicy = {}) {
    this.maxProblems = policy.maxProblems ?? DEFAULT_MAX_PROBLEMS;
  }

  addFile(file: string): FileSummary {
    const f: FileSummary = { file, lines: 0, events: 0, blank: 0, ignored: 0, invalid: 0, expanded: 0, joined: 0, duplicates: 0 };
    if (this.policy.partitioned) f.otherPartitions = 0;
    this.files.push(f);
    this.listed.set(f, []);
    return f;
  }

  problem(summary: FileSummary, line: number, reason: string): void {
    summary.invalid++;
    this.invalid++;
    const p: Problem = { file: summary.file, line, reason };
    const list = this.listed.get(summary);
    if (list !== undefined) listProblem(list, p, this.maxProblems);
    this.policy.onProblem?.(p);
    if (this.policy.strict) throw new StrictInputError(`${p.file}:${p.line}: ${reason} (--strict stops at the first invalid line)`, p);
    if (this.policy.maxInvalid !== undefined && this.invalid > this.policy.maxInvalid) {
      throw new StrictInputError(`more than ${this.policy.maxInvalid} invalid lines (--max-invalid); the last at ${p.file}:${p.line}: ${reason}`, p);
    }
  }

  /** The problems listed: the first of each input, in input order, at most maxProblems. */
  get problems(): Problem[] {
    const out: Problem[] = [];
    for (const f of this.files) {
      for (const p of this.listed.get(f) ?? []) {
        if (out.length >= this.maxProblems) return out;
        out.push(p);
      }
    }
    return out;
  }

  summary(): InputSummary {
    const problems = this.problems;
    const s: InputSummary = {
      files: this.files.map((f) => ({ ...f })),
      lines: 0,
      events: 0,
      blank: 0,
      ignored: 0,
      invalid: 0,
      expanded: 0,
      joined: 0,
      duplicates: 0,
      problems,
      problemsOmitted: this.invalid - problems.length,
    };
    if (this.policy.partitioned) s.otherPartitions = 0;
    addUp(s, this.files);
    return s;
  }
}

/**
 * Add `p` to `list`, an input's listed problems: its first `max` by line number, in line order.
 * Problems come in line order but for a container log's partial line, joined and judged when its
 * last piece comes (after lines below it), which takes its place by its first line, so that the
 * list does not depend on where the pieces were (the merge of partitions sorts by line too).
 */
function listProblem(list: Problem[], p: Problem, max: number): void {
  const n = list.length;
  if (n === 0 || list[n - 1]!.line <= p.line) {
    if (n < max) list.push(p);
    return;
  }
  let k = n - 1;
  while (k > 0 && list[k - 1]!.line > p.line) k--;
  list.splice(k, 0, p);
  if (list.length > max) list.pop();
}

/** Add the counts of `files` into `total` (otherPartitions only when `total` has it). */
export function addUp(total: LineCounts, files: readonly LineCounts[]): void {
  for (const f of files) {
    if (total.otherPartitions !== undefined) total.otherPartitions += f.otherPartitions ?? 0;
    total.lines += f.lines;
    total.events += f.events;
    total.blank += f.blank;
    total.ignored += f.ignored;
    total.invalid += f.invalid;
    total.expanded += f.expanded;
    total.joined += f.joined;
    total.duplicates += f.duplicates;
  }
}

/**
 * Turn a batch of lines into events, counting every line. A batch of undecoded lines
 * (readLineBytes, only for inputs read by reference) goes the profile's byte path first, each
 * line decoded only when that path declines it.
 *
 * With `longLines` (an input that cannot be read back, parsed on the main thread: stdin, a pipe,
 * gzip), an undecoded line longer than MAX_REMEMBERED_LINE goes the canonical byte path too, so
 * that it is never made a string: its event keeps a shortened copy of the line as its `text`
 * (string values cut past the display clip: the same display fields) and the duplicate check
 * the digest of the whole line (noteDigest).
 */
export function toEvents(batch: LineBatch | ByteLineBatch, profile: Profile, file: string, source: string, stats: InputStats, summary: FileSummary, byReference = false, part?: PartitionFilter, longLines = false): LockEvent[] {
  const out: LockEvent[] = [];
  const { lines, firstLine, lineNumbers, times } = batch;
  const raw = isByteBatch(batch) ? batch : undefined;
  const chunk = raw?.chunk;
  const starts = raw?.starts;
  const ends = raw?.ends;
  // The key reader's look at each line: the reader of --jobs sent it; a one-input partition run
  // takes it for the whole batch first, so that the lines of other partitions that fold() would
  // fold are marked (prefold) and only counted here, never made placeholders.
  let cols: LookColumns | undefined = looks0(raw);
  let skip: Uint8Array | undefined;
  if (part !== undefined && raw !== undefined && part.prefolds && profile.partitionKey !== undefined) {
    cols ??= part.lookAhead(profile, raw);
    skip = part.prefold(raw.lines, cols, source);
  }
  const looks = cols?.looks;
  /** Lines skipped since the last line not skipped, and the highest of their times (see `early`). */
  let skipped = 0;
  let skippedMax = -Infinity;
  /** Triples for fold(): before item early[k], early[k + 1] lines were skipped, the highest of their times early[k + 2]. */
  let early: number[] | undefined;
  const fastBytes = profile.fastBytes;
  // Lines of a plain file can be read back: events keep where they are instead of the line.
  const offsets = byReference ? batch.offsets : undefined;
  const lengths = batch.lengths;
  const parse = profile.parseLine;
  const expand = profile.expand;
  const fast = profile.fastEvent;
  // Physical lines merged into a following one are lines too: `joined` keeps the sum reconciled.
  const joined = batch.joined ?? 0;
  summary.lines += joined;
  summary.joined += joined;
  // One origin object per batch, updated per line (profiles read it synchronously, never keep it).
  const origin: { file: string; line: number; source: string; text: string | undefined; wrapperTime: string | undefined; offset: number | undefined; bytes: number | undefined } = {
    file,
    line: 0,
    source,
    text: undefined,
    wrapperTime: undefined,
    offset: undefined,
    bytes: undefined,
  };
  for (let i = 0; i < lines.length; i++) {
    let text = lines[i];
    const line = lineNumbers === undefined ? firstLine + i : lineNumbers[i]!;
    if (times !== undefined) origin.wrapperTime = times[i];
    summary.lines++;
    if (skip !== undefined) {
      if (skip[i] === 1) {
        summary.otherPartitions!++;
        skipped++;
        const t = cols!.lookTs[i]!;
        if (t > skippedMax) skippedMax = t;
        continue;
      }
      if (skipped > 0) {
        (early ??= []).push(out.length, skipped, skippedMax);
        skipped = 0;
        skippedMax = -Infinity;
      }
    }
    // With a partition: the key reader's verdict on this line (see partition.ts): UNREAD, or
    // OWN when it read this partition's key (the line is then this partition's, event or not).
    let keyed = UNREAD;
    if (text === null) {
      if (part !== undefined && part.index !== 0) summary.otherPartitions!++;
      else stats.problem(summary, line, 'line is longer than the line-length cap (see --max-line-bytes); skipped');
      continue;
    }
    let badUtf8: boolean;
    if (text === undefined) {
      // Undecoded: the byte path, else the line's text after all.
      const s = starts![i]!;
      const e = ends![i]!;
      // A line the reader of --jobs looked at already is not blank (and may have no bytes here).
      const looked = looks === undefined ? NOT_LOOKED : looks[i]!;
      if (looked === NOT_LOOKED && isBlankBytes(chunk!, s, e)) {
        if (part !== undefined && part.index !== 0) summary.otherPartitions!++;
        else summary.blank++;
        continue;
      }
      if (offsets !== undefined) {
        origin.offset = offsets[i];
        origin.bytes = lengths![i];
      }
      if (part !== undefined) {
        // The cheapest look: another partition's line is not parsed, only placed in the merge.
        const p = looked === NOT_LOOKED ? part.lookAt(profile, chunk!, s, e) : part.looked(looked, cols!.lookTs[i]!, cols!.lookSource[i]!, cols!.lookSources);
        if (p !== -1 && p !== part.index) {
          summary.otherPartitions!++;
          out.push(part.fromLook(source, file, line, origin.offset, origin.bytes, false, profile));
          continue;
        }
        keyed = p === -1 ? DECLINED : OWN;
      }
      if (fastBytes !== undefined && offsets !== undefined) {
        origin.line = line;
        const ev = fastBytes(chunk!, s, e, origin);
        if (ev !== undefined) {
          take(ev, keyed, part, profile, summary, out);
          continue;
        }
      } else if (longLines && part === undefined && e - s > MAX_REMEMBERED_LINE && fastBytes === fastCanonicalBytes) {
        origin.line = line;
        const ev = fastBytes(chunk!, s, e, origin);
        const shortened = ev === undefined ? undefined : shortenedLine(chunk!, s, e, MAX_DISPLAY_CHARS + 1);
        if (shortened !== undefined) {
          // Still part of building the event: nothing has seen it yet.
          (ev as { text?: string }).text = shortened;
          noteDigest(ev!, digestOfBytes(chunk!, s, e));
          take(ev!, keyed, part, profile, summary, out);
          continue;
        }
      }
      const decoded = decodeLine(raw!, i);
      text = decoded.text;
      badUtf8 = decoded.badUtf8;
    } else {
      if (isBlank(text)) {
        if (part !== undefined && part.index !== 0) summary.otherPartitions!++;
        else summary.blank++;
        continue;
      }
      badUtf8 = batch.invalidUtf8 !== undefined && batch.invalidUtf8.has(i);
      if (offsets !== undefined) {
        origin.offset = offsets[i];
        origin.bytes = lengths![i];
      }
    }
    if (fast !== undefined && !badUtf8) {
      origin.line = line;
      const ev = fast(text, origin);
      if (ev === null) {
        if (part === undefined || mine(part, keyed, text, profile, source, file, line, origin, summary, out)) summary.ignored++;
        continue;
      }
      if (ev !== undefined) {
        take(ev, keyed, part, profile, summary, out);
        continue;
      }
    }
    const bad = badUtf8 ? 'bytes that are not valid UTF-8 (they would be read as U+FFFD and change ids silently)' : suspicious(text);
    if (bad !== undefined) {
      if (part === undefined || mine(part, keyed, text, profile, source, file, line, origin, summary, out)) stats.problem(summary, line, bad);
      continue;
    }
    let record: unknown;
    if (parse !== undefined) {
      record = parse(text, origin.wrapperTime);
      if (typeof record === 'string') {
        if (part === undefined || mine(part, keyed, text, profile, source, file, line, origin, summary, out)) stats.problem(summary, line, record);
        continue;
      }
    } else {
      try {
        record = JSON.parse(text);
      } catch (err) {
        if (part === undefined || mine(part, keyed, text, profile, source, file, line, origin, summary, out)) stats.problem(summary, line, `not valid JSON: ${(err as Error).message}`);
        continue;
      }
      if (record === null || typeof record !== 'object' || Array.isArray(record)) {
        if (part === undefined || mine(part, keyed, text, profile, source, file, line, origin, summary, out)) {
          stats.problem(summary, line, `expected a JSON object, got ${record === null ? 'null' : Array.isArray(record) ? 'an array' : typeof record}`);
        }
        continue;
      }
    }
    origin.line = line;
    origin.text = text;
    if (expand === undefined) {
      const ev = profile.toEvent(record as Record<string, unknown>, origin);
      // A record parsed from JSON is its line again: keep the line, which is parsed back only if
      // a report shows the event's other fields (kept writes hold less, and nothing is copied now).
      // Still part of building the event: nothing has seen it yet.
      if (parse === undefined && ev !== null && typeof ev === 'object' && ev.record === record) {
        const building = ev as { record?: unknown; text?: string; offset?: number; bytes?: number };
        building.record = undefined;
        building.text = text;
        if (offsets !== undefined) {
          building.offset = origin.offset;
          building.bytes = origin.bytes;
        }
      }
      if (part !== undefined && (ev === null || typeof ev === 'string')) {
        if (mine(part, keyed, text, profile, source, file, line, origin, summary, out)) count(ev, stats, summary, line, out);
        continue;
      }
      count(ev, stats, summary, line, out, part, keyed === OWN, profile);
      continue;
    }
    const records = expand(record as Record<string, unknown>);
    if (records.length === 0) {
      if (part === undefined || part.index === 0) summary.ignored++;
      else summary.otherPartitions!++;
      continue;
    }
    // Several records on one line: each is counted; `expanded` keeps the sum reconciled.
    summary.expanded += records.length - 1;
    for (const r of records) count(profile.toEvent(r, origin), stats, summary, line, out, part, false, profile);
  }
  if (skipped > 0) (early ??= []).push(out.length, skipped, skippedMax);
  return part === undefined ? out : part.fold(out, early);
}

/** The look columns a batch came with (the reader of --jobs), if any. */
function looks0(raw: ByteLineBatch | undefined): LookColumns | undefined {
  const looks = raw?.looks;
  return looks === undefined ? undefined : { looks, lookTs: raw!.lookTs!, lookSource: raw!.lookSource!, lookSources: raw!.lookSources! };
}

/** The key reader has not looked at the line, looked and could not read it, or read this partition's key. */
const UNREAD = 0;
const DECLINED = 1;
const OWN = 2;

/** An event of the line: this partition's (counted and kept), or another's (a placeholder in its place). */
function take(ev: LockEvent, keyed: number, part: PartitionFilter | undefined, profile: Profile, summary: FileSummary, out: LockEvent[]): void {
  if (part === undefined || keyed === OWN || part.owns(ev.resource)) {
    summary.events++;
    out.push(ev);
  } else {
    summary.otherPartitions!++;
    out.push(part.fromEvent(ev, profile, isLeaseScoped(ev)));
  }
}

/**
 * A line that became no event (ignored or invalid): true when it is this partition's to count (see
 * partition.ts). A line whose key the key reader reads keeps its place in the merge (a placeholder,
 * `extra` when it is this partition's); another partition's is counted in otherPartitions here.
 */
function mine(part: PartitionFilter, keyed: number, text: string, profile: Profile, source: string, file: string, line: number, origin: { offset: number | undefined; bytes: number | undefined }, summary: FileSummary, out: LockEvent[]): boolean {
  let p = keyed === OWN ? part.index : keyed === DECLINED ? -1 : part.lookAtText(profile, text);
  if (p !== -1) {
    out.push(part.fromLook(source, file, line, origin.offset, origin.bytes, p === part.index, profile));
  } else p = 0;
  if (p === part.index) return true;
  summary.otherPartitions!++;
  return false;
}

/**
 * Count what a profile made of one record: an event, ignored, or invalid with its reason. With a
 * partition, an event of another partition is counted in otherPartitions and stands in the merge
 * as a placeholder; a record that is no event is partition 0's (unless `keyed`: the key reader
 * read this partition's key from its line).
 */
export function count(ev: LockEvent | string | null, stats: InputStats, summary: FileSummary, line: number, out: LockEvent[], part?: PartitionFilter, keyed = false, profile?: Profile): void {
  if (part !== undefined && !keyed) {
    if (ev === null || typeof ev === 'string' ? part.index !== 0 : !part.owns(ev.resource)) {
      summary.otherPartitions!++;
      if (ev !== null && typeof ev === 'object') out.push(part.fromEvent(ev, profile!, isLeaseScoped(ev)));
      return;
    }
  }
  if (ev === null) summary.ignored++;
  else if (typeof ev === 'string') stats.problem(summary, line, ev);
  else {
    summary.events++;
    out.push(ev);
  }
}

/**
 * Damage that JSON.parse would report obscurely, or not at all: a byte-order mark in the middle of
 * a file (two files concatenated), carriage returns inside a line (CR-only line ends) and NUL bytes.
 * (Bytes that are not UTF-8 are found by the line reader.)
 */
function suspicious(text: string): string | undefined {
  const c0 = text.charCodeAt(0);
  if (c0 === 0xfeff) return 'a byte-order mark (BOM) in the middle of the input: two files concatenated? (a BOM is only skipped on line 1)';
  if (text.indexOf('\r') !== -1) return 'carriage return inside the line: the file seems to use CR-only line ends (convert them to LF, e.g. tr "\\r" "\\n")';
  if (text.indexOf('\u0000') !== -1) return 'NUL byte in the line (binary data or a corrupted file)';
  return undefined;
}

export function isBlankBytes(b: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c !== 32 && c !== 9 && c !== 13 && c !== 11 && c !== 12) return false;
  }
  return true;
}

/** The first non-blank line of a batch, if any (for profile detection). */
export function firstContentLine(batch: LineBatch): string | undefined {
  for (const l of batch.lines) if (l !== null && !isBlank(l)) return l;
  return undefined;
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13 && c !== 11 && c !== 12) return false;
  }
  return true;
}
