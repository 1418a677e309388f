/**
 * Per-resource state. Small and bounded: a few leases, the highest accepted token with the write
 * that set it, a ring of recent events and counters. Memory grows with resources, never with events.
 */
import type { LockEvent } from '../model/event.js';

export type LeaseEnd = 'expire' | 'revoke' | 'release' | 'released-by-old-handle';

export interface Lease {
  readonly leaseId?: string;
  readonly ownerId?: string;
  readonly fenceToken?: bigint;
  readonly grant: LockEvent;
  ttlMs?: number;
  /** Time of the grant or the last successful keepalive. */
  lastRenewAt: number;
  end?: LockEvent;
  endKind?: LeaseEnd;
}

export interface AcceptedMark {
  readonly token: bigint;
  readonly write: LockEvent;
}

/** How a write's token relates to what the resource has already accepted. */
export type Staleness = 'fresh' | 'stale' | 'equal-same-handle' | 'equal-other-handle' | 'untokened';

/** Leases kept per resource: the live ones and the most recent ended ones. */
export const MAX_LEASES = 8;

export class ResourceTimeline {
  readonly resource: string;
  /** Oldest first; bounded by MAX_LEASES. */
  readonly leases: Lease[] = [];
  highest: AcceptedMark | undefined;
  /** The resource itself logs its write decisions (some write has observer "resource"). */
  resourceLogsWrites = false;
  private readonly ring: (LockEvent | undefined)[];
  private ringNext = 0;

  events = 0;
  accepted = 0;
  rejectedStaleFence = 0;
  rejectedOther = 0;
  withoutToken = 0;
  /** Stale write requests, by how the resource answered. */
  staleWrites = 0;
  staleWritesExplicit = 0;
  staleWritesAccepted = 0;
  oldHandleReleases = 0;
  oldHandleReleasesSucceeded = 0;
  findings = 0;
  errorFindings = 0;

  constructor(resource: string, ringSize: number) {
    this.resource = resource;
    this.ring = new Array<LockEvent | undefined>(ringSize);
  }

  /** The current holder: the most recently granted lease that has not ended. */
  holder(): Lease | undefined {
    for (let i = this.leases.length - 1; i >= 0; i--) {
      const l = this.leases[i]!;
      if (l.end === undefined) return l;
    }
    return undefined;
  }

  /** The lease an event refers to: by leaseId, else by fenceToken, else the owner's latest lease. */
  findLease(ev: LockEvent): Lease | undefined {
    const { leaseId, fenceToken, ownerId } = ev;
    if (leaseId !== undefined) {
      for (let i = this.leases.length - 1; i >= 0; i--) if (this.leases[i]!.leaseId === leaseId) return this.leases[i];
      return undefined;
    }
    if (fenceToken !== undefined) {
      for (let i = this.leases.length - 1; i >= 0; i--) if (this.leases[i]!.fenceToken === fenceToken) return this.leases[i];
      return undefined;
    }
    if (ownerId !== undefined) {
      for (let i = this.leases.length - 1; i >= 0; i--) if (this.leases[i]!.ownerId === ownerId) return this.leases[i];
    }
    return undefined;
  }

  /** Whether a write counts as the resource's own decision (see README "Observers"). */
  isDecision(write: LockEvent): boolean {
    return write.observer !== 'worker' || !this.resourceLogsWrites;
  }

  staleness(write: LockEvent): Staleness {
    const token = write.fenceToken;
    if (token === undefined) return 'untokened';
    const h = this.highest;
    if (h === undefined || token > h.token) return 'fresh';
    if (token < h.token) return 'stale';
    return sameHandle(write, h.write) === false ? 'equal-other-handle' : 'equal-same-handle';
  }

  /** A release that names a handle other than the current holder's, while that holder is live. */
  isOldHandleRelease(release: LockEvent): Lease | undefined {
    const holder = this.holder();
    if (holder === undefined) return undefined;
    return sameHandle(release, holder.grant) === false ? holder : undefined;
  }

  /** Recent events on this resource, oldest first (for stories). */
  recent(): LockEvent[] {
    const out: LockEvent[] = [];
    const n = this.ring.length;
    for (let i = 0; i < n; i++) {
      const e = this.ring[(this.ringNext + i) % n];
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** Fold an event into the state. Called after the rules have seen it. */
  apply(ev: LockEvent): void {
    this.events++;
    if (this.ring.length > 0) {
      this.ring[this.ringNext] = ev;
      this.ringNext = (this.ringNext + 1) % this.ring.length;
    }
    switch (ev.type) {
      case 'acquire':
        if (ev.result === 'granted') this.grant(ev);
        break;
      case 'keepalive': {
        const l = this.findLease(ev);
        if (l !== undefined && ev.result === 'ok') {
          l.lastRenewAt = ev.ts;
          if (ev.ttlMs !== undefined) l.ttlMs = ev.ttlMs;
        }
        break;
      }
      case 'expire':
      case 'revoke': {
        const l = this.findLease(ev) ?? (hasHandle(ev) ? undefined : this.holder());
        if (l !== undefined && l.end === undefined) {
          l.end = ev;
          l.endKind = ev.type;
        }
        break;
      }
      case 'release': {
        if (ev.result !== 'released') {
          if (this.isOldHandleRelease(ev) !== undefined) this.oldHandleReleases++;
          break;
        }
        const victim = this.isOldHandleRelease(ev);
        if (victim !== undefined) {
          // The authority removed the name: the current holder lost its lock to an old handle.
          this.oldHandleReleases++;
          this.oldHandleReleasesSucceeded++;
          victim.end = ev;
          victim.endKind = 'released-by-old-handle';
        }
        const own = this.findLease(ev);
        if (own !== undefined && own.end === undefined) {
          own.end = ev;
          own.endKind = 'release';
        }
        break;
      }
      case 'write':
        this.write(ev);
        break;
    }
  }

  private grant(ev: LockEvent): void {
    const existing = ev.leaseId !== undefined ? this.findLease(ev) : undefined;
    if (existing !== undefined && existing.end === undefined && existing.fenceToken === ev.fenceToken) {
      existing.lastRenewAt = ev.ts;
      if (ev.ttlMs !== undefined) existing.ttlMs = ev.ttlMs;
      return;
    }
    const lease: Lease = {
      leaseId: ev.leaseId,
      ownerId: ev.ownerId,
      fenceToken: ev.fenceToken,
      grant: ev,
      ttlMs: ev.ttlMs,
      lastRenewAt: ev.ts,
    };
    this.leases.push(lease);
    if (this.leases.length > MAX_LEASES) {
      // Drop the oldest ended lease; if every kept lease is live, drop the oldest.
      const i = this.leases.findIndex((l) => l.end !== undefined);
      this.leases.splice(i === -1 ? 0 : i, 1);
    }
  }

  private write(ev: LockEvent): void {
    if (ev.observer === 'resource') this.resourceLogsWrites = true;
    if (!this.isDecision(ev)) return;
    const staleness = this.staleness(ev);
    const stale = staleness === 'stale' || staleness === 'equal-other-handle';
    if (stale) this.staleWrites++;
    switch (ev.result) {
      case 'accepted':
        this.accepted++;
        if (staleness === 'untokened') this.withoutToken++;
        else if (stale) this.staleWritesAccepted++;
        else if (staleness === 'fresh') this.highest = { token: ev.fenceToken!, write: ev };
        break;
      case 'rejected-stale-fence':
        this.rejectedStaleFence++;
        if (stale) this.staleWritesExplicit++;
        break;
      default:
        this.rejectedOther++;
        break;
    }
  }
}

function hasHandle(ev: LockEvent): boolean {
  return ev.leaseId !== undefined || ev.fenceToken !== undefined || ev.ownerId !== undefined;
}

/**
 * Do two events carry the same lock handle? Compares leaseId, else fenceToken, else ownerId,
 * using the first field both carry. `undefined` when they share no field to compare.
 */
export function sameHandle(a: LockEvent, b: LockEvent): boolean | undefined {
  if (a.leaseId !== undefined && b.leaseId !== undefined) return a.leaseId === b.leaseId;
  if (a.fenceToken !== undefined && b.fenceToken !== undefined) return a.fenceToken === b.fenceToken;
  if (a.ownerId !== undefined && b.ownerId !== undefined) return a.ownerId === b.ownerId;
  return undefined;
}
