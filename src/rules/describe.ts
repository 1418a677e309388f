/** Short phrases for rule messages. */
import type { LockEvent } from '../model/event.js';
import { formatToken } from '../model/format.js';
import type { Lease } from '../timeline/timeline.js';

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

/** The event or inferred end that ended a lease, as evidence. */
export function leaseEndEvidence(lease: Lease): { event: LockEvent; role: string; inferredEnd?: number } | undefined {
  if (lease.ended) return { event: lease.end!, role: `lease ended (${lease.endKind})` };
  if (lease.ttlMs !== undefined) return { event: lease.lastRenew, role: 'lease ended (inferred: last renewal + ttl)', inferredEnd: lease.endsAt()! };
  return undefined;
}
