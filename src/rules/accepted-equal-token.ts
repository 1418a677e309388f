import { formatToken } from '../model/format.js';
import { who } from './describe.js';
import { MAX_LEASES } from '../timeline/timeline.js';
import { defineRule } from './types.js';

/** A write with a token equal to the highest accepted one was accepted: a non-strict comparison. */
/**
 * Per resource: the leases already told about a non-strict comparison (once per lease, at most as
 * many as the timeline keeps), and the owners of writes with no findable lease (once per owner;
 * bounded by MAX_OWNERS, past which the info is not repeated for new owners either).
 */
interface State {
  /** Lease ids. */
  readonly leases: number[];
  readonly owners: Set<string>;
}

const MAX_OWNERS = 64;

export const acceptedEqualToken = defineRule<State>({
  meta: {
    id: 'accepted-equal-token',
    severity: 'error',
    title: 'A write with a token equal to the highest accepted one was accepted',
    symptom: 'Two holders both got a success with the same token',
    cause: 'The resource compares tokens with ≤ instead of <, or the authority handed one token to two holds',
    check: 'Compare the request token with the highest accepted token, and the lease of the write that set it',
    action: 'Reject tokens that are lower or equal (fence_token < $token); tell retries apart by operationId, not by token',
  },
  messages: {
    otherLease: '{writer} wrote with token {token} and was accepted, although token {token} had already been accepted from {firstWriter} under another lease',
    sameLease: 'the resource accepted token {token} again from the same lease: it compares tokens non-strictly (≤), where the article asks for a strict <',
  },
  state: () => ({ leases: [], owners: new Set() }),
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['accepted'] } },
  on: {
    write(event, { timeline, report, slot }) {
      if (event.result !== 'accepted' || !timeline.isDecision(event)) return;
      const s = timeline.staleness(event);
      if (s !== 'equal-other-handle' && s !== 'equal-same-handle') return;
      const setter = timeline.highest!;
      const token = formatToken(event.fenceToken);
      if (s === 'equal-other-handle') {
        report({
          messageId: 'otherLease',
          data: { writer: who(event), token, firstWriter: who(setter) },
          evidence: [
            { event: setter, role: 'first write accepted with this token' },
            { event, role: 'write from another lease accepted with the same token' },
          ],
          order: [setter, event],
        });
        return;
      }
      // Same lease: a retry or a second write under one hold. Report once per lease, as info.
      const lease = timeline.findLease(event);
      const told = slot();
      if (lease !== undefined) {
        if (told.leases.includes(lease.id)) return;
        if (told.leases.length >= MAX_LEASES) told.leases.shift();
        told.leases.push(lease.id);
      } else {
        const owner = event.ownerId ?? '';
        if (told.owners.has(owner) || told.owners.size >= MAX_OWNERS) return;
        told.owners.add(owner);
      }
      report({
        severity: 'info',
        messageId: 'sameLease',
        data: { token },
        evidence: [
          { event: setter, role: 'first write accepted with this token' },
          { event, role: 'same token accepted again' },
        ],
        certainty: 'definite',
      });
    },
  },
});
