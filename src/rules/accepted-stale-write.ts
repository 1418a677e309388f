import { formatToken } from '../model/format.js';
import { endItems, leaseEndEvidence, who } from './describe.js';
import { defineRule, type EvidenceRef } from './types.js';

/** A late write with a lower token than one the resource already accepted was accepted too. */
export const acceptedStaleWrite = defineRule({
  meta: {
    id: 'accepted-stale-write',
    severity: 'error',
    title: 'A write with an older fencing token was accepted after a newer one',
    symptom: 'The old worker got a success (200) after the new one wrote',
    cause: 'The resource does not check the fencing token',
    check: 'Compare the request token with the highest token the resource has accepted',
    action: 'Reject stale writes atomically on the resource (UPDATE … WHERE fence_token < $token, then check the row count)',
  },
  messages: {
    lateAccepted: '{writer} wrote with token {token} and was accepted after token {highest} from {newerWriter} had been accepted',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['accepted'] } },
  on: {
    write(event, { timeline, report }) {
      if (event.result !== 'accepted' || !timeline.isDecision(event)) return;
      if (timeline.staleness(event) !== 'stale') return;
      const newer = timeline.highest!;
      // The story: the late writer's hold and its end, the newer hold, then the two writes.
      const evidence: EvidenceRef[] = [];
      const own = timeline.findLease(event);
      if (own !== undefined) {
        evidence.push({ event: own.grant, role: 'late writer granted' });
        const end = leaseEndEvidence(own);
        if (end !== undefined && (end.inferredEnd ?? end.event.ts) <= event.ts) evidence.push(...endItems(end, `late writer's ${end.role}`).filter((r) => r.event.ts <= event.ts || r.inferredEnd !== undefined));
      }
      const newerLease = timeline.findLease(newer);
      if (newerLease !== undefined && newerLease.id !== own?.id) evidence.push({ event: newerLease.grant, role: 'newer writer granted' });
      evidence.push({ event: newer, role: `newer accepted write; highest=${formatToken(newer.fenceToken)}` });
      evidence.push({ event, role: 'late write accepted' });
      report({
        messageId: 'lateAccepted',
        data: { writer: who(event), token: formatToken(event.fenceToken), highest: formatToken(newer.fenceToken), newerWriter: who(newer) },
        evidence,
        order: [newer, event],
      });
    },
  },
});

