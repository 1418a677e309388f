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
 * timestamp is within `windowMs` of the newest timestamp read are remembered (a key per event in
 * a hash map: one lookup per event, however many share a millisecond), and at most
 * MAX_REMEMBERED of them holding at most MAX_REMEMBERED_CHARS of text: memory is bounded, never
 * growing with the input. A copy that arrives more than the window behind the newest timestamp
 * read (a file resent long after, far out of order), or past those bounds, is not recognised
 * and is analysed again, as without this check.
 *
 * Two genuinely separate effects logged identically in the same millisecond cannot be told apart
 * from a copy: log an operationId, a lease or a token that differ (a retry that really happened
 * differs in its timestamp or in some field, and is analysed).
 */
import type { LockEvent } from '../model/event.js';
import { parseTimestamp } from '../model/time.js';

/** The window of remembered events when the clock-skew bound is smaller, ms. */
export const DUPLICATE_WINDOW_MS = 1000;
/** Events remembered at most, and the characters of their lines held at most. */
export const MAX_REMEMBERED = 100_000;
export const MAX_REMEMBERED_CHARS = 32 * 1024 * 1024;

interface Remembered {
  ts: number;
  /** The line's text or the parsed record: compared only when the canonical fields are equal. */
  content: string | Readonly<Record<string, unknown>> | undefined;
  chars: number;
  /** Further remembered events with the same canonical key but other content (rare). */
  more?: Remembered[];
}

export class RecentEvents {
  /** By canonical key, in arrival order (a Map keeps insertion order). */
  private readonly byKey = new Map<string, Remembered>();
  private newest = -Infinity;
  private chars = 0;
  private count = 0;

  constructor(
    private readonly windowMs: number,
    private readonly maxEvents = MAX_REMEMBERED,
    private readonly maxChars = MAX_REMEMBERED_CHARS,
  ) {}

  /** True when `ev` is a copy of an event read before within the window; else it is remembered. */
  seen(ev: LockEvent): boolean {
    const ts = ev.ts;
    if (ts > this.newest) {
      this.newest = ts;
      this.forget();
    } else if (ts < this.newest - this.windowMs) return false; // older than the window: not remembered
    const key = keyOf(ev);
    const content = contentOf(ev);
    const prev = this.byKey.get(key);
    if (prev !== undefined) {
      if (sameContent(prev.content, content)) return true;
      for (const m of prev.more ?? []) if (sameContent(m.content, content)) return true;
    }
    const entry: Remembered = { ts, content, chars: typeof content === 'string' ? content.length : 256 };
    if (prev !== undefined) (prev.more ??= []).push(entry);
    else this.byKey.set(key, entry);
    this.count++;
    this.chars += entry.chars;
    if (this.count > this.maxEvents || this.chars > this.maxChars) this.evictOldest();
    return false;
  }

  /** Events remembered now (for tests of the bound). */
  get size(): number {
    return this.count;
  }

  /** Forget the events older than the window, oldest arrival first. */
  private forget(): void {
    const limit = this.newest - this.windowMs;
    for (const [key, e] of this.byKey) {
      // Arrival order is timestamp order but for events out of order by less than the window:
      // stopping at the first recent one keeps an older one at most one window longer.
      if (e.ts >= limit) break;
      this.drop(key, e);
    }
  }

  private evictOldest(): void {
    while (this.count > this.maxEvents || this.chars > this.maxChars) {
      const first = this.byKey.entries().next();
      if (first.done === true) return;
      this.drop(first.value[0], first.value[1]);
    }
  }

  private drop(key: string, e: Remembered): void {
    this.byKey.delete(key);
    this.count -= 1 + (e.more?.length ?? 0);
    this.chars -= e.chars;
    for (const m of e.more ?? []) this.chars -= m.chars;
  }
}

/** The source as the record gave it; undefined when it is the input's default (its name). */
function givenSource(e: LockEvent): string | undefined {
  return e.source === e.file ? undefined : e.source;
}

/** Every canonical field, and the instant, in one string. */
function keyOf(e: LockEvent): string {
  return `${e.ts}\u0000${e.type}\u0000${e.resource}\u0000${e.result}\u0000${e.ownerId ?? '\u0001'}\u0000${e.leaseId ?? '\u0001'}\u0000${e.operationId ?? '\u0001'}\u0000${e.fenceToken ?? '\u0001'}\u0000${e.ttlMs ?? '\u0001'}\u0000${e.observer}\u0000${givenSource(e) ?? '\u0001'}`;
}

/** What else the event's record said: its parsed record when it has one, else its line. */
function contentOf(e: LockEvent): string | Readonly<Record<string, unknown>> | undefined {
  return e.record ?? e.text;
}

function sameContent(a: Remembered['content'], b: Remembered['content']): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
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
