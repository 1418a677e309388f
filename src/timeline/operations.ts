/**
 * Writes by (resource, operationId), bounded: the oldest entries are forgotten past the cap, so
 * memory does not grow with the number of operations. Ties worker and resource views of one write.
 *
 * Compact: entries are the slots of a ring (the oldest is overwritten), their fields in typed
 * arrays, found through an open-addressing table of slot numbers keyed by a hash of the resource
 * id and the operationId (no Map, no object per entry). The writes they keep are records of the
 * timelines' EventPool (the accepted write that is also its resource's highest is one record),
 * built into events when asked for.
 */
import type { LockEvent } from '../model/event.js';
import type { Finding } from '../model/report.js';
import { hashString, type EventPool } from './pool.js';
import { TimelineStore } from './timeline.js';

export const DEFAULT_MAX_OPERATIONS = 100_000;
const MAX_VIEWS = 4;
const MAX_LINKED = 4;

/** What is known of one operation on one resource (built when asked for). */
export interface OperationEntry {
  /** The first accepted decision for this operation. */
  readonly accepted?: LockEvent;
  /** Worker-observed events that are views of the resource's decisions (not judged themselves). */
  readonly views?: readonly LockEvent[];
  /** Findings about this operation's writes. */
  readonly findings?: readonly Finding[];
}

const NONE: readonly never[] = [];

/** A hash of a resource id and an operationId. */
function hashOf(resource: number, operationId: string): number {
  return hashString(operationId, resource);
}

export class OperationIndex {
  /** Per slot: the operationId (a handle in the store's texts), its resource, its hash; -1 for a free slot's resource. */
  private readonly operationIds: Int32Array;
  private readonly resources: Int32Array;
  private readonly hashes: Int32Array;
  /** Per slot: the accepted write's record, the first view's record (views are linked by the pool's `next`), -1 for none. */
  private readonly accepted: Int32Array;
  private readonly firstView: Int32Array;
  private readonly viewCount: Uint8Array;
  private readonly linked = new Map<number, Finding[]>();
  /** Open addressing, linear probing: slot + 1 at each position, 0 for empty; at most half full. */
  private readonly table: Int32Array;
  private readonly mask: number;
  private readonly events: EventPool;
  private next = 0;

  constructor(
    max = DEFAULT_MAX_OPERATIONS,
    /** The timelines' state: resource ids, and the pool the kept writes go to. */
    private readonly store: TimelineStore = new TimelineStore(),
  ) {
    const n = Math.max(1, max);
    this.operationIds = new Int32Array(n).fill(-1);
    this.resources = new Int32Array(n).fill(-1);
    this.hashes = new Int32Array(n);
    this.accepted = new Int32Array(n).fill(-1);
    this.firstView = new Int32Array(n).fill(-1);
    this.viewCount = new Uint8Array(n);
    let size = 4;
    while (size < 2 * n) size *= 2;
    this.table = new Int32Array(size);
    this.mask = size - 1;
    this.events = store.events;
  }

  /** The entry's slot, or -1. */
  private find(resource: number, operationId: string, h: number): number {
    const table = this.table;
    const mask = this.mask;
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const e = table[p]!;
      if (e === 0) return -1;
      const s = e - 1;
      if (this.hashes[s] === h && this.resources[s] === resource && this.store.texts.is(this.operationIds[s]!, operationId)) return s;
    }
  }

  get(resource: string, operationId: string): OperationEntry | undefined {
    const id = this.store.idOf(resource);
    if (id === -1) return undefined;
    const s = this.find(id, operationId, hashOf(id, operationId));
    if (s === -1) return undefined;
    const self = this;
    return {
      get accepted() {
        return self.acceptedAt(s);
      },
      get views() {
        return self.viewsAt(s);
      },
      get findings() {
        return self.findingsAt(s);
      },
    };
  }

  /** Entries made so far (partition runs compare the sum over partitions with the cap at merge). */
  made = 0;

  /**
   * The slot of the write's operation on its resource (`resource`, an id of the store), the entry
   * created if needed. The oldest operations are forgotten first (first in, first out).
   */
  touch(resource: number, write: LockEvent): number {
    const operationId = write.operationId!;
    const h = hashOf(resource, operationId);
    const found = this.find(resource, operationId, h);
    if (found !== -1) return found;
    this.made++;
    const s = this.next;
    this.next = (s + 1) % this.resources.length;
    if (this.resources[s] !== -1) this.forget(s);
    this.operationIds[s] = this.store.texts.put(operationId);
    this.resources[s] = resource;
    this.hashes[s] = h;
    const table = this.table;
    const mask = this.mask;
    let p = h & mask;
    while (table[p] !== 0) p = (p + 1) & mask;
    table[p] = s + 1;
    return s;
  }

  /** Forget the entry in slot s (the oldest of all). */
  private forget(s: number): void {
    this.unindex(s);
    this.store.texts.free(this.operationIds[s]!);
    this.operationIds[s] = -1;
    const resource = this.resources[s]!;
    this.resources[s] = -1;
    const hadWrite = this.accepted[s] !== -1;
    if (hadWrite) this.events.free(this.accepted[s]!);
    this.accepted[s] = -1;
    for (let v = this.firstView[s]!; v !== -1; ) {
      const next = this.events.next(v);
      this.events.free(v);
      v = next;
    }
    // Its resource's highest write may be held by its summary record alone now (once the views,
    // which may hold the same record when the worker's line was the decision, are let go too).
    if (hadWrite) this.store.repack(resource);
    this.firstView[s] = -1;
    this.viewCount[s] = 0;
    this.linked.delete(s);
  }

  /** Take slot s out of the table, shifting back the entries after it that probed past it. */
  private unindex(s: number): void {
    const table = this.table;
    const mask = this.mask;
    let p = this.hashes[s]! & mask;
    while (table[p] !== s + 1) p = (p + 1) & mask;
    table[p] = 0;
    for (let q = (p + 1) & mask; table[q] !== 0; q = (q + 1) & mask) {
      const e = table[q]!;
      const home = this.hashes[e - 1]! & mask;
      // Move e into the hole when its home position is not between the hole and q (cyclically).
      if ((q > p && (home <= p || home > q)) || (q < p && home <= p && home > q)) {
        table[p] = e;
        table[q] = 0;
        p = q;
      }
    }
  }

  /** The first accepted decision for the operation, kept unless one is already. */
  accept(s: number, write: LockEvent): void {
    if (this.accepted[s] === -1) this.accepted[s] = this.events.put(write, this.resources[s]!, { operationText: this.operationIds[s]! });
  }

  /** Add a worker's view (at most MAX_VIEWS); false when there is no more room. */
  addView(s: number, view: LockEvent): boolean {
    const n = this.viewCount[s]!;
    if (n >= MAX_VIEWS) return false;
    const events = this.events;
    const r = events.put(view, this.resources[s]!, { operationText: this.operationIds[s]! });
    events.setNext(r, -1);
    if (n === 0) this.firstView[s] = r;
    else {
      let last = this.firstView[s]!;
      while (events.next(last) !== -1) last = events.next(last);
      events.setNext(last, r);
    }
    this.viewCount[s] = n + 1;
    return true;
  }

  link(s: number, finding: Finding): void {
    const findings = this.linked.get(s);
    if (findings === undefined) this.linked.set(s, [finding]);
    else if (findings.length < MAX_LINKED && !findings.includes(finding)) findings.push(finding);
  }

  acceptedAt(s: number): LockEvent | undefined {
    const r = this.accepted[s]!;
    return r === -1 ? undefined : this.events.event(r);
  }

  /** The worker views kept of the operation, built (in the order they came). */
  viewsAt(s: number): readonly LockEvent[] {
    if (this.viewCount[s] === 0) return NONE;
    const out: LockEvent[] = [];
    for (let v = this.firstView[s]!; v !== -1; v = this.events.next(v)) out.push(this.events.event(v));
    return out;
  }

  findingsAt(s: number): readonly Finding[] {
    return this.linked.get(s) ?? NONE;
  }

  static views(entry: OperationEntry | undefined): readonly LockEvent[] {
    return entry?.views ?? NONE;
  }
}
