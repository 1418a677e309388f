/**
 * Writes by (resource, operationId), bounded: the oldest entries are forgotten past the cap, so
 * memory does not grow with the number of operations. Ties worker and resource views of one write.
 */
import { detach, keep, type LockEvent } from '../model/event.js';
import type { Finding } from '../model/report.js';

export const DEFAULT_MAX_OPERATIONS = 100_000;
const MAX_VIEWS = 4;
const MAX_LINKED = 4;

export interface OperationEntry {
  /** The first accepted decision for this operation. */
  accepted?: LockEvent;
  /** Worker-observed events that are views of the resource's decisions (not judged themselves). */
  views?: LockEvent[];
  /** Findings about this operation's writes. */
  findings?: Finding[];
}

const NONE: readonly never[] = [];

/**
 * `list` and `item` in a new array of exactly that length. A pushed array would reserve 16 more
 * slots at its first push (~150 bytes per entry); these lists hold at most 4 items.
 */
function longer<T>(list: readonly T[] | undefined, item: T): T[] {
  if (list === undefined) return [item];
  const out = new Array<T>(list.length + 1);
  for (let i = 0; i < list.length; i++) out[i] = list[i]!;
  out[list.length] = item;
  return out;
}

export class OperationIndex {
  /** operationId → entry, or entries when one operationId is used on several resources. */
  private readonly map = new Map<string, OperationEntry & { resource: string }>();
  private readonly more = new Map<string, (OperationEntry & { resource: string })[]>();
  /** Insertion order, for first-in-first-out forgetting in O(1). */
  private readonly order: (string | undefined)[];
  private next = 0;

  constructor(max = DEFAULT_MAX_OPERATIONS) {
    this.order = new Array(Math.max(1, max));
  }

  get(resource: string, operationId: string): OperationEntry | undefined {
    const e = this.map.get(operationId);
    if (e === undefined) return undefined;
    if (e.resource === resource) return e;
    return this.more.get(operationId)?.find((x) => x.resource === resource);
  }

  /** The entry, created if needed. The oldest operations are forgotten first (first in, first out). */
  touch(resource: string, operationId: string): OperationEntry {
    // One lookup in the common case (an operation seen for the first time, or again on its resource).
    const first = this.map.get(operationId);
    if (first !== undefined) {
      if (first.resource === resource) return first;
      const other = this.more.get(operationId)?.find((x) => x.resource === resource);
      if (other !== undefined) return other;
    }
    const e = { resource, accepted: undefined, views: undefined, findings: undefined };
    // The key outlives its line: detached (see detach()).
    operationId = detach(operationId);
    if (first === undefined) this.map.set(operationId, e);
    else {
      let list = this.more.get(operationId);
      if (list === undefined) this.more.set(operationId, (list = []));
      list.push(e);
    }
    this.remember(operationId);
    return e;
  }

  /** Entries made so far (partition runs compare the sum over partitions with the cap at merge). */
  made = 0;

  private remember(operationId: string): void {
    this.made++;
    const old = this.order[this.next];
    if (old !== undefined) this.forgetOldest(old);
    this.order[this.next] = operationId;
    this.next = (this.next + 1) % this.order.length;
  }

  /** Forget the oldest entry stored under this operationId. */
  private forgetOldest(operationId: string): void {
    const list = this.more.get(operationId);
    if (list === undefined || list.length === 0) {
      this.more.delete(operationId);
      this.map.delete(operationId);
      return;
    }
    this.map.set(operationId, list.shift()!);
    if (list.length === 0) this.more.delete(operationId);
  }

  static addView(entry: OperationEntry, view: LockEvent): boolean {
    const views = entry.views;
    if (views !== undefined && views.length >= MAX_VIEWS) return false;
    entry.views = longer(views, keep(view));
    return true;
  }

  static link(entry: OperationEntry, finding: Finding): void {
    const findings = entry.findings;
    if (findings === undefined || (findings.length < MAX_LINKED && !findings.includes(finding))) entry.findings = longer(findings, finding);
  }

  static views(entry: OperationEntry | undefined): readonly LockEvent[] {
    return entry?.views ?? NONE;
  }

  static findings(entry: OperationEntry): readonly Finding[] {
    return entry.findings ?? NONE;
  }
}
