import { endBefore, endItems, handle, leaseEndEvidence } from './describe.js';
import { defineRule, type EvidenceRef } from './types.js';

/** A release from an old handle removed the current holder's lock. */
export const staleRelease = defineRule({
  meta: {
    id: 'stale-release',
    severity: 'error',
    title: "A release from an old handle removed the current holder's lock",
    symptom: "The old worker's release removed B's lock",
    cause: 'The release checks only the lock name',
    check: 'Compare the owner, leaseId and token of the release with the current hold',
    action: 'Reject releases from old handles: release only when name, leaseId and token all match the current hold',
  },
  messages: {
    oldHandleReleased: 'a release from {handle} succeeded while {holder} held the lock',
    /** The input, or the one the old handle was granted in, declares its lock service (a profile's or mapping's `service`), and it has a way to release only one's own hold. */
    oldHandleReleasedService: 'a release from {handle} succeeded while {holder} held the lock: {serviceRelease}',
  },
  // Gates (Rule.when): the handler returns at once for any other result.
  when: { release: { results: ['released'] } },
  on: {
    release(event, { timeline, report, service }) {
      if (event.result !== 'released') return;
      const holder = timeline.isOldHandleRelease(event);
      if (holder === undefined) return;
      const old = timeline.findLease(event);
      const evidence: EvidenceRef[] = [];
      let inferred = false;
      if (old !== undefined && old.id !== holder.id) {
        evidence.push({ event: old.grant, role: 'old handle granted' });
        const end = leaseEndEvidence(old);
        if (end !== undefined) {
          evidence.push(...endItems(end, end.inferredEnd !== undefined ? 'old handle ended (inferred: last renewal + ttl)' : 'old handle ended'));
          inferred = endBefore(end, event).inferred;
        }
      }
      evidence.push({ event: holder.grant, role: 'current holder granted' });
      evidence.push({ event, role: 'old handle released the lock' });
      // The release's own input's service, else that of the input where the old handle was granted.
      const declared = service(event) ?? (old === undefined ? undefined : service(old.grant));
      const data = { handle: handle(event), holder: handle(holder.grant) };
      report({
        ...(declared?.release !== undefined
          ? { messageId: 'oldHandleReleasedService', data: { ...data, serviceRelease: declared.release } }
          : { messageId: 'oldHandleReleased', data }),
        evidence,
        order: [holder.grant, event],
        inferred,
      });
    },
  },
});

