import { formatToken } from '../model/format.js';
import { who } from './describe.js';
import { defineRule } from './types.js';

/** A stale request was refused, but not with an explicit stale result. */
export const staleNotExplicit = defineRule({
  meta: {
    id: 'stale-not-explicit',
    severity: 'warning',
    title: 'A stale request got a generic error instead of an explicit stale result',
    symptom: 'The old worker got an error or a timeout, not "stale"',
    cause: 'The resource does not return a distinct result for a stale token',
    check: 'Find stale requests and the result each one got',
    action: 'Return an explicit rejected-stale-fence result (article, step 5), so callers stop instead of retrying',
  },
  messages: {
    notExplicit: '{writer}\'s write with stale token {token} (highest accepted {highest}) got "{result}", not an explicit rejected-stale-fence',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['rejected', 'error', 'timeout'] } },
  on: {
    write(event, { timeline, report }) {
      if (event.result !== 'rejected' && event.result !== 'error' && event.result !== 'timeout') return;
      if (!timeline.isDecision(event)) return;
      const s = timeline.staleness(event);
      if (s !== 'stale' && s !== 'equal-other-handle') return;
      const highest = timeline.highest!;
      report({
        messageId: 'notExplicit',
        data: { writer: who(event), token: formatToken(event.fenceToken), highest: formatToken(highest.fenceToken), result: event.result },
        evidence: [
          { event: highest, role: 'newer accepted write' },
          { event, role: `stale write answered "${event.result}"` },
        ],
        certainty: 'definite',
      });
    },
  },
});
