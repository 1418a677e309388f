/**
 * The lock services an input may be declared to come from: a profile's or mapping's `"service"`
 * (`"service": "redis"`), a fact about the whole input, never a field of its events. Rules ask
 * for it (RuleContext.service) and, when it is known, report a variant of their message that
 * names the service's own case; the facts below are that variant's data, substituted verbatim
 * (`{serviceToken}`, `{serviceRelease}`). A generic message never names a service. An event's
 * service is that of its own input, else that of the input where its lease was granted (a write
 * in an application's log, under a lease read from the lock service's or its client's log).
 */

export const SERVICE_IDS = ['etcd', 'zookeeper', 'redis', 'consul', 'kubernetes'] as const;
export type ServiceId = (typeof SERVICE_IDS)[number];

export interface ServiceFacts {
  readonly id: ServiceId;
  /** The service's name, as its users write it. */
  readonly name: string;
  /** Where a fencing token comes from with this service, or that there is none: `{serviceToken}` of missing-token. */
  readonly token: string;
  /**
   * What a release must compare so that an old handle cannot remove a newer holder's lock:
   * `{serviceRelease}` of stale-release. None where the service itself refuses such a release.
   */
  readonly release?: string;
}

export const SERVICES: Readonly<Record<ServiceId, ServiceFacts>> = {
  etcd: {
    id: 'etcd',
    name: 'etcd',
    token: "etcd gives one, the lock key's create revision, and it has to be carried to the write",
    release: "an etcd release has to delete the key only while its create revision (or lease) is still the old handle's, in one transaction",
  },
  zookeeper: {
    id: 'zookeeper',
    name: 'ZooKeeper',
    token: "ZooKeeper gives one, the lock node's czxid (not its sequence number, which starts again when the lock's parent node is recreated), and it has to be carried to the write",
  },
  redis: {
    id: 'redis',
    name: 'Redis',
    token: 'a Redis lock value is random and can only be compared for equality; it is not a fencing token (a counter taken with INCR in the same script as the SET is one)',
    release: 'a plain Redis DEL removes the key whoever holds it; a release has to delete it only while it still holds the old handle\'s value (compare-and-delete in a Lua script)',
  },
  consul: {
    id: 'consul',
    name: 'Consul',
    token: "Consul gives one, the lock entry's LockIndex, and it has to be carried to the write",
  },
  kubernetes: {
    id: 'kubernetes',
    name: 'Kubernetes',
    token: 'a Kubernetes Lease gives no fencing token per acquisition (client-go leader election does not guarantee fencing); one has to come from a counter the resource checks',
  },
};

/** The message placeholders that carry a service's facts, and the fact each one is. */
export const SERVICE_PLACEHOLDERS: Readonly<Record<string, 'token' | 'release'>> = { serviceToken: 'token', serviceRelease: 'release' };

/** The facts of a declared service (undefined when none is declared). */
export function serviceFacts(id: ServiceId | undefined): ServiceFacts | undefined {
  return id === undefined ? undefined : SERVICES[id];
}
