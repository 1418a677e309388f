import { formatDuration } from '../model/time.js';
import { handle } from './describe.js';
import { MAX_LEASES } from '../timeline/timeline.js';
import { defineRule, type Handler } from './types.js';

/** A lease went longer than its TTL without a successful renewal, and its owner kept acting. */
/** Per resource: the ids of the leases already reported (once per lease), at most as many as the timeline keeps. */
type State = number[];

export const keepaliveGap = defineRule<State>({
  meta: {
    id: 'keepalive-gap',
    severity: 'warning',
    title: 'A lease went longer than its TTL without renewal while its owner kept acting',
    symptom: 'The lease expired under a worker that was still working',
    cause: 'The process paused (GC, blocked event loop, slow call) longer than the TTL, so keepalives stopped',
    check: 'Measure the gaps between successful renewals against the TTL, and what the owner did after a gap',
    action: 'Tune the TTL from measured pauses, renew well within it, and stop work when the lease is lost',
  },
  messages: {
    pause: '{lease} went {gap} without a successful renewal (TTL {ttl}), then its owner acted again ({action}): a pause longer than the TTL',
  },
  state: () => [],
  on: {
    keepalive: check,
    write: check,
    release: check,
  },
});

function check(...[event, { timeline, report, peek, slot }]: Parameters<Handler<State>>): void {
  const lease = timeline.findLease(event);
  // A lease its owner released is over by choice: its renewals no longer matter.
  if (lease === undefined || lease.ttlMs === undefined || lease.endKind === 'release') return;
  const gap = event.ts - lease.renewTs;
  if (gap <= lease.ttlMs || peek()?.includes(lease.id) === true) return;
  const reported = slot();
  // The timeline keeps at most MAX_LEASES leases: an older one reported here can no longer be found.
  if (reported.length >= MAX_LEASES) reported.shift();
  reported.push(lease.id);
  const lastRenew = lease.lastRenew;
  report({
    messageId: 'pause',
    data: { lease: handle(lease), gap: formatDuration(gap), ttl: formatDuration(lease.ttlMs), action: event.type },
    evidence: [
      ...(lease.renewedSinceGrant ? [{ event: lease.grant, role: 'lease granted' }] : []),
      { event: lastRenew, role: 'last successful renewal' },
      { event, role: `owner acted after ${formatDuration(gap)}` },
    ],
    order: [lastRenew, event],
  });
}
