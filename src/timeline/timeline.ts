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

/** Observers packed in Lease.bits: two bits each. */
const OBSERVER_OF: readonly Observer[] = ['authority', 'worker', 'resource'];
function observerBits(o: Observer): number {
  return o === 'authority' ? 0 : o === 'worker' ? 1 : 2;
}
/** Lease.bits: grant observer (bits 0-1), last renewal's observer (bits 2-3), renewed since grant, ended by an old handle's release. */
const RENEW_OBSERVER_SHIFT = 2;
const RENEWED = 16;
const ENDED_BY_OLD_HANDLE = 32;

/** Where an event was read: a file and a source, shared by every lease that names the pair. */
interface Origin {
  readonly file: string;
  readonly source: string;
}

/**
 * The shared origin of a file and source. A run reads a few files and sources, so this holds a
 * few pairs; it is emptied should it ever hold many (then pairs are merely shared less).
 */
const origins = new Map<string, Map<string, Origin>>();
const MAX_ORIGINS = 1024;
let lastOrigin: Origin = { file: '', source: '' };

function originOf(file: string, source: string): Origin {
  if (lastOrigin.file === file && lastOrigin.source === source) return lastOrigin;
  let bySource = origins.get(file);
  if (bySource === undefined) {
    if (origins.size >= MAX_ORIGINS) origins.clear();
    origins.set(file, (bySource = new Map()));
  }
  let o = bySource.get(source);
  if (o === undefined) {
    if (bySource.size >= MAX_ORIGINS) bySource.clear();
    // Detached: a lease outlives the line it was read from (see detach()).
    o = { file, source: detach(source) };
    bySource.set(o.source, o);
  }
  return (lastOrigin = o);
}

/**
 * One lease on a resource. Its grant and its last renewal are kept as a few numbers and shared
 * strings, not as event objects: `grant` and `lastRenew` rebuild those events for evidence only.
 * A lease renewed every second would otherwise keep replacing an event object, and every lease
 * would keep one more long-lived object than it needs. Kept small (one object per lease, no
 * other of its own): observers and flags share one number, file and source are one shared
 * Origin (none for a renewal from the grant's own), the grant's operationId gives way to the
 * grant event once that is built, and the grant's ttl is its `ttlMs` until a renewal changes
 * that (the grant event is built then, once).
 */
export class Lease {
  readonly leaseId?: string;
  readonly ownerId?: string;
  readonly fenceToken?: bigint;
  /** When the lease was granted. */
  readonly grantTs: number;
  private readonly resource: string;
  private readonly grantFrom: Origin;
  private readonly grantLine: number;
  /** The grant's operationId until the grant event is built, then that event (see `grant`). */
  private grantExtra: string | LockEvent | undefined;
  ttlMs?: number;
  /** Time of the grant or the last successful keepalive. */
  renewTs: number;
  private renewLine = 0;
  /** The last renewal's file and source, when not the grant's. */
  private renewFrom: Origin | undefined = undefined;
  /** Observers and flags (see RENEWED, ENDED_BY_OLD_HANDLE). */
  private bits: number;
  end?: LockEvent;
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
    this.grantFrom = originOf(grant.file, grant.source);
    this.grantLine = grant.line;
    this.grantExtra = grant.operationId === undefined ? undefined : detach(grant.operationId);
    this.ttlMs = grant.ttlMs;
    this.renewTs = grant.ts;
    this.bits = observerBits(grant.observer);
  }

  /** The grant as an event (built once, when evidence first needs it, or when a renewal changes the ttl). */
  get grant(): LockEvent {
    const extra = this.grantExtra;
    if (extra !== undefined && typeof extra !== 'string') return extra;
    return (this.grantExtra = {
      ts: this.grantTs,
      type: 'acquire',
      resource: this.resource,
      ownerId: this.ownerId,
      leaseId: this.leaseId,
      operationId: extra,
      fenceToken: this.fenceToken,
      // Until a renewal changes it (see renew()), the lease's ttl is the grant's.
      ttlMs: this.ttlMs,
      result: 'granted',
      observer: OBSERVER_OF[this.bits & 3]!,
      source: this.grantFrom.source,
      file: this.grantFrom.file,
      line: this.grantLine,
      record: undefined,
      text: undefined,
      fields: undefined,
    });
  }

  /** A successful renewal: by a keepalive, or by the same grant logged again. */
  renew(ev: LockEvent): void {
    this.renewTs = ev.ts;
    if (ev.ttlMs !== undefined && ev.ttlMs !== this.ttlMs) {
      // The grant's ttl is about to be forgotten: build the grant event while it is known.
      void this.grant;
      this.ttlMs = ev.ttlMs;
    }
    this.renewLine = ev.line;
    const from = this.grantFrom;
    if (ev.file === from.file && ev.source === from.source) this.renewFrom = undefined;
    else {
      const r = this.renewFrom;
      if (r === undefined || r.file !== ev.file || r.source !== ev.source) this.renewFrom = originOf(ev.file, ev.source);
    }
    this.bits = (this.bits & ~(3 << RENEW_OBSERVER_SHIFT)) | (observerBits(ev.observer) << RENEW_OBSERVER_SHIFT) | RENEWED;
  }

  /** Forget the renewals (after the owner released the lease they are no longer evidence). */
  forgetRenewals(): void {
    this.bits &= ~RENEWED;
    this.renewTs = this.grantTs;
  }

  /** The event that ended the lease, and how (called once, by the timeline). */
  ended(end: LockEvent, kind: LeaseEnd): void {
    this.end = end;
    if (kind === 'released-by-old-handle') this.bits |= ENDED_BY_OLD_HANDLE;
  }

  /** How the lease ended, when an end was logged: the end event's type, or 'released-by-old-handle'. */
  get endKind(): LeaseEnd | undefined {
    const end = this.end;
    if (end === undefined) return undefined;
    return (this.bits & ENDED_BY_OLD_HANDLE) !== 0 ? 'released-by-old-handle' : (end.type as LeaseEnd);
  }

  /** The grant, or the last successful keepalive rebuilt as an event (for evidence). */
  get lastRenew(): LockEvent {
    if ((this.bits & RENEWED) === 0) return this.grant;
    return {
      ts: this.renewTs,
      type: 'keepalive',
      resource: this.resource,
      ownerId: this.ownerId,
      leaseId: this.leaseId,
      fenceToken: undefined,
      ttlMs: this.ttlMs,
      result: 'ok',
      observer: OBSERVER_OF[(this.bits >> RENEW_OBSERVER_SHIFT) & 3]!,
      source: (this.renewFrom ?? this.grantFrom).source,
      file: (this.renewFrom ?? this.grantFrom).file,
      line: this.renewLine,
      record: undefined,
      text: undefined,
      fields: undefined,
    };
  }

  /**
   * When the lease ended or ends: its logged end, else last renewal + ttl (inferred), else
   * undefined (no end logged and no ttl known). An expiry that names no lease, logged after the
   * ttl had run out, is a later view of the same end: the authority removed the name after its
   * time (Redis sends a key's `expired` notification when it deletes the key, which can be well
   * after its TTL), and it was taken for this lease's because the ttl had run out (see
   * ResourceTimeline.expiring): the ttl's end stands. An expiry that names the lease is the
   * authority's own word on it (a ZooKeeper session, renewed by pings no log shows): it stands.
   */
  endsAt(): number | undefined {
    const end = this.end;
    if (end !== undefined) return end.type === 'expire' && this.ttlMs !== undefined && !hasHandle(end) ? Math.min(end.ts, this.renewTs + this.ttlMs) : end.ts;
    return this.ttlMs !== undefined ? this.renewTs + this.ttlMs : undefined;
  }

  /** Not ended by a logged event, and not past its ttl since the last renewal. */
  liveAt(t: number): boolean {
    if (this.end !== undefined) return false;
    return this.ttlMs === undefined || t <= this.renewTs + this.ttlMs;
  }

  /** Whether the last renewal was a keepalive (not the grant itself). */
  get renewedSinceGrant(): boolean {
    return (this.bits & RENEWED) !== 0;
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

/**
 * The timeline's rarely used facts (stale writes, old-handle releases, possible errors and the
 * reasons they give): one object, allocated when the first of them happens, so that a resource
 * that never sees one keeps none of them.
 */
export interface RareFacts {
  /** Stale write requests, by how the resource answered. */
  staleWrites: number;
  staleWritesExplicit: number;
  staleWritesAccepted: number;
  oldHandleReleases: number;
  oldHandleReleasesSucceeded: number;
  /** Error findings that are definite or likely (these make the resource violated). */
  errorFindings: number;
  /** Error findings that are only possible (these make the resource inconclusive). */
  possibleErrorFindings: number;
  /** The first possible error finding, for the readiness reason. */
  firstUncertain: { finding: string; rule: string; decide?: string } | undefined;
  /** The first accepted stale write, and the first stale write answered without an explicit stale result (for reasons). */
  firstAcceptedStale: { token?: bigint; highest?: bigint } | undefined;
  firstNotExplicit: { token?: bigint; highest?: bigint; result: string } | undefined;
  /** The generic answers stale writes got (rejected, error, timeout), allocated when needed. */
  notExplicitResults: Set<string> | undefined;
  /** Where the next granted token goes once the granted window is full (a ring). */
  grantedNext: number;
}

export class ResourceTimeline {
  readonly resource: string;
  /** The most recently granted lease; older ones follow `older`. At most MAX_LEASES in all. */
  newest: Lease | undefined;
  /** The write that set the highest token the resource accepted (its fenceToken is that token). */
  highest: LockEvent | undefined;
  /** The lease of the highest token the authority granted (its fenceToken is that token). */
  highestGranted: Lease | undefined;
  /**
   * The last GRANTED_WINDOW distinct granted tokens. While only one token was granted, that
   * token itself (no array); from the second distinct one, an array of exactly the tokens granted
   * (copied one longer per new token: no spare slots, and at most GRANTED_WINDOW copies), a ring
   * once full (see RareFacts.grantedNext).
   * In the array a token up to 2^53 is kept as a number (8 bytes, no BigInt object), a larger one
   * as a BigInt; each value has one form only, and comparisons between the two forms are exact.
   */
  grantedTokens: (number | bigint)[] | bigint | undefined;
  /** The resource itself logs its write decisions (some write has observer "resource"). */
  resourceLogsWrites = false;
  /**
   * The rules' own per-resource state, one slot per rule that keeps some (the engine gives rules
   * their slot numbers): slot 0 here, the others in `slots` (slot i at i - 1, the array only as
   * long as the highest slot held), made when a rule first asks for its slot. Opaque here: the
   * timeline never reads them.
   */
  slot0: unknown = undefined;
  slots: unknown[] | undefined;

  events = 0;
  accepted = 0;
  rejectedStaleFence = 0;
  rejectedOther = 0;
  withoutToken = 0;
  findings = 0;
  /** The rarely used facts, when one has happened (see RareFacts; read through the getters below). */
  rare: RareFacts | undefined = undefined;

  constructor(resource: string) {
    this.resource = resource;
  }

  /** The rarely used facts, allocated on first use. */
  rareFacts(): RareFacts {
    return (this.rare ??= {
      errorFindings: 0,
      staleWrites: 0,
      staleWritesExplicit: 0,
      staleWritesAccepted: 0,
      oldHandleReleases: 0,
      oldHandleReleasesSucceeded: 0,
      possibleErrorFindings: 0,
      firstUncertain: undefined,
      firstAcceptedStale: undefined,
      firstNotExplicit: undefined,
      notExplicitResults: undefined,
      grantedNext: 0,
    });
  }

  /** Error findings that are definite or likely (these make the resource violated). */
  get errorFindings(): number {
    return this.rare?.errorFindings ?? 0;
  }
  /** Stale write requests, by how the resource answered. */
  get staleWrites(): number {
    return this.rare?.staleWrites ?? 0;
  }
  get staleWritesExplicit(): number {
    return this.rare?.staleWritesExplicit ?? 0;
  }
  get staleWritesAccepted(): number {
    return this.rare?.staleWritesAccepted ?? 0;
  }
  get oldHandleReleases(): number {
    return this.rare?.oldHandleReleases ?? 0;
  }
  get oldHandleReleasesSucceeded(): number {
    return this.rare?.oldHandleReleasesSucceeded ?? 0;
  }
  /** Error findings that are only possible (these make the resource inconclusive). */
  get possibleErrorFindings(): number {
    return this.rare?.possibleErrorFindings ?? 0;
  }
  /** The first possible error finding, for the readiness reason. */
  get firstUncertain(): RareFacts['firstUncertain'] {
    return this.rare?.firstUncertain;
  }
  /** The first accepted stale write, and the first stale write answered without an explicit stale result (for reasons). */
  get firstAcceptedStale(): RareFacts['firstAcceptedStale'] {
    return this.rare?.firstAcceptedStale;
  }
  get firstNotExplicit(): RareFacts['firstNotExplicit'] {
    return this.rare?.firstNotExplicit;
  }
  /** The generic answers stale writes got (rejected, error, timeout). */
  get notExplicitResults(): ReadonlySet<string> | undefined {
    return this.rare?.notExplicitResults;
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

  /**
   * The lease an expire that names no lease, owner or token ends (a Redis keyspace notification
   * names only the key). An authority logs an expiry when it removes the lease, which can be after
   * the lease's TTL ran out, even after a newer holder took the name (Redis deletes an expired key
   * when its expiry cycle finds it or when a command touches it, such as the next holder's SET).
   * So: the newest lease with no logged end whose TTL had run out by then, or whose TTL is unknown;
   * never a newer lease still within its TTL because of it. When every such lease is still within
   * its TTL, the expiry came early: the one due first.
   */
  expiring(t: number): Lease | undefined {
    let due: Lease | undefined;
    for (let l = this.newest; l !== undefined; l = l.older) {
      if (l.end !== undefined) continue;
      if (l.ttlMs === undefined || !l.liveAt(t)) return l;
      if (due === undefined || l.endsAt()! < due.endsAt()!) due = l;
    }
    return due;
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
        const l = this.findLease(ev) ?? (hasHandle(ev) ? undefined : ev.type === 'expire' ? this.expiring(ev.ts) : this.holder(ev.ts));
        if (l !== undefined && l.end === undefined) out.push({ lease: l, kind: ev.type });
        break;
      }
      case 'release':
        if (ev.result === 'released') return this.releaseEndings(ev, this.isOldHandleRelease(ev));
        break;
    }
    return out;
  }

  /** What a successful release ends, given the holder it removes as an old handle (if any). */
  private releaseEndings(ev: LockEvent, victim: Lease | undefined): { lease: Lease; kind: LeaseEnd }[] {
    const out: { lease: Lease; kind: LeaseEnd }[] = [];
    // The authority removed the name: the current holder lost its lock to an old handle.
    if (victim !== undefined) out.push({ lease: victim, kind: 'released-by-old-handle' });
    const own = this.findLease(ev);
    if (own !== undefined && own.end === undefined && own !== victim) out.push({ lease: own, kind: 'release' });
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
    if (granted === undefined) return 'unknown';
    if (typeof granted === 'bigint') {
      // One token granted so far: it is also the highest granted, and the window's minimum.
      if (token === granted) return 'granted';
      return token > granted ? 'never' : 'unknown';
    }
    const n = granted.length;
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
        const victim = this.isOldHandleRelease(ev);
        if (victim !== undefined) {
          const rare = this.rareFacts();
          rare.oldHandleReleases++;
          if (ev.result === 'released') rare.oldHandleReleasesSucceeded++;
        }
        if (ev.result === 'released') for (const { lease, kind } of this.releaseEndings(ev, victim)) this.end(lease, ev, kind);
        break;
      }
      case 'write':
        this.write(ev);
        break;
    }
  }

  private end(lease: Lease, ev: LockEvent, kind: LeaseEnd): void {
    lease.ended(keep(ev, { resource: this.resource, leaseId: lease.leaseId, ownerId: lease.ownerId, fenceToken: lease.fenceToken }), kind);
    // After its owner released it, the lease's last renewal is no longer evidence of anything.
    if (kind === 'release') lease.forgetRenewals();
  }

  private grant(ev: LockEvent): void {
    const token = ev.fenceToken;
    // The grant of a new highest token always starts a new lease (a grant logged again has its lease's token).
    let highest = false;
    if (token !== undefined) {
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
    const g = this.grantedTokens;
    if (g === undefined) {
      // The first token: kept as it is (the lease holds the same BigInt), no array yet.
      this.grantedTokens = token;
      return;
    }
    const key = windowKey(token);
    if (typeof g === 'bigint') {
      if (g === token) return;
      this.grantedTokens = [windowKey(g), key];
      return;
    }
    const n = g.length;
    for (let i = 0; i < n; i++) if (g[i] === key) return;
    if (n < GRANTED_WINDOW) {
      const window = new Array<number | bigint>(n + 1);
      for (let i = 0; i < n; i++) window[i] = g[i]!;
      window[n] = key;
      this.grantedTokens = window;
    } else {
      // The window is full: replace the oldest.
      const rare = this.rareFacts();
      g[rare.grantedNext] = key;
      rare.grantedNext = (rare.grantedNext + 1) % n;
    }
  }

  private write(ev: LockEvent): void {
    if (ev.observer === 'resource') this.resourceLogsWrites = true;
    if (!this.isDecision(ev)) return;
    const staleness = this.staleness(ev);
    const stale = staleness === 'stale' || staleness === 'equal-other-handle';
    const rare = stale ? this.rareFacts() : undefined;
    if (rare !== undefined) rare.staleWrites++;
    switch (ev.result) {
      case 'accepted':
        this.accepted++;
        if (staleness === 'untokened') this.withoutToken++;
        else if (rare !== undefined) {
          rare.staleWritesAccepted++;
          rare.firstAcceptedStale ??= { token: ev.fenceToken, highest: this.highest?.fenceToken };
        }
        else if (staleness === 'fresh') {
          const lease = this.findLease(ev);
          this.highest = keep(ev, lease === undefined ? this : { resource: this.resource, leaseId: lease.leaseId, ownerId: lease.ownerId, fenceToken: lease.fenceToken });
        }
        break;
      case 'rejected-stale-fence':
        this.rejectedStaleFence++;
        if (rare !== undefined) rare.staleWritesExplicit++;
        break;
      default:
        this.rejectedOther++;
        if (rare !== undefined) {
          rare.firstNotExplicit ??= { token: ev.fenceToken, highest: this.highest?.fenceToken, result: ev.result };
          (rare.notExplicitResults ??= new Set()).add(detach(ev.result));
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
