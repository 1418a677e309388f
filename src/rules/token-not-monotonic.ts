import { formatToken } from '../model/format.js';
import { defineRule } from './types.js';

/** The authority granted a token not above one it granted before for the same resource. */
export const tokenNotMonotonic = defineRule({
  meta: {
    id: 'token-not-monotonic',
    severity: 'error',
    title: 'The authority granted a token that is not above an earlier one',
    symptom: 'A new holder got a token no higher than an old one',
    cause: 'Tokens do not come from one monotonic counter per resource (counter reset, clock, per-node counters)',
    check: 'Compare each granted token with the highest token granted before for the resource',
    action: 'Issue tokens from one monotonic source per resource key (e.g. etcd create revision, a database sequence)',
  },
  messages: {
    notAbove: 'the authority granted token {token} to {holder} after it had granted token {earlierToken} to {earlierHolder}',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { acquire: { results: ['granted'] } },
  on: {
    acquire(event, { timeline, report }) {
      if (event.result !== 'granted' || event.fenceToken === undefined) return;
      const prev = timeline.highestGranted;
      if (prev === undefined || event.fenceToken > prev.fenceToken!) return;
      const same = prev.grant;
      if (event.leaseId !== undefined && event.leaseId === same.leaseId && event.fenceToken === prev.fenceToken) return; // the same grant logged again
      report({
        messageId: 'notAbove',
        data: { token: formatToken(event.fenceToken), holder: event.ownerId ?? 'a holder', earlierToken: formatToken(prev.fenceToken), earlierHolder: same.ownerId ?? 'a holder' },
        evidence: [
          { event: same, role: 'higher token granted earlier' },
          { event, role: 'token not above it granted later' },
        ],
        order: [same, event],
      });
    },
  },
});
