import type { Rule } from './types.js';

/** The resource accepted a write that carried no fencing token. */
export const missingToken: Rule = {
  meta: {
    id: 'missing-token',
    severity: 'error',
    title: 'The resource accepted a write that carried no fencing token',
    symptom: 'No token in the request to the resource',
    cause: 'The protection stayed in the lock authority',
    check: 'Trace the lock fields through to the final write',
    action: 'Carry the fencing token with every write and store the highest accepted generation on the resource',
  },
  on: {
    write(event, { timeline, report }) {
      if (event.result !== 'accepted' || event.fenceToken !== undefined || !timeline.isDecision(event)) return;
      const lease = event.ownerId !== undefined || event.leaseId !== undefined ? timeline.findLease(event) : undefined;
      const evidence = [];
      if (lease !== undefined) evidence.push({ event: lease.grant, role: 'writer granted the lock' });
      evidence.push({ event, role: 'write accepted without a token' });
      report({
        message: `${event.ownerId ?? 'a writer with no ownerId'} wrote without a fencing token and the resource accepted it`,
        evidence,
        certainty: 'definite',
      });
    },
  },
};
