/**
 * Per-resource state: lock facts only (leases, tokens, the highest accepted write, counters), and
 * a small query API for the rules (holder, findLease, staleness, grantStatus, endingsOf…). It
 * knows no rule: a rule keeps what it needs in its own slot (`slots`, opaque here; see
 * rules/types.ts). Small and bounded: a few leases, the highest accepted and granted tokens with
 * trimmed copies of the events that set them, a window of recently granted tokens, counters.
 * Memory grows with resources, never with events.
 */
import { detach, keep, type LockEvent, type Observer } from '../model/event.js';

export type LeaseEnd = 'expire' | 'revoke' | 'release' | 'released-by-old-handle';

/** The fields that identify a lock handle, on an event or a lease. */
export type Handle = Pick<LockEvent, 'leaseId' | 'fenceToken' | 'ownerId'>;

/**
 * One lease on a resource. Its grant and its last renewal are kept as a few numbers and shared
 * strings, not as event objects: `grant` and `lastRenew` rebuild those events for evidence only.
 * A lease renewed every second would otherwise keep replacing an event object, and every lease
 * would keep one more long-lived object than it needs.
 */
export class Lease {
  readonly leaseId?: string;
  readonly ownerId?: string;
  readonly fenceToken?: bigint;
  /** When the lease was granted. */
  readonly grantTs: number;
  private readonly resource: string;
  private readonly grantTtlMs?: number;
  private readonly grantOperationId?: string;
  private readonly grantObserver: Observer;
  private readonly grantSource: string;
  private readonly grantFile: string;
  private readonly grantLine: number;
  private grantEvent: LockEvent | undefined = undefined;
  ttlMs?: number;
  /** Time of the grant or the last successful keepalive. */
  renewTs: number;
  private renewLine = 0;
  private renewFile = '';
  private renewSource = '';
  private renewObserver: LockEvent['observer'] = 'authority';
  private renewed = false;
  end?: LockEvent;
  endKind?: LeaseEnd;
  /** The lease granted before this one on the resource (a list, newest first: no array per resource). */
  older: Lease | undefined = undefined;

  /** `resource` is the timeline's own string, shared by everything it keeps. */
  constructor(grant: LockEvent, resource: string) {
    // Detached: a lease outlives the line it was read from (see detach()).
    this.leaseId = grant.leaseId === undefined ? undefined : detach(grant.leaseId);
    this.ownerId = grant.ownerId === undefined ? undefined : detach(grant.ownerId);
    this.fenceToken = grant.fenceToken;
    this.grantTs = grant.ts;
    this.resource = resource;
    this.grantTtlMs = grant.ttlMs;
    this.grantOperationId = grant.operationId === undefined ? undefined : detach(grant.operationId);
    this.grantObserver = grant.observer;
    this.grantSource = detach(grant.source);
    this.grantFile = grant.file;
    this.grantLine = grant.line;
    this.ttlMs = grant.ttlMs;
    this.renewTs = grant.ts;
  }

  /** The grant as an event (built once, when evidence first needs it). */
  get grant(): LockEvent {
    return (this.grantEvent ??= {
      ts: this.grantTs,
      type: 'acquire',
      resource: this.resource,
      ownerId: this.ownerId,
      leaseId: this.leaseId,
      operationId: this.grantOperationId,
      fenceToken: this.fenceToken,
      ttlMs: this.grantTtlMs,
      result: 'granted',
      observer: this.grantObserver,
      source: this.grantSource,
      file: this.grantFile,
      line: this.grantLine,
      record: undefined,
      text: undefined,
      fields: undefined,
    });
  }

  /** A successful renewal: by a keepalive, or by the same grant logged again. */
  renew(ev: LockEvent): void {
    this.renewTs = ev.ts;
    if (ev.ttlMs !== undefined) this.ttlMs = ev.ttlMs;
    this.renewed = true;
    this.renewLine = ev.line;
    this.renewFile = ev.file;
    if (ev.source !== this.renewSource) this.renewSource = ev.source === this.grantSource ? this.grantSource : detach(ev.source);
    this.renewObserver = ev.observer;
  }

  /** Forget the renewals (after the owner released the lease they are no longer evidence). */
  forgetRenewals(): void {
    this.renewed = false;
    this.renewTs = this.grantTs;
  }

  /** The grant, or the last successful keepalive rebuilt as an event (for evidence). */
  get lastRenew(): LockEvent {
    if (!this.renewed) return this.grant;
    return {
      ts: this.renewTs,
      type: 'keepalive',
      resource: this.resource,
      ownerId: this.ownerId,
      leaseId: this.leaseId,
      fenceToken: undefined,
      ttlMs: this.ttlMs,
      result: 'ok',
      observer: this.renewObserver,
      source: this.renewSource,
      file: this.renewFile,
      line: this.renewLine,
      record: undefined,
      text: undefined,
      fields: undefined,
    };
  }

  /**
   * When the lease ended or ends: its logged end, else last renewal + ttl (inferred), else
   * undefined (no end logged and no ttl known).
   */
  endsAt(): number | undefined {
    if (this.end !== undefined) return this.end.ts;
    return this.ttlMs !== undefined ? this.renewTs + this.ttlMs : undefined;
  }

  /** Not ended by a logged event, and not past its ttl since the last renewal. */
  liveAt(t: number): boolean {
    if (this.end !== undefined) return false;
    return this.ttlMs === undefined || t <= this.renewTs + this.ttlMs;
  }

  /** Whether the last renewal was a keepalive (not the grant itself). */
  get renewedSinceGrant(): boolean {
    return this.renewed;
  }
}

/** How a write's token relates to what the resource has already accepted. */
export type Staleness = 'fresh' | 'stale' | 'equal-same-handle' | 'equal-other-handle' | 'untokened';

/** Leases kept per resource: the live ones and the most recent ended ones. */
export const MAX_LEASES = 8;
/** Ended leases kept per resource (for evidence about late writers and old handles). */
export const MAX_ENDED = 2;
/** Granted tokens remembered per resource (for unknown-token). */
export const GRANTED_WINDOW = 64;

export class ResourceTimeline {
  readonly resource: string;
  /** The most recently granted lease; older ones follow `older`. At most MAX_LEASES in all. */
  newest: Lease | undefined;
  /** The write that set the highest token the resource accepted (its fenceToken is that token). */
  highest: LockEvent | undefined;
  /** The lease of the highest token the authority granted (its fenceToken is that token). */
  highestGranted: Lease | undefined;
  /**
   * The last GRANTED_WINDOW distinct granted tokens: the first `grantedCount` slots, a ring once
   * full. Allocated at the first grant, and grown by doubling (a resource granted twice keeps 4 slots).
   * A token up to 2^53 is kept as a number (8 bytes in the array, no BigInt object), a larger one
   * as a BigInt; each value has one form only, and comparisons between the two forms are exact.
   */
  grantedTokens: (number | bigint)[] | undefined;
  grantedCount = 0;
  private grantedNext = 0;
  grants = 0;
  /** The resource itself logs its write decisions (some write has observer "resource"). */
  resourceLogsWrites = false;
  /**
   * The rules' own per-resource state, one slot per rule (by the engine's rule index), allocated
   * when a rule first asks for it. Opaque here: the timeline never reads it.
   */
  slots: unknown[] | undefined;

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
  /** Error findings that are definite or likely (these make the resource violated). */
  errorFindings = 0;
  /** Error findings that are only possible (these make the resource inconclusive). */
  possibleErrorFindings = 0;
  /** The first possible error finding, for the readiness reason. */
  firstUncertain: { finding: string; rule: string; decide?: string } | undefined;
  /** The first accepted stale write, and the first stale write answered without an explicit stale result (for reasons). */
  firstAcceptedStale: { token?: bigint; highest?: bigint } | undefined;
  firstNotExplicit: { token?: bigint; highest?: bigint; result: string } | undefined;
  /** The generic answers stale writes got (rejected, error, timeout), allocated when needed. */
  notExplicitResults: Set<string> | undefined;

  constructor(resource: string) {
    this.resource = resource;
  }

  /** Not ended by a logged event, and not past its ttl since the last renewal. */
  static liveAt(lease: Lease, t: number): boolean {
    return lease.liveAt(t);
  }

  /** The leases kept, oldest first (a copy, for inspection; the engine walks `newest`/`older`). */
  get leases(): Lease[] {
    const out: Lease[] = [];
    for (let l = this.newest; l !== undefined; l = l.older) out.unshift(l);
    return out;
  }

  /** The current holder at time t: the most recently granted lease live at t (other than those `skip` names). */
  holder(t: number, skip?: (lease: Lease) => boolean): Lease | undefined {
    for (let l = this.newest; l !== undefined; l = l.older) if (l.liveAt(t) && (skip === undefined || !skip(l))) return l;
    return undefined;
  }

  /** Whether a granted acquire only renews a live lease (the same grant logged again) rather than starting one. */
  renewsLease(grant: LockEvent): boolean {
    if (grant.leaseId === undefined) return false;
    const existing = this.findLease(grant);
    return existing !== undefined && existing.end === undefined && existing.fenceToken === grant.fenceToken;
  }

  /** The leases an expire, revoke or release will end when it is applied, with how (none for other events). */
  endingsOf(ev: LockEvent): { lease: Lease; kind: LeaseEnd }[] {
    const out: { lease: Lease; kind: LeaseEnd }[] = [];
    switch (ev.type) {
      case 'expire':
      case 'revoke': {
        const l = this.findLease(ev) ?? (hasHandle(ev) ? undefined : this.holder(ev.ts));
        if (l !== undefined && l.end === undefined) out.push({ lease: l, kind: ev.type });
        break;
      }
      case 'release': {
        if (ev.result !== 'released') break;
        const victim = this.isOldHandleRelease(ev);
        // The authority removed the name: the current holder lost its lock to an old handle.
        if (victim !== undefined) out.push({ lease: victim, kind: 'released-by-old-handle' });
        const own = this.findLease(ev);
        if (own !== undefined && own.end === undefined && own !== victim) out.push({ lease: own, kind: 'release' });
        break;
      }
    }
    return out;
  }

  /** The lease an event refers to: by leaseId, else by fenceToken, else the owner's latest lease. */
  findLease(ev: LockEvent): Lease | undefined {
    const { leaseId, fenceToken, ownerId } = ev;
    if (leaseId !== undefined) {
      for (let l = this.newest; l !== undefined; l = l.older) if (l.leaseId === leaseId) return l;
      return undefined;
    }
    if (fenceToken !== undefined) {
      for (let l = this.newest; l !== undefined; l = l.older) if (l.fenceToken === fenceToken) return l;
      return undefined;
    }
    if (ownerId !== undefined) {
      for (let l = this.newest; l !== undefined; l = l.older) if (l.ownerId === ownerId) return l;
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
    if (h === undefined || token > h.fenceToken!) return 'fresh';
    if (token < h.fenceToken!) return 'stale';
    // Equal tokens: the token cannot tell the holders apart, so compare the lease, else the owner.
    return sameHolder(write, h) === false ? 'equal-other-handle' : 'equal-same-handle';
  }

  /**
   * A release from an old handle: its own lease is not live (ended, expired by ttl, or unknown)
   * and another lease holds the resource. Returns the holder it would remove.
   */
  isOldHandleRelease(release: LockEvent): Lease | undefined {
    const holder = this.holder(release.ts);
    if (holder === undefined || sameHandle(release, holder) !== false) return undefined;
    const own = this.findLease(release);
    if (own !== undefined && own !== holder && ResourceTimeline.liveAt(own, release.ts)) return undefined;
    return holder;
  }

  /** Was this token granted on this resource, as far as the remembered window tells? */
  grantStatus(token: bigint): 'granted' | 'never' | 'unknown' {
    const granted = this.grantedTokens;
    if (this.grants === 0 || granted === undefined) return 'unknown';
    const n = this.grantedCount;
    const key = windowKey(token);
    for (let i = 0; i < n; i++) if (granted[i] === key) return 'granted';
    if (token > this.highestGranted!.fenceToken!) return 'never';
    let min = granted[0]!;
    for (let i = 1; i < n; i++) if (granted[i]! < min) min = granted[i]!;
    return token > min ? 'never' : 'unknown';
  }

  /** Fold an event into the state. Called after the rules have seen it. */
  apply(ev: LockEvent): void {
    this.events++;
    switch (ev.type) {
      case 'acquire':
        if (ev.result === 'granted') this.grant(ev);
        break;
      case 'keepalive': {
        const l = this.findLease(ev);
        if (l !== undefined && ev.result === 'ok' && l.end === undefined) l.renew(ev);
        break;
      }
      case 'expire':
      case 'revoke':
        for (const { lease, kind } of this.endingsOf(ev)) this.end(lease, ev, kind);
        break;
      case 'release': {
        if (this.isOldHandleRelease(ev) !== undefined) {
          this.oldHandleReleases++;
          if (ev.result === 'released') this.oldHandleReleasesSucceeded++;
        }
        for (const { lease, kind } of this.endingsOf(ev)) this.end(lease, ev, kind);
        break;
      }
      case 'write':
        this.write(ev);
        break;
    }
  }

  private end(lease: Lease, ev: LockEvent, kind: LeaseEnd): void {
    lease.end = keep(ev, { resource: this.resource, leaseId: lease.leaseId, ownerId: lease.ownerId, fenceToken: lease.fenceToken });
    // After its owner released it, the lease's last renewal is no longer evidence of anything.
    if (kind === 'release') lease.forgetRenewals();
    lease.endKind = kind;
  }

  private grant(ev: LockEvent): void {
    const token = ev.fenceToken;
    // The grant of a new highest token always starts a new lease (a grant logged again has its lease's token).
    let highest = false;
    if (token !== undefined) {
      this.grants++;
      highest = this.highestGranted === undefined || token > this.highestGranted.fenceToken!;
      this.rememberGrant(token);
    }
    if (this.renewsLease(ev)) {
      this.findLease(ev)!.renew(ev);
      return;
    }
    const lease = new Lease(ev, this.resource);
    if (highest) this.highestGranted = lease;
    lease.older = this.newest;
    this.newest = lease;
    // Keep every live lease and the MAX_ENDED most recent ended ones, the newest MAX_LEASES at most.
    let ended = 0;
    let count = 1;
    let prev = lease;
    for (let l = lease.older; l !== undefined; ) {
      const next: Lease | undefined = l.older;
      if (count >= MAX_LEASES || (l.end !== undefined && ++ended > MAX_ENDED)) {
        prev.older = next;
        l.older = undefined;
      } else {
        count++;
        prev = l;
      }
      l = next;
    }
  }

  /** Add a granted token to the window, unless it is there already. */
  private rememberGrant(token: bigint): void {
    let g = this.grantedTokens;
    const n = this.grantedCount;
    const key = windowKey(token);
    if (g !== undefined) for (let i = 0; i < n; i++) if (g[i] === key) return;
    if (g === undefined) g = this.grantedTokens = new Array<number | bigint>(4);
    else if (n === g.length && n < GRANTED_WINDOW) {
      const bigger = new Array<number | bigint>(Math.min(GRANTED_WINDOW, n * 2));
      for (let i = 0; i < n; i++) bigger[i] = g[i]!;
      g = this.grantedTokens = bigger;
    }
    if (n < g.length) {
      g[n] = key;
      this.grantedCount = n + 1;
    } else {
      // The window is full: replace the oldest.
      g[this.grantedNext] = key;
      this.grantedNext = (this.grantedNext + 1) % g.length;
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
        else if (stale) {
          this.staleWritesAccepted++;
          this.firstAcceptedStale ??= { token: ev.fenceToken, highest: this.highest?.fenceToken };
        }
        else if (staleness === 'fresh') {
          const lease = this.findLease(ev);
          this.highest = keep(ev, lease === undefined ? this : { resource: this.resource, leaseId: lease.leaseId, ownerId: lease.ownerId, fenceToken: lease.fenceToken });
        }
        break;
      case 'rejected-stale-fence':
        this.rejectedStaleFence++;
        if (stale) this.staleWritesExplicit++;
        break;
      default:
        this.rejectedOther++;
        if (stale) {
          this.firstNotExplicit ??= { token: ev.fenceToken, highest: this.highest?.fenceToken, result: ev.result };
          (this.notExplicitResults ??= new Set()).add(detach(ev.result));
        }
        break;
    }
  }
}

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** A token as the granted window keeps it: a number when exact, else the BigInt. */
function windowKey(token: bigint): number | bigint {
  return token <= MAX_EXACT ? Number(token) : token;
}

function hasHandle(ev: LockEvent): boolean {
  return ev.leaseId !== undefined || ev.fenceToken !== undefined || ev.ownerId !== undefined;
}

/** Same lease (leaseId), else same owner; `undefined` when they share neither field. */
export function sameHolder(a: LockEvent, b: LockEvent): boolean | undefined {
  if (a.leaseId !== undefined && b.leaseId !== undefined) return a.leaseId === b.leaseId;
  if (a.ownerId !== undefined && b.ownerId !== undefined) return a.ownerId === b.ownerId;
  return undefined;
}

/**
 * Do two events carry the same lock handle? Compares leaseId, else fenceToken, else ownerId,
 * using the first field both carry. `undefined` when they share no field to compare.
 */
export function sameHandle(a: Handle, b: Handle): boolean | undefined {
  if (a.leaseId !== undefined && b.leaseId !== undefined) return a.leaseId === b.leaseId;
  if (a.fenceToken !== undefined && b.fenceToken !== undefined) return a.fenceToken === b.fenceToken;
  if (a.ownerId !== undefined && b.ownerId !== undefined) return a.ownerId === b.ownerId;
  return undefined;
}
