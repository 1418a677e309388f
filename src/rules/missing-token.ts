import { formatToken } from '../model/format.js';
import type { LockEvent } from '../model/event.js';
import { who } from './describe.js';
import type { EvidenceRef, Rule } from './types.js';
import { OperationIndex } from '../timeline/operations.js';

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
    write(event, { timeline, report, operations }) {
      if (event.result !== 'accepted' || event.fenceToken !== undefined || !timeline.isDecision(event)) return;
      const lease = event.ownerId !== undefined || event.leaseId !== undefined ? timeline.findLease(event) : undefined;
      const evidence: EvidenceRef[] = [];
      if (lease !== undefined) evidence.push({ event: lease.grant, role: 'writer granted the lock' });
      evidence.push({ event, role: 'write accepted without a token' });
      // A worker's view of the same operation that carried a token: the token was dropped in transit.
      const carried = event.operationId === undefined ? undefined : OperationIndex.views(operations.get(event.resource, event.operationId)).find(hasToken);
      report({
        message: carried !== undefined ? droppedMessage(event, carried) : `${who(event)} wrote without a fencing token and the resource accepted it`,
        evidence,
        certainty: 'definite',
        subject: event,
      });
    },
  },
  onView(finding, view) {
    if (view.fenceToken !== undefined && !finding.message.includes('dropped in transit')) {
      return `${finding.message}, although the worker sent token ${formatToken(view.fenceToken)}: the token was dropped in transit`;
    }
    return undefined;
  },
};

export function droppedMessage(write: LockEvent, view: LockEvent): string {
  return `${who(write)}'s write reached the resource without a fencing token and was accepted, although the worker sent token ${formatToken(view.fenceToken)}: the token was dropped in transit`;
}

function hasToken(e: LockEvent): boolean {
  return e.fenceToken !== undefined;
}
