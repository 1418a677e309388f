/**
 * Bounded capture of per-resource event histories, for pictures and the timeline command.
 * Off unless asked for. Each resource keeps its first `head` events and a ring of its latest
 * `perResource - head`; the whole capture stops taking events of finding-free resources once it
 * holds `total` events. What was left out is counted, never silently dropped.
 */
import { keep, type LockEvent } from '../model/event.js';

export interface CaptureOptions {
  /** Only these resources (default: all). */
  resources?: readonly string[];
  /** Events kept per resource. Default 1000. */
  perResource?: number;
  /** Events kept in all. Default 500 000. */
  total?: number;
}

class History {
  readonly head: LockEvent[] = [];
  readonly tail: (LockEvent | undefined)[];
  private next = 0;
  private tailCount = 0;
  dropped = 0;

  constructor(private readonly headSize: number, tailSize: number) {
    this.tail = new Array(tailSize);
  }

  /** Returns +1 when the capture grew by one event, 0 when an old event made room. */
  add(e: LockEvent): number {
    if (this.head.length < this.headSize) {
      this.head.push(e);
      return 1;
    }
    if (this.tail.length === 0) {
      this.dropped++;
      return 0;
    }
    const grew = this.tailCount < this.tail.length ? 1 : 0;
    if (grew === 0) this.dropped++;
    else this.tailCount++;
    this.tail[this.next] = e;
    this.next = (this.next + 1) % this.tail.length;
    return grew;
  }

  events(): LockEvent[] {
    const out = this.head.slice();
    const n = this.tail.length;
    for (let i = 0; i < n; i++) {
      const e = this.tail[(this.next + i) % n];
      if (e !== undefined) out.push(e);
    }
    return out;
  }
}

/** Events captured in all at most, by default. */
export const DEFAULT_CAPTURE_TOTAL = 500_000;

export class EventCapture {
  private readonly histories = new Map<string, History>();
  private readonly only?: Set<string>;
  private readonly perResource: number;
  private readonly total: number;
  private held = 0;

  constructor(options: CaptureOptions = {}) {
    this.only = options.resources === undefined ? undefined : new Set(options.resources);
    this.perResource = Math.max(2, options.perResource ?? 1000);
    this.total = options.total ?? DEFAULT_CAPTURE_TOTAL;
  }

  /** `hasFindings` lets resources with findings keep capturing past the total cap. */
  add(e: LockEvent, hasFindings: boolean): void {
    if (this.only !== undefined && !this.only.has(e.resource)) return;
    let h = this.histories.get(e.resource);
    if (h === undefined) {
      // Past the total cap a finding-free resource gets no history; the report counts such a
      // resource in `timelinesOmitted` if it is wanted later.
      if (this.held >= this.total && !hasFindings) return;
      const head = Math.floor(this.perResource / 5);
      h = new History(head, this.perResource - head);
      this.histories.set(e.resource, h);
    } else if (this.held >= this.total && !hasFindings) {
      h.dropped++;
      return;
    }
    this.held += h.add(keep(e));
  }

  /** Events held (partition runs compare the sum over partitions with the total cap at merge). */
  get size(): number {
    return this.held;
  }

  /** The kept events of a resource, in arrival order, and how many were left out. */
  history(resource: string): { events: LockEvent[]; omitted: number } | undefined {
    const h = this.histories.get(resource);
    return h === undefined ? undefined : { events: h.events(), omitted: h.dropped };
  }
}
