/**
 * At-least-once delivery: log shippers deliver a line twice, a file is collected twice, one log
 * reaches two inputs. An event identical to one already read is a copy: it is counted as a
 * duplicate of its input and never analysed twice.
 *
 * Identical means every canonical field: the instant (`ts`, to the millisecond, or finer when the
 * log wrote finer), type, resource, ownerId, leaseId, operationId, fenceToken, ttlMs, result,
 * observer, and the source *as the record gave it* (`source`, else `hostname`/`host.name`).
 * Not the input, file or line, and not a default source (the input's name, used when the record
 * names none; a record whose source equals its own input's name counts as naming none): so the
 * same line in two files without a source is one event, two copies naming the same host are one
 * event, and copies naming different sources are two events.
 *
 * Copies share a timestamp, so they meet in the merge close together. Only the events whose
 * timestamp is within `windowMs` of the newest timestamp read are remembered, in arrival order
 * (indexed by timestamp only while some arrived out of order); memory grows with the events of
 * that window, never with the input. A copy that
 * arrives more than the window behind the newest timestamp read (a file resent long after, far
 * out of order) is not recognised and is analysed again, as without this check.
 *
 * Two genuinely separate effects logged identically in the same millisecond cannot be told apart
 * from a copy: log an operationId, a lease or a token that differ (a retry that really happened
 * differs in its timestamp or in some field, and is analysed).
 */
import type { LockEvent } from '../model/event.js';

/** The window of remembered events when the clock-skew bound is smaller, ms. */
export const DUPLICATE_WINDOW_MS = 1000;

export class RecentEvents {
  /** The events remembered, in the order they arrived (from `head` on). */
  private q: LockEvent[] = [];
  private head = 0;
  private newest = -Infinity;
  /**
   * By timestamp, only while the remembered events are out of timestamp order (an event arrived
   * behind the newest). In order (the usual case: sorted inputs, merged) the events of a
   * timestamp are at the end of `q`, and nothing else is needed.
   */
  private index: Map<number, LockEvent | LockEvent[]> | undefined;
  /** Position in `q` of the last event that arrived behind the newest timestamp. */
  private disorderedAt = -1;

  constructor(private readonly windowMs: number) {}

  /** True when `ev` is a copy of an event read before within the window; else it is remembered. */
  seen(ev: LockEvent): boolean {
    const ts = ev.ts;
    if (ts > this.newest) {
      // Nothing remembered has this timestamp.
      this.newest = ts;
      this.forget();
      this.remember(ev);
      return false;
    }
    // Older than the window: not a copy of anything remembered, and not remembered.
    if (ts < this.newest - this.windowMs) return false;
    const index = this.index;
    if (index === undefined) {
      const q = this.q;
      for (let j = q.length - 1; j >= this.head; j--) {
        const p = q[j]!;
        if (p.ts < ts) break;
        if (p.ts === ts && sameEvent(p, ev)) return true;
      }
      if (ts < this.newest) this.buildIndex();
    } else {
      const prev = index.get(ts);
      if (prev !== undefined) {
        if (Array.isArray(prev)) {
          for (let i = 0; i < prev.length; i++) if (sameEvent(prev[i]!, ev)) return true;
        } else if (sameEvent(prev, ev)) return true;
      }
    }
    if (ts < this.newest) this.disorderedAt = this.q.length;
    this.remember(ev);
    return false;
  }

  /** Events remembered now (for tests of the bound). */
  get size(): number {
    return this.q.length - this.head;
  }

  private remember(ev: LockEvent): void {
    this.q.push(ev);
    const index = this.index;
    if (index === undefined) return;
    const prev = index.get(ev.ts);
    if (prev === undefined) index.set(ev.ts, ev);
    else if (Array.isArray(prev)) prev.push(ev);
    else index.set(ev.ts, [prev, ev]);
  }

  private buildIndex(): void {
    this.index = new Map();
    const q = this.q;
    const all = q.splice(this.head);
    q.length = 0;
    this.disorderedAt -= this.head;
    this.head = 0;
    for (const e of all) this.remember(e);
  }

  /** Forget the events older than the window, oldest arrival first. */
  private forget(): void {
    const limit = this.newest - this.windowMs;
    const q = this.q;
    const index = this.index;
    let h = this.head;
    while (h < q.length && q[h]!.ts < limit) {
      // Every event of that timestamp is out of the window too.
      if (index !== undefined) index.delete(q[h]!.ts);
      q[h++] = undefined as unknown as LockEvent;
    }
    // Past the last event that arrived out of order, the rest are in order again.
    if (index !== undefined && h > this.disorderedAt) this.index = undefined;
    if (h > 4096 && h * 2 > q.length) {
      this.q = q.slice(h);
      this.disorderedAt -= h;
      h = 0;
    }
    this.head = h;
  }
}

/** The source as the record gave it; undefined when it is the input's default (its name). */
function givenSource(e: LockEvent): string | undefined {
  return e.source === e.file ? undefined : e.source;
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
