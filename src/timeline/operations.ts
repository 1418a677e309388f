/**
 * Writes by (resource, operationId), bounded: the oldest entries are forgotten past the cap, so
 * memory does not grow with the number of operations. Ties worker and resource views of one write.
 */
import type { LockEvent } from '../model/event.js';
import type { Finding } from '../model/report.js';

export const DEFAULT_MAX_OPERATIONS = 100_000;
const MAX_VIEWS = 4;
const MAX_LINKED = 4;

export interface OperationEntry {
  /** The first accepted decision for this operation. */
  accepted?: LockEvent;
  /** Worker-observed events that are views of the resource's decisions (not judged themselves). */
  readonly views: LockEvent[];
  /** Findings about this operation's writes. */
  readonly findings: Finding[];
}

export class OperationIndex {
  private readonly map = new Map<string, OperationEntry>();

  constructor(private readonly max = DEFAULT_MAX_OPERATIONS) {}

  get(resource: string, operationId: string): OperationEntry | undefined {
    return this.map.get(key(resource, operationId));
  }

  /** The entry, created if needed; touching it makes it the most recent. */
  touch(resource: string, operationId: string): OperationEntry {
    const k = key(resource, operationId);
    let e = this.map.get(k);
    if (e !== undefined) this.map.delete(k);
    else e = { views: [], findings: [] };
    this.map.set(k, e);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
    return e;
  }

  static addView(entry: OperationEntry, view: LockEvent): boolean {
    if (entry.views.length >= MAX_VIEWS) return false;
    entry.views.push(view);
    return true;
  }

  static link(entry: OperationEntry, finding: Finding): void {
    if (entry.findings.length < MAX_LINKED && !entry.findings.includes(finding)) entry.findings.push(finding);
  }

  get size(): number {
    return this.map.size;
  }
}

function key(resource: string, operationId: string): string {
  return `${resource}\u0000${operationId}`;
}
