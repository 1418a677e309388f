import { formatToken } from '../model/format.js';
import type { LockEvent } from '../model/event.js';
import { who } from './describe.js';
import { defineRule, type EvidenceRef, type RuleMessage } from './types.js';
import { OperationIndex } from '../timeline/operations.js';

/** The resource accepted a write that carried no fencing token. */
export const missingToken = defineRule({
  meta: {
    id: 'missing-token',
    severity: 'error',
    title: 'The resource accepted a write that carried no fencing token',
    symptom: 'No token in the request to the resource',
    cause: 'The protection stayed in the lock authority',
    check: 'Trace the lock fields through to the final write',
    action: 'Carry the fencing token with every write and store the highest accepted generation on the resource',
  },
  messages: {
    noToken: '{writer} wrote without a fencing token and the resource accepted it',
    /** The input, or the one its lease was granted in, declares its lock service (a profile's or mapping's `service`): what that service offers as a token, or that it offers none. */
    noTokenService: '{writer} wrote without a fencing token and the resource accepted it: {serviceToken}',
    droppedInTransit:
      "{writer}'s write reached the resource without a fencing token and was accepted, although the worker sent token {sent}: the token was dropped in transit",
    /** A worker's view with a token arrived after the finding was made (onView). */
    droppedLate: '{writer} wrote without a fencing token and the resource accepted it, although the worker sent token {sent}: the token was dropped in transit',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['accepted'] } },
  on: {
    write(event, { timeline, report, operations, service }) {
      if (event.result !== 'accepted' || event.fenceToken !== undefined || !timeline.isDecision(event)) return;
      const lease = event.ownerId !== undefined || event.leaseId !== undefined ? timeline.findLease(event) : undefined;
      const evidence: EvidenceRef[] = [];
      if (lease !== undefined) evidence.push({ event: lease.grant, role: 'writer granted the lock' });
      evidence.push({ event, role: 'write accepted without a token' });
      // A worker's view of the same operation that carried a token: the token was dropped in transit.
      const carried = event.operationId === undefined ? undefined : OperationIndex.views(operations.get(event.resource, event.operationId)).find(hasToken);
      // The write's own input's service, else that of the input where the writer's lease was granted.
      const declared = service(event) ?? (lease === undefined ? undefined : service(lease.grant));
      report({
        ...(carried !== undefined
          ? droppedMessage(event, carried)
          : declared !== undefined
            ? { messageId: 'noTokenService', data: { writer: who(event), serviceToken: declared.token } }
            : { messageId: 'noToken', data: { writer: who(event) } }),
        evidence,
        certainty: 'definite',
        subject: event,
      });
    },
  },
  onView(finding, view) {
    if (view.fenceToken !== undefined && (finding.messageId === 'missing-token/noToken' || finding.messageId === 'missing-token/noTokenService')) {
      return { messageId: 'droppedLate', data: { writer: finding.data!.writer!, sent: formatToken(view.fenceToken) } };
    }
    return undefined;
  },
});

export function droppedMessage(write: LockEvent, view: LockEvent): RuleMessage {
  return { messageId: 'droppedInTransit', data: { writer: who(write), sent: formatToken(view.fenceToken) } };
}

function hasToken(e: LockEvent): boolean {
  return e.fenceToken !== undefined;
}
