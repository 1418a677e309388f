/** Short phrases for rule messages. */
import type { LockEvent } from '../model/event.js';
import { formatToken } from '../model/format.js';
import type { Lease } from '../timeline/timeline.js';
import { formatDuration } from '../model/time.js';
import type { EvidenceRef } from './types.js';

export function who(e: LockEvent): string {
  return e.ownerId ?? 'a writer with no ownerId';
}

export function handle(e: LockEvent | Lease): string {
  const parts: string[] = [];
  if (e.ownerId !== undefined) parts.push(e.ownerId);
  if (e.leaseId !== undefined) parts.push(`lease ${e.leaseId}`);
  if (e.fenceToken !== undefined) parts.push(`token ${formatToken(e.fenceToken)}`);
  return parts.length > 0 ? parts.join(', ') : 'an unnamed handle';
}

/** How a lease ended, as evidence: the end itself, and a later view of it when one was logged. */
export interface LeaseEndEvidence {
  readonly event: LockEvent;
  readonly role: string;
  /** The end was inferred (last renewal + ttl): its time; `event` is the renewal. */
  readonly inferredEnd?: number;
  /**
   * The authority's expiry, logged after the TTL had already run out: a second, later view of the
   * same end (see Lease.endsAt). The end itself is then the TTL's (`inferredEnd`).
   */
  readonly view?: { readonly event: LockEvent; readonly role: string };
}

/** The event or inferred end that ended a lease, as evidence. */
export function leaseEndEvidence(lease: Lease): LeaseEndEvidence | undefined {
  const end = lease.end;
  const inferred = 'lease ended (inferred: last renewal + ttl)';
  if (end !== undefined) {
    const at = lease.endsAt()!;
    if (at < end.ts) {
      const late = formatDuration(end.ts - at);
      return { event: lease.lastRenew, role: inferred, inferredEnd: at, view: { event: end, role: `the authority's view of that expiry, logged ${late} after the TTL ran out` } };
    }
    return { event: end, role: `lease ended (${lease.endKind})` };
  }
  if (lease.ttlMs !== undefined) return { event: lease.lastRenew, role: inferred, inferredEnd: lease.endsAt()! };
  return undefined;
}

/**
 * The evidence a finding's order rests on for a lease end before `event`: the logged view when
 * there is one before it (the authority's own line), else the end itself; and whether that is
 * an inferred end.
 */
export function endBefore(end: LeaseEndEvidence, event: LockEvent): { at: LockEvent; inferred: boolean } {
  if (end.view !== undefined && end.view.event.ts <= event.ts) return { at: end.view.event, inferred: false };
  return { at: end.event, inferred: end.inferredEnd !== undefined };
}

/** The evidence items of a lease end: the end (with `role`, when given) and its later view. */
export function endItems(end: LeaseEndEvidence, role?: string): EvidenceRef[] {
  const first: EvidenceRef = { event: end.event, role: role ?? end.role, ...(end.inferredEnd !== undefined ? { inferredEnd: end.inferredEnd } : {}) };
  return end.view === undefined ? [first] : [first, { event: end.view.event, role: end.view.role }];
}
