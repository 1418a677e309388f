import { defineRule } from './types.js';

/** One operationId was accepted more than once on a resource. */
export const duplicateEffect = defineRule({
  meta: {
    id: 'duplicate-effect',
    severity: 'error',
    title: 'One operationId was accepted more than once on a resource',
    symptom: 'A duplicate after a retry',
    cause: 'Fencing was taken for idempotency',
    check: 'Find the operationId and the effect journal',
    action: 'Add a separate idempotency contract: record applied operationIds with the effect and skip repeats',
  },
  messages: {
    acceptedAgain: 'operation {operationId} was accepted again (first by {firstWriter}, now by {writer}): its effect applied twice',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { write: { results: ['accepted'] } },
  on: {
    write(event, { timeline, report, operations }) {
      if (event.result !== 'accepted' || event.operationId === undefined || !timeline.isDecision(event)) return;
      const first = operations.get(event.resource, event.operationId)?.accepted;
      if (first === undefined) return;
      report({
        messageId: 'acceptedAgain',
        data: { operationId: event.operationId, firstWriter: first.ownerId ?? 'an unnamed writer', writer: event.ownerId ?? 'an unnamed writer' },
        evidence: [
          { event: first, role: 'operation first accepted' },
          { event, role: 'same operation accepted again' },
        ],
        certainty: 'definite',
        subject: event,
      });
    },
  },
});
