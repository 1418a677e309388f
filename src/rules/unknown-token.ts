import { keep, type LockEvent } from '../model/event.js';
import { formatToken } from '../model/format.js';
import type { ResourceTimeline } from '../timeline/timeline.js';
import { who } from './describe.js';
import { defineRule, type Handler, type RuleContext } from './types.js';

/** Accepted writes waiting for the clock-skew window to pass before they are judged, per resource. */
export const MAX_PENDING = 16;

/** Per resource: accepted writes whose token was not granted yet, oldest first (at most MAX_PENDING). */
type State = LockEvent[];

/** An accepted write carried a token the authority never granted for that resource. */
export const unknownToken = defineRule<State>({
  meta: {
    id: 'unknown-token',
    severity: 'error',
    title: 'An accepted write carried a token the authority never granted',
    symptom: 'The resource accepted a token no lock grant explains',
    cause: 'A provider key or a random id is used as a "token", or tokens come from another counter',
    check: 'Compare each accepted token with the tokens the authority granted for the resource',
    action: 'Carry the generation the authority issued for this acquisition, unchanged, to the final write',
  },
  messages: {
    neverGranted: '{writer} wrote with token {token}, which the authority never granted for this resource (highest granted: {highestGranted})',
  },
  state: () => [],
  // Gates (Rule.when): but for a write, a handler only judges or cancels what waits in the slot.
  when: { acquire: { slot: true }, keepalive: { slot: true }, expire: { slot: true }, revoke: { slot: true }, release: { slot: true } },
  on: {
    acquire(event, context) {
      flush(context, event.ts);
      // A grant cancels the judgements waiting for the same token.
      const pending = context.peek();
      if (pending === undefined || event.result !== 'granted' || event.fenceToken === undefined) return;
      for (let i = pending.length - 1; i >= 0; i--) if (pending[i]!.fenceToken === event.fenceToken) pending.splice(i, 1);
    },
    keepalive: flushing,
    expire: flushing,
    revoke: flushing,
    release: flushing,
    write(event, context) {
      flush(context, event.ts);
      const { timeline } = context;
      if (event.result !== 'accepted' || event.fenceToken === undefined || !timeline.isDecision(event)) return;
      if (timeline.grantStatus(event.fenceToken) === 'granted') return;
      // Wait out the clock-skew window: the grant may be logged by another source a little later.
      const pending = context.slot();
      if (pending.length >= MAX_PENDING) judge(context, pending.shift()!);
      pending.push(keep(event, timeline));
    },
  },
  end(context) {
    const pending = context.peek();
    while (pending !== undefined && pending.length > 0) judge(context, pending.shift()!);
  },
});

function flushing(...[event, context]: Parameters<Handler<State>>): void {
  flush(context, event.ts);
}

function flush(context: RuleContext<State>, now: number): void {
  const pending = context.peek();
  while (pending !== undefined && pending.length > 0 && pending[0]!.ts + context.options.clockSkewMs < now) judge(context, pending.shift()!);
}

function judge(context: RuleContext<State>, write: LockEvent): void {
  const t: ResourceTimeline = context.timeline;
  if (t.grantStatus(write.fenceToken!) !== 'never') return;
  const granted = t.highestGranted!.grant;
  context.report({
    messageId: 'neverGranted',
    data: { writer: who(write), token: formatToken(write.fenceToken), highestGranted: formatToken(t.highestGranted!.fenceToken) },
    evidence: [
      { event: granted, role: 'highest token the authority granted' },
      { event: write, role: 'write accepted with an ungranted token' },
    ],
    certainty: granted.source === write.source ? 'definite' : 'likely',
    uncertainty:
      granted.source === write.source
        ? undefined
        : { kind: 'clock-skew', clockSkewMs: context.options.clockSkewMs, decide: `the authority's grants and the write come from different clock domains (${granted.source}, ${write.source}), so a grant of this token may have been logged late; with both in one clock domain (the same source) this finding would be definite` },
    subject: write,
  });
}
