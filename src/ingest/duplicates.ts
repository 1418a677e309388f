/**
 * At-least-once delivery: log shippers deliver a line twice, a file is collected twice, one log
 * reaches two inputs. An event identical to one already read is a copy: it is counted as a
 * duplicate of its input and never analysed twice.
 *
 * Identical means every canonical field: the instant (`ts`, to the millisecond, or finer when the
 * log wrote finer), type, resource, ownerId, leaseId, operationId, fenceToken, ttlMs, result,
 * observer, and the source *as the record gave it* (`source`, else `hostname`/`host.name`); and
 * the same record otherwise too (its line's text, or the parsed record, field for field), so a
 * retry logged in the same millisecond with `"attempt":2` is an event, not a copy.
 * Not the input, file or line, and not a default source (the input's name, used when the record
 * names none; a record whose source equals its own input's name counts as naming none): so the
 * same line in two files without a source is one event, two copies naming the same host are one
 * event, and copies naming different sources are two events.
 *
 * Copies share a timestamp, so they meet in the merge close together. Only the events whose
 * timestamp is within `windowMs` of the newest timestamp read are remembered, by timestamp (the
 * events of one timestamp compared one by one while they are few, by a key of their canonical
 * fields once they are many: never quadratic, however many share a millisecond), and at most
 * MAX_REMEMBERED of them holding at most MAX_REMEMBERED_CHARS of text: memory is bounded, never
 * growing with the input. A line longer than MAX_REMEMBERED_LINE characters (or a record holding
 * more) is remembered as a digest of its record (digest.ts: SHA-256 of a canonical serialization,
 * equal exactly when the comparison below calls two records the same) and its event as its
 * canonical fields only, so memory does not grow with line length either. A copy that arrives
 * more than the window behind the newest timestamp read (a file resent long after, far out of
 * order), or past those bounds, is not recognised and is analysed again, as without this check.
 *
 * Two genuinely separate effects logged identically in the same millisecond cannot be told apart
 * from a copy: log an operationId, a lease or a token that differ (a retry that really happened
 * differs in its timestamp or in some field, and is analysed).
 */
import { KeptEvent, keptString, type LineReader, type LockEvent } from '../model/event.js';
import { parseTimestamp } from '../model/time.js';
import { DIGEST_CHARS, digestOfText, digestOfValue, LineDigest } from './digest.js';

/** The window of remembered events when the clock-skew bound is smaller, ms. */
export const DUPLICATE_WINDOW_MS = 1000;
/** Events remembered at most, and the characters of their lines held at most. */
export const MAX_REMEMBERED = 100_000;
export const MAX_REMEMBERED_CHARS = 32 * 1024 * 1024;
/** A line remembered as it is up to this many characters; a longer one as its digest. */
export const MAX_REMEMBERED_LINE = 4096;

/**
 * The digests of events whose `text` is not their whole line (a long line of stdin read on the
 * byte path keeps a shortened copy for display, see records.ts): the duplicate check compares
 * those by this digest of the whole line, made when the line was read.
 */
const digests = new WeakMap<LockEvent, LineDigest>();
let anyDigest = false;

/** Note the digest of the whole line of `ev` (made from its bytes), for an event whose text is not its line. */
export function noteDigest(ev: LockEvent, digest: LineDigest): void {
  digests.set(ev, digest);
  anyDigest = true;
}

interface Remembered {
  ts: number;
  ev: LockEvent;
  /**
   * The line's text or the parsed record, taken when it arrived (the engine may drop them from the
   * event later). An event of the byte path has neither, only where its line is (offset, bytes):
   * its line is read back the first time it must be compared, and kept here from then on.
   */
  content: string | Readonly<Record<string, unknown>> | LineDigest | undefined;
  /** What `content` counts against MAX_REMEMBERED_CHARS (charsOf, once). */
  chars: number;
}

/** A line that could not be read back: never the same as anything. */
const UNREADABLE = Symbol('unreadable');
type Content = Remembered['content'] | typeof UNREADABLE;

/** Events of one timestamp compared one by one at most: past it, they are looked up by key (hostile input). */
const LIST_MAX = 16;

export class RecentEvents {
  /** The events remembered, in arrival order, from `head` on. */
  private q: Remembered[] = [];
  private head = 0;
  private newest = -Infinity;
  private chars = 0;
  /** The events of the newest timestamp by canonical key, once there are more than LIST_MAX of them. */
  private hot: Map<string, Remembered[]> | undefined;
  private hotTs = NaN;
  /** By timestamp, only while some remembered event arrived behind the newest (rare: a file whose clock went back). */
  private index: Map<number, Remembered[]> | undefined;
  /** Position in `q` of the last event that arrived behind the newest timestamp. */
  private disorderedAt = -1;

  /** The event being checked, and its content once read back (see current()). */
  private ev: LockEvent | undefined;
  private evContent: Content;
  private evResolved = false;

  constructor(
    private readonly windowMs: number,
    private readonly maxEvents = MAX_REMEMBERED,
    private readonly maxChars = MAX_REMEMBERED_CHARS,
    /** Reads a line back by reference, for events that hold where their line is instead of its text. */
    private readonly lines?: LineReader,
  ) {}

  /** True when `ev` is a copy of an event read before within the window; else it is remembered. */
  seen(ev: LockEvent): boolean {
    const ts = ev.ts;
    let content: Remembered['content'] = ev.record ?? (anyDigest ? digests.get(ev) : undefined) ?? ev.text;
    if (ts > this.newest) {
      // The usual case: nothing remembered has this timestamp.
      this.newest = ts;
      this.forget(ts - this.windowMs);
    } else {
      if (ts < this.newest - this.windowMs) return false; // older than the window: not remembered
      this.ev = ev;
      this.evContent = content;
      this.evResolved = false;
      const copy = this.isCopy(ev, ts);
      // Read back while checking: kept, so that it is not read again.
      if (content === undefined && typeof this.evContent === 'string') content = this.evContent;
      this.ev = undefined;
      this.evContent = undefined;
      this.evResolved = false;
      if (copy) return true;
    }
    const kept = short(content);
    // Remembered as its digest: not the event either, which holds the line (or the record).
    this.remember({ ts, ev: kept === content ? ev : slim(ev), content: kept, chars: charsOf(kept) });
    if (this.size > this.maxEvents || this.chars > this.maxChars) this.evict();
    if (this.size > this.peak) this.peak = this.size;
    if (this.chars > this.peakChars) this.peakChars = this.chars;
    return false;
  }

  /** The most events, and characters of lines, remembered at once (partition runs compare them with the bounds at merge). */
  peak = 0;
  peakChars = 0;

  /** The window (ms): partition runs check copies found past a single run's window. */
  get window(): number {
    return this.windowMs;
  }

  /** Events remembered now (for tests of the bound). */
  get size(): number {
    return this.q.length - this.head;
  }

  /** The content of the event being checked (read back if need be, once). */
  private current(): Content {
    if (!this.evResolved) {
      this.evResolved = true;
      if (this.evContent === undefined) this.evContent = this.readBack(this.ev!);
    }
    return this.evContent;
  }

  /** The content of a remembered event (read back the first time, then kept). */
  private contentOf(r: Remembered): Content {
    if (r.content !== undefined) return r.content;
    const c = this.readBack(r.ev);
    if (typeof c === 'string') {
      r.content = short(c);
      const chars = charsOf(r.content);
      this.chars += chars - r.chars;
      r.chars = chars;
    }
    return c;
  }

  /** The line of an event that holds only where it is; undefined for an event with no line at all. */
  private readBack(ev: LockEvent): Content {
    if (ev.offset === undefined || ev.bytes === undefined || this.lines === undefined) return undefined;
    const text = this.lines(ev.file, ev.offset, ev.bytes);
    return typeof text === 'string' ? text : UNREADABLE;
  }

  private same(r: Remembered): boolean {
    const a = this.contentOf(r);
    if (a === UNREADABLE) return false;
    const b = this.current();
    if (b === UNREADABLE) return false;
    return sameContent(a, b);
  }

  private isCopy(ev: LockEvent, ts: number): boolean {
    if (ts === this.hotTs && this.hot !== undefined) {
      for (const r of this.hot.get(keyOf(ev)) ?? []) if (this.same(r)) return true;
      return false;
    }
    if (ts < this.newest || this.index !== undefined) {
      if (this.index === undefined) this.buildIndex();
      for (const r of this.index!.get(ts) ?? []) if (sameEvent(r.ev, ev) && this.same(r)) return true;
      this.disorderedAt = ts < this.newest ? this.q.length : this.disorderedAt;
      return false;
    }
    // In order, at the newest timestamp: its events are the last ones remembered.
    const q = this.q;
    let n = 0;
    for (let j = q.length - 1; j >= this.head && q[j]!.ts === ts; j--, n++) {
      const r = q[j]!;
      if (sameEvent(r.ev, ev) && this.same(r)) return true;
    }
    if (n >= LIST_MAX) {
      // Many events in one millisecond: look them up by key from now on.
      const hot = new Map<string, Remembered[]>();
      for (let j = q.length - n; j < q.length; j++) add(hot, keyOf(q[j]!.ev), q[j]!);
      this.hot = hot;
      this.hotTs = ts;
    }
    return false;
  }

  private remember(r: Remembered): void {
    this.q.push(r);
    this.chars += r.chars;
    if (r.ts === this.hotTs && this.hot !== undefined) add(this.hot, keyOf(r.ev), r);
    const list = this.index?.get(r.ts);
    if (list !== undefined) list.push(r);
    else this.index?.set(r.ts, [r]);
  }

  private buildIndex(): void {
    const index = new Map<number, Remembered[]>();
    for (let j = this.head; j < this.q.length; j++) {
      const r = this.q[j]!;
      const list = index.get(r.ts);
      if (list !== undefined) list.push(r);
      else index.set(r.ts, [r]);
    }
    this.index = index;
  }

  /** Forget the events older than `limit`, oldest arrival first. */
  private forget(limit: number): void {
    const q = this.q;
    let h = this.head;
    // Arrival order is timestamp order but for events out of order by less than the window:
    // stopping at the first recent one keeps an older one at most one window longer.
    while (h < q.length && q[h]!.ts < limit) h = this.dropAt(h);
    this.settle(h);
  }

  private evict(): void {
    let h = this.head;
    while (h < this.q.length && (this.q.length - h > this.maxEvents || this.chars > this.maxChars)) h = this.dropAt(h);
    this.settle(h);
  }

  private dropAt(h: number): number {
    const r = this.q[h]!;
    this.chars -= r.chars;
    if (this.index !== undefined) this.index.delete(r.ts);
    if (r.ts === this.hotTs && this.hot !== undefined) {
      const key = keyOf(r.ev);
      const list = this.hot.get(key)?.filter((x) => x !== r);
      if (list !== undefined && list.length > 0) this.hot.set(key, list);
      else this.hot.delete(key);
    }
    this.q[h] = undefined as unknown as Remembered;
    return h + 1;
  }

  private settle(h: number): void {
    if (this.hot !== undefined && this.hotTs !== this.newest) this.hot = undefined;
    // Past the last event that arrived out of order, the rest are in order again.
    if (this.index !== undefined && h > this.disorderedAt) this.index = undefined;
    if (h > 4096 && h * 2 > this.q.length) {
      this.q = this.q.slice(h);
      this.disorderedAt -= h;
      h = 0;
    }
    this.head = h;
  }
}

function add(map: Map<string, Remembered[]>, key: string, r: Remembered): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [r]);
  else list.push(r);
}

function charsOf(content: Remembered['content']): number {
  return typeof content === 'string' ? content.length : content instanceof LineDigest ? DIGEST_CHARS : content === undefined ? 256 : Math.max(256, recordChars(content));
}

/** A content as it is remembered: a line longer than MAX_REMEMBERED_LINE, or a record holding more than that many characters, as its digest. */
function short(content: Remembered['content']): Remembered['content'] {
  if (typeof content === 'string') return content.length > MAX_REMEMBERED_LINE ? digestOfText(content) : content;
  if (content === undefined || content instanceof LineDigest) return content;
  return recordChars(content) > MAX_REMEMBERED_LINE ? digestOfValue(content) : content;
}

/** About the characters a record holds: its keys and top-level strings, and 256 for anything nested. */
function recordChars(record: Readonly<Record<string, unknown>>): number {
  let n = 0;
  for (const k in record) {
    const v = record[k];
    n += k.length + (typeof v === 'string' ? v.length : v !== null && typeof v === 'object' ? 256 : 8);
  }
  return n;
}

/**
 * The event's canonical fields and where its line is, and nothing else: what a remembered event
 * compared by digest keeps (strings detached: a value sliced from a long line would keep it).
 */
function slim(ev: LockEvent): LockEvent {
  const opt = (s: string | undefined) => (s === undefined ? undefined : keptString(s, false));
  return new KeptEvent(ev.ts, ev.type, keptString(ev.resource, false), opt(ev.ownerId), opt(ev.leaseId), opt(ev.operationId), ev.fenceToken, ev.ttlMs, keptString(ev.result, false), ev.observer, ev.source === ev.file ? ev.file : keptString(ev.source, false), ev.file, ev.line, undefined, undefined, ev.offset, ev.bytes);
}

function digestOf(content: string | Readonly<Record<string, unknown>> | LineDigest): LineDigest {
  return content instanceof LineDigest ? content : typeof content === 'string' ? digestOfText(content) : digestOfValue(content);
}

/** Same canonical fields (timestamps are compared by the caller). */
export function sameEvent(a: LockEvent, b: LockEvent): boolean {
  return (
    a.resource === b.resource &&
    a.type === b.type &&
    a.result === b.result &&
    a.ownerId === b.ownerId &&
    a.leaseId === b.leaseId &&
    a.operationId === b.operationId &&
    a.fenceToken === b.fenceToken &&
    a.ttlMs === b.ttlMs &&
    a.observer === b.observer &&
    givenSource(a) === givenSource(b)
  );
}

/** The source as the record gave it; undefined when it is the input's default (its name). */
function givenSource(e: LockEvent): string | undefined {
  return e.source === e.file ? undefined : e.source;
}

/** Every canonical field, and the instant, in one string. */
function keyOf(e: LockEvent): string {
  return `${e.ts}\u0000${e.type}\u0000${e.resource}\u0000${e.result}\u0000${e.ownerId ?? '\u0001'}\u0000${e.leaseId ?? '\u0001'}\u0000${e.operationId ?? '\u0001'}\u0000${e.fenceToken ?? '\u0001'}\u0000${e.ttlMs ?? '\u0001'}\u0000${e.observer}\u0000${givenSource(e) ?? '\u0001'}`;
}

/** Whether two remembered contents are the same record (see above; exported for the digest's tests). */
export function sameContent(a: Remembered['content'], b: Remembered['content']): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  // A long line is remembered as its digest: the other is compared by its digest too.
  if (a instanceof LineDigest || b instanceof LineDigest) return digestOf(a).value === digestOf(b).value;
  // Compare as parsed values, key order aside, and a top-level timestamp by its instant: the same
  // record with its time written another way (`…00.000Z`, epoch ms) is a copy.
  let x: unknown;
  let y: unknown;
  try {
    x = typeof a === 'string' ? JSON.parse(a) : a;
    y = typeof b === 'string' ? JSON.parse(b) : b;
  } catch {
    return false;
  }
  if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object' || Array.isArray(x) || Array.isArray(y)) return sameValue(x, y);
  const rx = x as Record<string, unknown>;
  const ry = y as Record<string, unknown>;
  const kx = Object.keys(rx);
  if (kx.length !== Object.keys(ry).length) return false;
  for (const k of kx) {
    if (!Object.prototype.hasOwnProperty.call(ry, k)) return false;
    if (sameValue(rx[k], ry[k])) continue;
    const tx = parseTimestamp(rx[k] as string | number);
    const ty = parseTimestamp(ry[k] as string | number);
    if (!(tx.ok && ty.ok && tx.ms === ty.ms)) return false;
  }
  return true;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}
