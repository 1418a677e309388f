import type { Certainty, Uncertainty } from '../model/report.js';
import type { Lease } from '../timeline/timeline.js';
import { handle } from './describe.js';
import { defineRule } from './types.js';

/** A lease was granted while another lease on the same resource was still live. */
export const overlappingLeases = defineRule({
  meta: {
    id: 'overlapping-leases',
    severity: 'error',
    title: 'A lease was granted while another lease on the resource was still live',
    symptom: 'Two workers held the lock at the same time',
    cause: 'The authority gave out two holds on one name (lost state, split brain, lock per node)',
    check: 'For each grant, look for a live lease on the same resource: no logged end, and within its TTL since the last renewal',
    action: 'Use an authority with linearizable grants (one quorum), and keep the resource-side token check as the last defence',
  },
  messages: {
    noEndNoTtl: 'a lease for {handle} was granted while {holder} still held the resource (no end was logged and no TTL is known)',
    withinTtl: 'a lease for {handle} was granted while {holder} still held the resource (its TTL had {leftMs}ms left since its last renewal)',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { acquire: { results: ['granted'] } },
  on: {
    acquire(event, { timeline, report, options }) {
      if (event.result !== 'granted') return;
      const other = timeline.holder(event.ts, (l) => isSameLease(l, event));
      if (other === undefined) return;
      let certainty: Certainty = 'possible';
      let messageId = 'noEndNoTtl';
      let leftMs: number | undefined;
      let uncertainty: Uncertainty = {
        kind: 'unknown-end',
        decide: "the live lease's end was never logged and its TTL is unknown; log its end (expire, revoke or release) or its TTL (ttlMs; a mapping can convert seconds with `units`) to decide it",
      };
      if (other.ttlMs !== undefined) {
        const left = other.endsAt()! - event.ts;
        certainty = left > options.clockSkewMs ? 'likely' : 'possible';
        messageId = 'withinTtl';
        leftMs = Math.round(left);
        uncertainty = {
          kind: 'inferred-end',
          clockSkewMs: options.clockSkewMs,
          decide: `the live lease's end is inferred from its TTL (${Math.round(left)} ms left at the new grant${certainty === 'possible' ? `, within --clock-skew ${options.clockSkewMs} ms` : ''}); log the lease's end (expire, revoke or release) to decide it`,
        };
      }
      report({
        messageId,
        data: { handle: handle(event), holder: handle(other), ...(leftMs !== undefined ? { leftMs } : {}) },
        evidence: [
          { event: other.grant, role: 'live lease granted' },
          ...(other.renewedSinceGrant ? [{ event: other.lastRenew, role: 'live lease last renewed' }] : []),
          { event, role: 'second lease granted' },
        ],
        certainty,
        uncertainty,
      });
    },
  },
});

function isSameLease(l: Lease, e: { leaseId?: string; ownerId?: string }): boolean {
  if (l.leaseId !== undefined && e.leaseId !== undefined) return l.leaseId === e.leaseId;
  return l.ownerId !== undefined && l.ownerId === e.ownerId;
}
