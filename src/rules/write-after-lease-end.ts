import { formatDuration } from '../model/time.js';
import { who, leaseEndEvidence, endBefore, endItems } from './describe.js';
import { defineRule } from './types.js';

/** A write was accepted after the writer's own lease had ended. */
export const writeAfterLeaseEnd = defineRule({
  meta: {
    id: 'write-after-lease-end',
    severity: 'warning',
    title: "A write was accepted after the writer's own lease had ended",
    symptom: 'A worker kept writing after its lease ended',
    cause: 'The worker does not stop at lease end; only the resource check protects the data in that window',
    check: "Compare each write's time with the end of the writer's lease (logged, or last renewal + TTL)",
    action: 'Keep the resource-side token check; stop work when the lease is lost, and measure pauses against the TTL',
  },
  messages: {
    afterEnd: '{writer} wrote {after} after its lease {lease} ended, and the resource accepted it',
    afterEndNoLeaseId: '{writer} wrote {after} after its lease ended, and the resource accepted it',
    afterInferredEnd: '{writer} wrote {after} after its lease {lease} ended (inferred from its TTL), and the resource accepted it',
    afterInferredEndNoLeaseId: '{writer} wrote {after} after its lease ended (inferred from its TTL), and the resource accepted it',
    /** The TTL ran out first; the authority logged the expiry later (a Redis `expired` notification comes when the key is deleted). */
    afterTtlEnd: '{writer} wrote {after} after its lease {lease} ran out its TTL (the authority logged the expiry {late} after that), and the resource accepted it',
    afterTtlEndNoLeaseId: '{writer} wrote {after} after its lease ran out its TTL (the authority logged the expiry {late} after that), and the resource accepted it',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['accepted'] } },
  on: {
    write(event, { timeline, report }) {
      if (event.result !== 'accepted' || !timeline.isDecision(event)) return;
      const s = timeline.staleness(event);
      if (s === 'stale' || s === 'equal-other-handle') return; // the error finding covers it
      const lease = timeline.findLease(event);
      if (lease === undefined || lease.liveAt(event.ts)) return;
      const end = leaseEndEvidence(lease);
      if (end === undefined) return;
      const endTs = end.inferredEnd ?? end.event.ts;
      const { at, inferred } = endBefore(end, event);
      const kind = end.view !== undefined ? 'afterTtlEnd' : end.inferredEnd !== undefined ? 'afterInferredEnd' : 'afterEnd';
      report({
        messageId: `${kind}${lease.leaseId === undefined ? 'NoLeaseId' : ''}`,
        data: {
          writer: who(event),
          after: formatDuration(Math.max(0, event.ts - endTs)),
          ...(lease.leaseId !== undefined ? { lease: lease.leaseId } : {}),
          ...(end.view !== undefined ? { late: formatDuration(end.view.event.ts - endTs) } : {}),
        },
        evidence: [{ event: lease.grant, role: 'writer granted the lock' }, ...endItems(end), { event, role: 'write accepted after the lease ended' }],
        order: [at, event],
        inferred,
      });
    },
  },
});
