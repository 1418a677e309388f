/**
 * Which resources each lease id was granted on, for lease-scoped events (an authority's session
 * or lease expiry that names no resource: see LEASE_SCOPED). Kept only when the profile can give
 * such events. Bounded: at most `max` (lease, resource) pairs; past that, the leases granted
 * longest ago are forgotten first (`forgotten` counts the pairs), so a later lease-scoped event
 * of one of them finds no resource, and the lease's end is inferred from its ttl as if the
 * authority had not logged it. A pair goes when its lease ends on the resource.
 */
export class LeaseHolders {
  /** Lease id → the resource, or resources, it was granted on (in grant order; the Map is in order of each lease's latest grant). */
  private readonly byLease = new Map<string, string | string[]>();
  private pairs = 0;
  forgotten = 0;

  constructor(private readonly max: number) {}

  get size(): number {
    return this.pairs;
  }

  /** A grant of `leaseId` on `resource` (both strings the timeline keeps). */
  add(leaseId: string, resource: string): void {
    const held = this.byLease.get(leaseId);
    if (held === resource || (Array.isArray(held) && held.includes(resource))) return;
    if (held !== undefined) this.byLease.delete(leaseId); // re-inserted last: the most recent grant
    this.byLease.set(leaseId, held === undefined ? resource : Array.isArray(held) ? [...held, resource] : [held, resource]);
    this.pairs++;
    while (this.pairs > this.max) {
      const [oldest, of] = this.byLease.entries().next().value as [string, string | string[]];
      this.byLease.delete(oldest);
      const n = Array.isArray(of) ? of.length : 1;
      this.pairs -= n;
      this.forgotten += n;
    }
  }

  /** The lease no longer holds `resource`. */
  delete(leaseId: string, resource: string): void {
    const held = this.byLease.get(leaseId);
    if (held === undefined) return;
    if (held === resource) {
      this.byLease.delete(leaseId);
      this.pairs--;
      return;
    }
    if (!Array.isArray(held)) return;
    const rest = held.filter((r) => r !== resource);
    if (rest.length === held.length) return;
    this.pairs -= held.length - rest.length;
    this.byLease.set(leaseId, rest.length === 1 ? rest[0]! : rest);
  }

  /** The resources `leaseId` was granted on, oldest grant first. */
  resources(leaseId: string): readonly string[] {
    const held = this.byLease.get(leaseId);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }
}

/** (lease, resource) pairs remembered at most for lease-scoped events (about 100 bytes each). */
export const DEFAULT_MAX_LEASE_HOLDERS = 200_000;
