/**
 * Writes by (resource, operationId), bounded: the oldest entries are forgotten past the cap, so
 * memory does not grow with the number of operations. Ties worker and resource views of one write.
 *
 * Compact: entries are the slots of a ring (the oldest is overwritten), their fields in arrays;
 * the writes they keep are records of an EventPool (shared with the timelines', so the accepted
 * write that is also its resource's highest is kept once), built into events when asked for.
 */
import { detach, type LockEvent } from '../model/event.js';
import type { Finding } from '../model/report.js';
import { EventPool } from './pool.js';

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

export class OperationIndex {
  /** operationId → the slot of its oldest entry; further entries (the same operationId on other resources) in `more`, oldest first. */
  private readonly map = new Map<string, number>();
  private readonly more = new Map<string, number[]>();
  private readonly operationIds: (string | undefined)[];
  private readonly resources: (string | undefined)[];
  /** Per slot: the accepted write's record, the first view's record (views are linked by `events.next`), -1 for none. */
  private readonly accepted: Int32Array;
  private readonly firstView: Int32Array;
  private readonly viewCount: Uint8Array;
  private readonly linked = new Map<number, Finding[]>();
  private readonly events: EventPool;
  private next = 0;

  constructor(max = DEFAULT_MAX_OPERATIONS, events: EventPool = new EventPool()) {
    const n = Math.max(1, max);
    this.operationIds = new Array<string | undefined>(n).fill(undefined);
    this.resources = new Array<string | undefined>(n).fill(undefined);
    this.accepted = new Int32Array(n).fill(-1);
    this.firstView = new Int32Array(n).fill(-1);
    this.viewCount = new Uint8Array(n);
    this.events = events;
  }

  /** The entry's slot, or -1. */
  private find(resource: string, operationId: string): number {
    const first = this.map.get(operationId);
    if (first === undefined) return -1;
    if (this.resources[first] === resource) return first;
    const list = this.more.get(operationId);
    if (list !== undefined) for (const s of list) if (this.resources[s] === resource) return s;
    return -1;
  }

  get(resource: string, operationId: string): OperationEntry | undefined {
    const s = this.find(resource, operationId);
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

  /** The entry's slot, the entry created if needed. The oldest operations are forgotten first (first in, first out). */
  touch(resource: string, operationId: string): number {
    const found = this.find(resource, operationId);
    if (found !== -1) return found;
    const s = this.next;
    this.next = (s + 1) % this.operationIds.length;
    if (this.operationIds[s] !== undefined) this.forget(s);
    // The key outlives its line: detached (see detach()).
    operationId = detach(operationId);
    this.operationIds[s] = operationId;
    this.resources[s] = resource;
    if (!this.map.has(operationId)) this.map.set(operationId, s);
    else {
      let list = this.more.get(operationId);
      if (list === undefined) this.more.set(operationId, (list = []));
      list.push(s);
    }
    return s;
  }

  /** Forget the entry in slot s: the oldest of all, so the oldest stored under its operationId. */
  private forget(s: number): void {
    const operationId = this.operationIds[s]!;
    const list = this.more.get(operationId);
    if (list === undefined || list.length === 0) {
      this.more.delete(operationId);
      this.map.delete(operationId);
    } else {
      this.map.set(operationId, list.shift()!);
      if (list.length === 0) this.more.delete(operationId);
    }
    this.operationIds[s] = undefined;
    this.resources[s] = undefined;
    if (this.accepted[s] !== -1) this.events.free(this.accepted[s]!);
    this.accepted[s] = -1;
    for (let v = this.firstView[s]!; v !== -1; ) {
      const next = this.events.next(v);
      this.events.free(v);
      v = next;
    }
    this.firstView[s] = -1;
    this.viewCount[s] = 0;
    this.linked.delete(s);
  }

  /** The first accepted decision for the operation, kept unless one is already. */
  accept(s: number, write: LockEvent, resource: string): void {
    if (this.accepted[s] === -1) this.accepted[s] = this.events.put(write, { resource });
  }

  /** Add a worker's view (at most MAX_VIEWS); false when there is no more room. */
  addView(s: number, view: LockEvent): boolean {
    const n = this.viewCount[s]!;
    if (n >= MAX_VIEWS) return false;
    const events = this.events;
    const r = events.put(view);
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
