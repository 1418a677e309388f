/**
 * Per-resource state: lock facts only (leases, tokens, the highest accepted write, counters), and
 * a small query API for the rules (holder, findLease, staleness, grantStatus, endingsOf…). It
 * knows no rule: a rule keeps what it needs in its own slot (opaque here; see rules/types.ts).
 *
 * Compact: the state of every resource of a run lives in one TimelineStore, as columns of typed
 * arrays indexed by small integer ids (a resource's id, a lease's slot, a kept event's record),
 * with no object per resource, lease or kept event. Tokens up to 2^53 are doubles, larger ones
 * are kept exactly beside them. A ResourceTimeline and a Lease are views of that state, made
 * when asked for (the engine re-points one view per event); a LockEvent of the state (a lease's
 * grant, the highest accepted write) is built when a rule or a finding asks for it.
 * Small and bounded: a few leases, the highest accepted and granted tokens with the events that
 * set them, a window of recently granted tokens, counters. Memory grows with resources, never
 * with events.
 */
import { KeptEvent, keptString, type LockEvent } from '../model/event.js';
import { BIG, Blobs, ByteReader, ByteWriter, EventPool, hashString, StringTable, lineAt, metaExact, NONE, observerOf, Origins, packMeta, PAGE_BITS, PAGE_MASK, putLine, reserveF64, reserveI32, resultOf, Texts, tokenAt, tokenKey, tokenOfKey, typeOf } from './pool.js';

export type LeaseEnd = 'expire' | 'revoke' | 'release' | 'released-by-old-handle';

/** The fields that identify a lock handle, on an event or a lease. */
export type Handle = Pick<LockEvent, 'leaseId' | 'fenceToken' | 'ownerId'>;

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
}

// Lease numbers: doubles at stride LF, integers at stride LI (a lease's numbers are together).
const LF = 6;
const L_SERIAL = 0;
const L_GRANT_TS = 1;
const L_RENEW_TS = 2;
const L_TTL = 3;
const L_TOKEN = 4;
const L_END_TS = 5;
const LI = 11;
const L_GRANT_ORIGIN = 0;
/** -1 when the last renewal came from the grant's file and source. */
const L_RENEW_ORIGIN = 1;
const L_END_ORIGIN = 2;
/** The next older lease of the resource (-1 for none), or the free list's next. */
const L_OLDER = 3;
const L_BITS = 4;
/** The inline end's endMeta, or the end's record (END_RECORD). */
const L_END = 5;
const L_GRANT_LINE = 6;
const L_RENEW_LINE = 7;
const L_END_LINE = 8;
/** The leaseId's handle in `texts`. */
const L_LEASE_ID = 9;
/** The ownerId's id in `owners`. */
const L_OWNER = 10;

// L_BITS: grant observer (bits 0-1), last renewal's observer (bits 2-3), and flags.
const RENEW_OBSERVER_SHIFT = 2;
const RENEWED = 1 << 4;
const ENDED_BY_OLD_HANDLE = 1 << 5;
/** In its resource's list of leases. */
const IN_LIST = 1 << 6;
/** Its resource's highest granted lease. */
const HIGHEST_GRANTED = 1 << 7;
/** A renewal changed the ttl: the grant's own is in grantTtls. */
const GRANT_TTL_KEPT = 1 << 8;
/** Its end event is inline (L_END_TS, L_END_LINE, L_END_ORIGIN, endMeta in L_END); with END_RECORD, a kept event record (L_END). */
const ENDED = 1 << 9;
const END_RECORD = 1 << 10;
/** The grant had an operationId (in grantOps). */
const GRANT_OPERATION = 1 << 11;
// endMeta: packMeta of the end event (bits 0-8), and which of the lease's handle fields it carries.
const END_OWNER = 1 << 9;
const END_LEASE = 1 << 10;
const END_TOKEN = 1 << 11;

const OBSERVERS_BY_BITS = ['authority', 'worker', 'resource'] as const;
function observerBits(o: string): number {
  return o === 'authority' ? 0 : o === 'worker' ? 1 : 2;
}

// Resource numbers: counters at stride RC, integers at stride RI.
const RC = 6;
/** A resource's counters, by index (TimelineStore.count()). */
export const Counter = { events: 0, accepted: 1, rejectedStaleFence: 2, rejectedOther: 3, withoutToken: 4, findings: 5 } as const;
const C_EVENTS = Counter.events;
const C_ACCEPTED = Counter.accepted;
const C_REJECTED_STALE = Counter.rejectedStaleFence;
const C_REJECTED_OTHER = Counter.rejectedOther;
const C_WITHOUT_TOKEN = Counter.withoutToken;
const C_FINDINGS = Counter.findings;
const RI = 5;
const R_NEWEST = 0;
const R_HIGHEST_GRANTED = 1;
/** The highest accepted write's record. */
const R_HIGHEST = 2;
/** The granted window's block in its class pool. */
const R_WIN_AT = 3;
/** Window class (bits 0-7), tokens in the window (bits 8-15), next to replace once full (bits 16-23), flags (bits 24-30). */
const R_WIN = 4;
const LOGS_WRITES = 1 << 24;
/** The resource's leases and window are in its summary record (R_NEWEST holds the record's handle in `blobs`). */
const COMPACT = 1 << 25;
/** R_HIGHEST of a compact resource whose highest accepted write is in its summary record. */
const PACKED = -2;
/**
 * A summary record's first number (one byte): HAS_RECORD when it holds the highest accepted write,
 * RECORD_LEASE when that write's leaseId is the newest lease's (the write says so, the lease
 * keeps the bytes: also for a write that joins later, see repack()), and from bit 2 on, 3 × the
 * leases + where the highest granted lease is (0: none, 1: one of them, 2: after them).
 */
const HAS_RECORD = 1;
const RECORD_LEASE = 2;
/** The bits a summary record's lease numbers are XORed with (the usual ended lease's: they write as 0), bit 6 and 7 swapped (one byte for most). */
const USUAL_BITS = IN_LIST | HIGHEST_GRANTED | ENDED;
/** The endMeta an inline end is XORed with: a release of the lease's owner, lease and token, as the authority logged it. */
const USUAL_END = packMeta('release', 'authority', 'released') | END_OWNER | END_LEASE | END_TOKEN;
function swap67(v: number): number {
  return (v & ~0xc0) | ((v & 0x40) << 1) | ((v & 0x80) >> 1);
}
/**
 * Counters are a byte each (most resources count a few events), and from the first of a page's
 * resources whose count passes 255, a 32-bit number each beside for the rest (count = low +
 * 256 × high): (SPILLED_LOW, SPILLED_HIGH) means the count is in bigCounts.
 */
const SPILLED_LOW = 0xff;
const SPILLED_HIGH = 0xffffffff;
/** The highest count kept in the two (2^40 - 2). */
const MAX_INLINE = SPILLED_HIGH * 256 + SPILLED_LOW - 1;

/** Granted-window classes: class c holds up to 2^c tokens (1 to 64); OBJECT_WINDOW keeps an array that may hold BigInts. */
const WINDOW_CLASSES = 7;
const WIN_PAGE_BITS = 13;
const WIN_PAGE_MASK = (1 << WIN_PAGE_BITS) - 1;
const NO_WINDOW = 255;
const OBJECT_WINDOW = 254;

/**
 * The state of every resource of a run. Resources get ids 0, 1, 2… in the order they are added;
 * leases get slots and kept events records in `events`, both reused once let go. Each resource's
 * and each lease's numbers are together in typed arrays (a lease is two runs of a few numbers);
 * strings are in plain arrays beside them.
 */
export class TimelineStore {
  /** Kept events: the highest accepted write of each resource, lease ends that need a record of their own. */
  readonly events: EventPool;
  readonly origins: Origins;
  /**
   * Resource names by id: as bytes (a Texts handle each, in pages), not strings: a string per
   * resource would be an object on the heap for the whole run. name() builds one when asked (the
   * last one is kept: a run of events of one resource asks for it again and again).
   */
  private readonly nameTexts = new Texts();
  private readonly nameIds: Int32Array<ArrayBuffer>[] = [];
  private resources = 0;
  private namedId = -1;
  private namedAs = '';
  /**
   * Resource ids by name: open addressing over id + 1 (0 for empty), at most half full, keyed by
   * each name's hash (kept per id); no Map entry per resource.
   */
  private table = new Int32Array(1024);
  private readonly hashes: Int32Array<ArrayBuffer>[] = [];
  /** Counters: their low bytes, and by page (once one needs them) their high numbers; one past MAX_INLINE goes on in `bigCounts`. */
  private readonly rc: Uint8Array<ArrayBuffer>[] = [];
  private readonly rcHigh: (Uint32Array<ArrayBuffer> | undefined)[] = [];
  private readonly bigCounts = new Map<number, number>();
  private readonly ri: Int32Array<ArrayBuffer>[] = [];
  readonly rare = new Map<number, RareFacts>();
  /** Rule slots of each resource that has one (index: the engine's slot number). */
  readonly slots = new Map<number, unknown[]>();
  // Granted windows: one pool of doubles per class, each with its free blocks.
  // (Pages of WIN_PAGE doubles: a block of 2^c tokens never crosses a page.)
  private readonly winPools: Float64Array<ArrayBuffer>[][] = Array.from({ length: WINDOW_CLASSES }, () => []);
  private readonly winSizes = new Int32Array(WINDOW_CLASSES);
  private readonly winFree: number[][] = Array.from({ length: WINDOW_CLASSES }, () => []);
  private readonly objectWindows = new Map<number, (number | bigint)[]>();
  private readonly lf: Float64Array<ArrayBuffer>[] = [];
  private readonly li: Int32Array<ArrayBuffer>[] = [];
  /** Identifiers: a lease's leaseId as bytes, its ownerId as a shared string's id (see pool.ts). */
  readonly texts: Texts;
  readonly owners: StringTable;
  private readonly grantOps = new Map<number, string>();
  private readonly leaseBigs = new Map<number, bigint>();
  private readonly longLines = new Map<number, number>();
  private readonly grantTtls = new Map<number, number | undefined>();
  private leaseSize = 0;
  private leaseFree = -1;
  /** Counts the changes of the resources' lease lists (a lease added or taken out): see slotMemo. */
  leaseEpoch = 0;
  /** ResourceTimeline.findSlot's last answer: an event's lease slot on a resource, at a leaseEpoch. */
  readonly slotMemo: { event: Handle | undefined; id: number; epoch: number; slot: number; view: Lease | undefined; viewEpoch: number } = { event: undefined, id: -1, epoch: -1, slot: -1, view: undefined, viewEpoch: -1 };
  private serials = 0;

  constructor() {
    this.origins = new Origins();
    this.texts = new Texts();
    this.owners = new StringTable();
    this.events = new EventPool((id) => this.name(id), this.origins, this.texts, this.owners);
  }

  get size(): number {
    return this.resources;
  }

  /** The id of a resource, or -1. */
  idOf(resource: string): number {
    // Lookups come in runs for one resource (the engine's, then its rules' operation lookups).
    if (resource === this.lastName) return this.lastId;
    const id = this.find(resource);
    if (id !== -1) {
      this.lastName = resource;
      this.lastId = id;
    }
    return id;
  }

  private lastName: string | undefined;
  private lastId = -1;

  private find(resource: string): number {
    const h = hashString(resource, 0);
    const table = this.table;
    const mask = table.length - 1;
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const e = table[p]!;
      if (e === 0) return -1;
      const id = e - 1;
      if (this.hashes[id >>> PAGE_BITS]![id & PAGE_MASK] === h && this.nameTexts.is(this.nameIds[id >>> PAGE_BITS]![id & PAGE_MASK]!, resource)) return id;
    }
  }

  /** Put id in the table at its hash's place. */
  private index(id: number, h: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let p = h & mask;
    while (table[p] !== 0) p = (p + 1) & mask;
    table[p] = id + 1;
  }

  name(id: number): string {
    if (id !== this.namedId) {
      this.namedAs = this.nameTexts.get(this.nameIds[id >>> PAGE_BITS]![id & PAGE_MASK]!)!;
      this.namedId = id;
    }
    return this.namedAs;
  }

  /** Add a resource (its name as state keeps it: detached from any line); returns its id. */
  add(resource: string): number {
    const id = this.resources++;
    reserveI32(this.nameIds, 1, id);
    this.nameIds[id >>> PAGE_BITS]![id & PAGE_MASK] = this.nameTexts.put(resource);
    reserveI32(this.hashes, 1, id);
    const h = hashString(resource, 0);
    this.hashes[id >>> PAGE_BITS]![id & PAGE_MASK] = h;
    if (2 * (id + 1) > this.table.length) {
      // Twice as large, every id put again.
      this.table = new Int32Array(this.table.length * 2);
      for (let k = 0; k < id; k++) this.index(k, this.hashes[k >>> PAGE_BITS]![k & PAGE_MASK]!);
    }
    this.index(id, h);
    while (id >>> PAGE_BITS >= this.rc.length) {
      this.rc.push(new Uint8Array(RC << PAGE_BITS));
      this.rcHigh.push(undefined);
    }
    reserveI32(this.ri, RI, id);
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI;
    ri[o + R_NEWEST] = -1;
    ri[o + R_HIGHEST_GRANTED] = -1;
    ri[o + R_HIGHEST] = -1;
    ri[o + R_WIN] = NO_WINDOW;
    return id;
  }

  /** A view of a resource's state. */
  view(id: number): ResourceTimeline {
    return new ResourceTimeline(this, id);
  }

  count(id: number, counter: number): number {
    const o = (id & PAGE_MASK) * RC + counter;
    const low = this.rc[id >>> PAGE_BITS]![o]!;
    const high = this.rcHigh[id >>> PAGE_BITS];
    if (high === undefined) return low;
    const h = high[o]!;
    return h === SPILLED_HIGH && low === SPILLED_LOW ? this.bigCounts.get(id * RC + counter)! : h * 256 + low;
  }

  bump(id: number, counter: number): void {
    const rc = this.rc[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RC + counter;
    const v = rc[o]!;
    // (Below SPILLED_LOW - 1: the low byte never becomes SPILLED_LOW by itself.)
    if (v < SPILLED_LOW - 1) rc[o] = v + 1;
    else this.setCount(id, counter, this.count(id, counter) + 1);
  }

  setCount(id: number, counter: number, n: number): void {
    const p = id >>> PAGE_BITS;
    const o = (id & PAGE_MASK) * RC + counter;
    let high = this.rcHigh[p];
    if (high === undefined && n > 255) this.rcHigh[p] = high = new Uint32Array(RC << PAGE_BITS);
    if (n <= MAX_INLINE) {
      this.rc[p]![o] = n % 256;
      if (high !== undefined) high[o] = Math.floor(n / 256);
      this.bigCounts.delete(id * RC + counter);
    } else {
      this.rc[p]![o] = SPILLED_LOW;
      high![o] = SPILLED_HIGH;
      this.bigCounts.set(id * RC + counter, n);
    }
  }

  /** The resource's newest lease (-1 for none). */
  newest(id: number): number {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI;
    if ((ri[o + R_WIN]! & COMPACT) !== 0) this.inflate(id);
    return ri[o + R_NEWEST]!;
  }

  highestGranted(id: number): number {
    this.ensure(id);
    return this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_HIGHEST_GRANTED]!;
  }

  /** The highest accepted write's record (-1 for none). */
  highest(id: number): number {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI + R_HIGHEST;
    if (ri[o] === PACKED) this.inflate(id);
    return ri[o]!;
  }

  setHighest(id: number, r: number): void {
    this.ensure(id);
    this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_HIGHEST] = r;
  }

  /** The highest accepted token as a double (BIG when it is not exact as one, NONE for none), read without rebuilding a summary record. */
  highestKey(id: number): number {
    const r = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_HIGHEST]!;
    if (r === -1) return NONE;
    if (r !== PACKED) return this.events.tokenKey(r);
    const h = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_NEWEST]!;
    // The first number (one byte), then the token: read in place.
    const rd = this.reader.at(this.blobs.page(h), this.blobs.at(h) + 2);
    rd.u();
    return rd.num(0);
  }

  logsWrites(id: number): boolean {
    return (this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]! & LOGS_WRITES) !== 0;
  }

  setLogsWrites(id: number): void {
    this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]! |= LOGS_WRITES;
  }

  // --- Leases --------------------------------------------------------------------------------

  /** A free lease slot. Any change to which lease a slot holds moves leaseEpoch (findSlot's memo). */
  private allocLease(): number {
    this.leaseEpoch++;
    let s = this.leaseFree;
    if (s !== -1) this.leaseFree = this.older(s);
    else {
      s = this.leaseSize++;
      reserveF64(this.lf, LF, s);
      reserveI32(this.li, LI, s);
    }
    return s;
  }

  /** A new lease from its grant, first in its resource's list. */
  newLease(id: number, grant: LockEvent): number {
    this.ensure(id);
    const s = this.allocLease();
    const f = this.lf[s >>> PAGE_BITS]!;
    const i = this.li[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const io = (s & PAGE_MASK) * LI;
    f[fo + L_SERIAL] = ++this.serials;
    f[fo + L_GRANT_TS] = grant.ts;
    f[fo + L_RENEW_TS] = grant.ts;
    f[fo + L_TTL] = grant.ttlMs === undefined ? NONE : grant.ttlMs;
    const t = tokenKey(grant.fenceToken);
    f[fo + L_TOKEN] = t;
    if (t === BIG) this.leaseBigs.set(s, grant.fenceToken!);
    putLine(i, io + L_GRANT_LINE, s * LI + L_GRANT_LINE, grant.line, this.longLines);
    i[io + L_RENEW_LINE] = 0;
    i[io + L_GRANT_ORIGIN] = this.origins.ref(grant.file, grant.source);
    i[io + L_RENEW_ORIGIN] = -1;
    const ri = this.ri[id >>> PAGE_BITS]!;
    const ro = (id & PAGE_MASK) * RI;
    i[io + L_OLDER] = ri[ro + R_NEWEST]!;
    ri[ro + R_NEWEST] = s;
    let bits = observerBits(grant.observer) | IN_LIST;
    // Detached: a lease outlives the line it was read from (see detach()).
    if (grant.operationId !== undefined) {
      this.grantOps.set(s, keptString(grant.operationId, false));
      bits |= GRANT_OPERATION;
    }
    i[io + L_BITS] = bits;
    i[io + L_LEASE_ID] = this.texts.put(grant.leaseId);
    i[io + L_OWNER] = this.owners.ref(grant.ownerId);
    return s;
  }

  /** Let a lease go once neither its resource's list nor its highest granted token names it. */
  private releaseLease(s: number): void {
    const io = (s & PAGE_MASK) * LI;
    const i = this.li[s >>> PAGE_BITS]!;
    const b = i[io + L_BITS]!;
    if ((b & (IN_LIST | HIGHEST_GRANTED)) !== 0) return;
    this.origins.unref(i[io + L_GRANT_ORIGIN]!);
    if (i[io + L_RENEW_ORIGIN] !== -1) this.origins.unref(i[io + L_RENEW_ORIGIN]!);
    if ((b & ENDED) !== 0) {
      if ((b & END_RECORD) !== 0) this.events.free(i[io + L_END]!);
      else this.origins.unref(i[io + L_END_ORIGIN]!);
    }
    if (this.tokenKey(s) === BIG) this.leaseBigs.delete(s);
    if ((b & GRANT_TTL_KEPT) !== 0) this.grantTtls.delete(s);
    if ((b & GRANT_OPERATION) !== 0) this.grantOps.delete(s);
    if (this.longLines.size > 0) for (const k of [L_GRANT_LINE, L_RENEW_LINE, L_END_LINE]) this.longLines.delete(s * LI + k);
    this.texts.free(i[io + L_LEASE_ID]!);
    this.owners.unref(i[io + L_OWNER]!);
    i[io + L_BITS] = 0;
    this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_SERIAL] = 0;
    i[io + L_OLDER] = this.leaseFree;
    this.leaseFree = s;
    this.leaseEpoch++;
  }

  /** The lease after s in its resource's list (-1 at the end). */
  older(s: number): number {
    return this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_OLDER]!;
  }

  /** Take the lease after `prev` out of its resource's list. */
  unlistAfter(prev: number, s: number): void {
    this.leaseEpoch++;
    const i = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    this.li[prev >>> PAGE_BITS]![(prev & PAGE_MASK) * LI + L_OLDER] = i[io + L_OLDER]!;
    i[io + L_BITS]! &= ~IN_LIST;
    i[io + L_OLDER] = -1;
    this.releaseLease(s);
  }

  /** Make `s` its resource's highest granted lease. */
  setHighestGranted(id: number, s: number): void {
    this.ensure(id);
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI + R_HIGHEST_GRANTED;
    const old = ri[o]!;
    ri[o] = s;
    this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_BITS]! |= HIGHEST_GRANTED;
    if (old !== -1) {
      this.li[old >>> PAGE_BITS]![(old & PAGE_MASK) * LI + L_BITS]! &= ~HIGHEST_GRANTED;
      this.releaseLease(old);
    }
  }

  /** Unique in the run: the same lease has the same serial in every view of it. */
  serial(s: number): number {
    return this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_SERIAL]!;
  }

  grantTs(s: number): number {
    return this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_GRANT_TS]!;
  }

  /** The grant's line as kept (LONG_LINE above 2^31: see putLine). */
  private grantLine(s: number): number {
    return this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_GRANT_LINE]!;
  }

  renewTs(s: number): number {
    return this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_RENEW_TS]!;
  }

  /** The lease's ttl (NONE when none is known). */
  ttl(s: number): number {
    return this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_TTL]!;
  }

  /** The lease's token as a double (BIG when it is not exact as one, NONE for none). */
  tokenKey(s: number): number {
    return this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_TOKEN]!;
  }

  leaseToken(s: number): bigint | undefined {
    return tokenAt(this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_TOKEN]!, this.leaseBigs, s);
  }

  /** The lease's leaseId (a new string each time). */
  leaseId(s: number): string | undefined {
    return this.texts.get(this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_LEASE_ID]!);
  }

  /** The leaseId's handle in `texts`. */
  leaseText(s: number): number {
    return this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_LEASE_ID]!;
  }

  hasLeaseId(s: number): boolean {
    return this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_LEASE_ID] !== -1;
  }

  /** Whether the lease's leaseId is `leaseId` (none is undefined). */
  leaseIdIs(s: number, leaseId: string | undefined): boolean {
    return this.texts.is(this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_LEASE_ID]!, leaseId);
  }

  ownerId(s: number): string | undefined {
    return this.owners.get(this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_OWNER]!);
  }

  /** Whether a token equals the lease's (both none counts as equal). */
  sameToken(s: number, token: bigint | undefined): boolean {
    const t = this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_TOKEN]!;
    if (token === undefined) return Number.isNaN(t);
    const k = tokenKey(token);
    return k === BIG ? t === BIG && this.leaseBigs.get(s)! === token : t === k;
  }

  hasEnded(s: number): boolean {
    return (this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_BITS]! & ENDED) !== 0;
  }

  /** Not ended by a logged event, and not past its ttl since the last renewal. */
  liveAt(s: number, t: number): boolean {
    if ((this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_BITS]! & ENDED) !== 0) return false;
    const f = this.lf[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const ttl = f[fo + L_TTL]!;
    return Number.isNaN(ttl) || t <= f[fo + L_RENEW_TS]! + ttl;
  }

  /** A successful renewal: by a keepalive, or by the same grant logged again. */
  renew(s: number, ev: LockEvent): void {
    const f = this.lf[s >>> PAGE_BITS]!;
    const i = this.li[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const io = (s & PAGE_MASK) * LI;
    f[fo + L_RENEW_TS] = ev.ts;
    const ttl = f[fo + L_TTL]!;
    if (ev.ttlMs !== undefined && (Number.isNaN(ttl) || ev.ttlMs !== ttl)) {
      // The grant's ttl is about to be forgotten: keep it for the grant event.
      if ((i[io + L_BITS]! & GRANT_TTL_KEPT) === 0) {
        this.grantTtls.set(s, Number.isNaN(ttl) ? undefined : ttl);
        i[io + L_BITS]! |= GRANT_TTL_KEPT;
      }
      f[fo + L_TTL] = ev.ttlMs;
    }
    putLine(i, io + L_RENEW_LINE, s * LI + L_RENEW_LINE, ev.line, this.longLines);
    const grantFrom = i[io + L_GRANT_ORIGIN]!;
    const from = i[io + L_RENEW_ORIGIN]!;
    const origins = this.origins;
    if (ev.file === origins.file(grantFrom) && ev.source === origins.source(grantFrom)) {
      if (from !== -1) {
        origins.unref(from);
        i[io + L_RENEW_ORIGIN] = -1;
      }
    } else if (from === -1 || origins.file(from) !== ev.file || origins.source(from) !== ev.source) {
      if (from !== -1) origins.unref(from);
      i[io + L_RENEW_ORIGIN] = origins.ref(ev.file, ev.source);
    }
    i[io + L_BITS] = (i[io + L_BITS]! & ~(3 << RENEW_OBSERVER_SHIFT)) | (observerBits(ev.observer) << RENEW_OBSERVER_SHIFT) | RENEWED;
  }

  /** The event that ended the lease, and how (once). */
  endLease(s: number, id: number, ev: LockEvent, kind: LeaseEnd): void {
    const meta = packMeta(ev.type, ev.observer, ev.result);
    const li = this.li[s >>> PAGE_BITS]!;
    const lf = this.lf[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    const fo = (s & PAGE_MASK) * LF;
    let b = li[io + L_BITS]! | ENDED;
    if (kind === 'released-by-old-handle') b |= ENDED_BY_OLD_HANDLE;
    const ownerId = this.owners.get(li[io + L_OWNER]!);
    // Inline when the end carries nothing of its own but the lease's handle fields (the usual end).
    const inline =
      metaExact(meta) &&
      ev.operationId === undefined &&
      ev.ttlMs === undefined &&
      (ev.leaseId === undefined || this.leaseIdIs(s, ev.leaseId)) &&
      (ev.ownerId === undefined || ev.ownerId === ownerId) &&
      (ev.fenceToken === undefined || this.sameToken(s, ev.fenceToken));
    if (inline) {
      lf[fo + L_END_TS] = ev.ts;
      putLine(li, io + L_END_LINE, s * LI + L_END_LINE, ev.line, this.longLines);
      li[io + L_END_ORIGIN] = this.origins.ref(ev.file, ev.source);
      li[io + L_END] = meta | (ev.ownerId !== undefined ? END_OWNER : 0) | (ev.leaseId !== undefined ? END_LEASE : 0) | (ev.fenceToken !== undefined ? END_TOKEN : 0);
    } else {
      li[io + L_END] = this.events.put(ev, id, { leaseText: li[io + L_LEASE_ID]! });
      b |= END_RECORD;
    }
    // After its owner released it, the lease's last renewal is no longer evidence of anything.
    if (kind === 'release') {
      b &= ~RENEWED;
      lf[fo + L_RENEW_TS] = lf[fo + L_GRANT_TS]!;
    }
    li[io + L_BITS] = b;
  }

  endTime(s: number): number {
    return (this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_BITS]! & END_RECORD) !== 0 ? this.events.ts(this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_END]!) : this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_END_TS]!;
  }

  /** Whether the end event names a lease, an owner or a token (see Lease.endsAt). */
  endHasHandle(s: number): boolean {
    const li = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    if ((li[io + L_BITS]! & END_RECORD) === 0) return (li[io + L_END]! & (END_OWNER | END_LEASE | END_TOKEN)) !== 0;
    return hasHandle(this.events.event(li[io + L_END]!));
  }

  /** The end event, built. */
  endEvent(s: number, resource: string): LockEvent | undefined {
    const li = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    const b = li[io + L_BITS]!;
    if ((b & ENDED) === 0) return undefined;
    if ((b & END_RECORD) !== 0) return this.events.event(li[io + L_END]!);
    const m = li[io + L_END]!;
    const o = li[io + L_END_ORIGIN]!;
    return new KeptEvent(
      this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_END_TS]!,
      typeOf(m),
      resource,
      (m & END_OWNER) !== 0 ? this.owners.get(li[io + L_OWNER]!) : undefined,
      (m & END_LEASE) !== 0 ? this.leaseId(s) : undefined,
      undefined,
      (m & END_TOKEN) !== 0 ? this.leaseToken(s) : undefined,
      undefined,
      resultOf(m),
      observerOf(m),
      this.origins.source(o),
      this.origins.file(o),
      lineAt(li, io + L_END_LINE, s * LI + L_END_LINE, this.longLines),
    );
  }

  endKind(s: number): LeaseEnd | undefined {
    const li = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    const b = li[io + L_BITS]!;
    if ((b & ENDED) === 0) return undefined;
    if ((b & ENDED_BY_OLD_HANDLE) !== 0) return 'released-by-old-handle';
    return ((b & END_RECORD) !== 0 ? this.events.type(li[io + L_END]!) : typeOf(li[io + L_END]!)) as LeaseEnd;
  }

  grantEvent(s: number, resource: string): LockEvent {
    const li = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    const b = li[io + L_BITS]!;
    const o = li[io + L_GRANT_ORIGIN]!;
    const f = this.lf[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const ttl = f[fo + L_TTL]!;
    return new KeptEvent(
      f[fo + L_GRANT_TS]!,
      'acquire',
      resource,
      this.owners.get(li[io + L_OWNER]!),
      this.leaseId(s),
      (b & GRANT_OPERATION) !== 0 ? this.grantOps.get(s) : undefined,
      this.leaseToken(s),
      // Until a renewal changes it, the lease's ttl is the grant's.
      (b & GRANT_TTL_KEPT) !== 0 ? this.grantTtls.get(s) : Number.isNaN(ttl) ? undefined : ttl,
      'granted',
      OBSERVERS_BY_BITS[b & 3]!,
      this.origins.source(o),
      this.origins.file(o),
      lineAt(li, io + L_GRANT_LINE, s * LI + L_GRANT_LINE, this.longLines),
    );
  }

  lastRenewEvent(s: number, resource: string): LockEvent {
    const li = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    const b = li[io + L_BITS]!;
    if ((b & RENEWED) === 0) return this.grantEvent(s, resource);
    const o = li[io + L_RENEW_ORIGIN] === -1 ? li[io + L_GRANT_ORIGIN]! : li[io + L_RENEW_ORIGIN]!;
    const f = this.lf[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const ttl = f[fo + L_TTL]!;
    return new KeptEvent(
      f[fo + L_RENEW_TS]!,
      'keepalive',
      resource,
      this.owners.get(li[io + L_OWNER]!),
      this.leaseId(s),
      undefined,
      undefined,
      Number.isNaN(ttl) ? undefined : ttl,
      'ok',
      OBSERVERS_BY_BITS[(b >> RENEW_OBSERVER_SHIFT) & 3]!,
      this.origins.source(o),
      this.origins.file(o),
      lineAt(li, io + L_RENEW_LINE, s * LI + L_RENEW_LINE, this.longLines),
    );
  }

  renewed(s: number): boolean {
    return (this.li[s >>> PAGE_BITS]![(s & PAGE_MASK) * LI + L_BITS]! & RENEWED) !== 0;
  }

  // --- Summary records -------------------------------------------------------------------------

  /** The summary records of resources with no live lease (see compact()). */
  readonly blobs = new Blobs((id, h) => {
    this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_NEWEST] = h;
  });
  private readonly writer = new ByteWriter();
  private readonly reader = new ByteReader();
  /** Resources whose state is a summary record now. */
  compacted = 0;
  // The bases a summary record's numbers are written from (the lease before's).
  private baseSerial = 0;
  private baseTs = 0;
  private baseTtl = 0;
  private baseToken = 0;
  private baseLine = 0;
  /** The base of every ttl of a record's first lease: the first lease's written (a run's leases mostly share one). */
  private ttlEpoch = Number.NaN;

  /** Whether the resource's leases and window are a summary record now (rebuilt when next read). */
  isCompact(id: number): boolean {
    return (this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]! & COMPACT) !== 0;
  }

  private ensure(id: number): void {
    if ((this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]! & COMPACT) !== 0) this.inflate(id);
  }

  /** The base of the first lease's grant time: the first one a record was written with (a run's times are near it). */
  private epoch = Number.NaN;

  private resetBases(): void {
    this.baseSerial = 0;
    this.baseTs = this.epoch;
    this.baseTtl = this.ttlEpoch;
    this.baseToken = 0;
    this.baseLine = 0;
  }

  /**
   * Shrink a resource with no live lease (every lease it keeps has a logged end, so none changes
   * before its next grant) to a summary record: its leases and its granted-token window as bytes
   * (ByteWriter: most numbers as small differences), their slots and block let go. The lease ids,
   * owners, (file, source) pairs and end records its leases name stay held, by the record. The
   * first call that reads them (newest(), findLease(), grantStatus()…) rebuilds the same state
   * from it, with the same serials (Lease.id); only the slots differ. The highest accepted write
   * and the counters are not part of it. Returns whether it shrank: a resource with a live lease,
   * with nothing to shrink, or with a rare value (a token above 2^53, a line above 2^31, a
   * grant's operationId) stays as it is.
   */
  compact(id: number): boolean {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI;
    const win = ri[o + R_WIN]!;
    const c = win & 0xff;
    if ((win & COMPACT) !== 0 || c === OBJECT_WINDOW) return false;
    const first = ri[o + R_NEWEST]!;
    const hg = ri[o + R_HIGHEST_GRANTED]!;
    // Most calls end here: the newest lease is live.
    let n = 0;
    let hgAt = -1;
    for (let s = first; s !== -1; s = this.older(s)) {
      if (!this.hasEnded(s)) return false;
      if (s === hg) hgAt = n;
      n++;
    }
    const high = ri[o + R_HIGHEST]!;
    const record = high !== -1 && this.events.packable(high);
    if (first === -1 && hg === -1 && c === NO_WINDOW && !record) return false;
    const w = this.writer;
    // Two bytes for the length (see repack()), then the record.
    w.reset(2);
    if (Number.isNaN(this.epoch)) {
      const t = first !== -1 ? this.grantTs(first) : hg !== -1 ? this.grantTs(hg) : this.events.ts(high);
      this.epoch = Number.isSafeInteger(t) ? t : 0;
    }
    if (Number.isNaN(this.ttlEpoch) && (first !== -1 || hg !== -1)) {
      const t = this.ttl(first !== -1 ? first : hg);
      this.ttlEpoch = Number.isSafeInteger(t) ? t : 0;
    }
    // The write's leaseId may be the newest lease's (then the lease keeps its bytes); a write that joins later (repack()) also.
    const text = high !== -1 ? this.events.leaseText(high) : -1;
    const shares = first !== -1 && text >= 0 && this.leaseText(first) === text;
    w.u((record ? HAS_RECORD : 0) | (shares ? RECORD_LEASE : 0) | ((n * 3 + (hg === -1 ? 0 : hgAt !== -1 ? 1 : 2)) << 2));
    // The write's token next (highestKey() reads it in place), the rest of it last.
    if (record) w.num(this.events.tokenKey(high), 0);
    if (hgAt !== -1) w.u(hgAt);
    this.resetBases();
    for (let s = first; s !== -1; s = this.older(s)) if (!this.writeLease(s)) return false;
    if (hg !== -1 && hgAt === -1 && !this.writeLease(hg)) return false;
    if (c === NO_WINDOW) w.u(0);
    else {
      const wn = (win >> 8) & 0xff;
      w.u(wn);
      w.u((win >> 16) & 0xff);
      const at = ri[o + R_WIN_AT]!;
      const pool = this.winPools[c]![at >>> WIN_PAGE_BITS]!;
      const po = at & WIN_PAGE_MASK;
      let prev = 0;
      for (let k = 0; k < wn; k++) {
        const t = pool[po + k]!;
        w.num(t, prev);
        prev = t;
      }
    }
    // Its time and line from the newest lease's grant (the first numbers of the first lease: see repack()).
    if (record) this.events.pack(high, w, first !== -1 ? this.grantTs(first) : this.epoch, first !== -1 ? this.grantLine(first) : 0, shares ? text : -1);
    if (w.full) return false;
    w.buf[0] = (w.pos - 2) & 0xff;
    w.buf[1] = (w.pos - 2) >> 8;
    const h = this.blobs.put(w.buf, w.pos, id, w.words);
    if (h === -1) return false;
    for (let s = first; s !== -1; ) {
      const next = this.older(s);
      this.dropSlot(s);
      s = next;
    }
    if (hg !== -1 && hgAt === -1) this.dropSlot(hg);
    if (c !== NO_WINDOW) this.winFree[c]!.push(ri[o + R_WIN_AT]!);
    if (record) {
      this.events.drop(high);
      ri[o + R_HIGHEST] = PACKED;
    }
    for (let k = 0; k < w.taken; k++) this.texts.free(w.takenAt(k));
    ri[o + R_NEWEST] = h;
    ri[o + R_HIGHEST_GRANTED] = -1;
    ri[o + R_WIN_AT] = 0;
    ri[o + R_WIN] = (win & LOGS_WRITES) | COMPACT | NO_WINDOW;
    this.compacted++;
    return true;
  }

  /**
   * A compact resource whose highest write's record was held by something else too (the
   * operation index) when it shrank, once nothing else holds it: its summary record made again,
   * with the write in it.
   */
  repack(id: number): void {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI;
    if ((ri[o + R_WIN]! & COMPACT) === 0) return;
    const r = ri[o + R_HIGHEST]!;
    if (r < 0 || Number.isNaN(this.epoch) || !this.events.packable(r)) return;
    // The write's token goes in after the first number, the rest of it at the end; between them, the same bytes.
    const h = ri[o + R_NEWEST]!;
    const src = this.blobs.page(h);
    const from = this.blobs.at(h);
    const end = from + 2 + (src[from]! | (src[from + 1]! << 8));
    const rd = this.reader.at(src, from + 2);
    const head = rd.u();
    const w = this.writer;
    w.reset(2);
    w.u(head | HAS_RECORD);
    w.num(this.events.tokenKey(r), 0);
    const rest = rd.pos;
    // The newest lease's grant time and line: its first two numbers (from the bases resetBases() sets).
    let ts = this.epoch;
    let line = 0;
    if (head >> 2 >= 3) {
      if ((head >> 2) % 3 === 1) rd.u();
      ts = rd.num(this.epoch);
      line = rd.num(0);
    }
    w.bytes(src, rest, end - rest);
    this.events.pack(r, w, ts, line, (head & RECORD_LEASE) !== 0 ? this.events.leaseText(r) : -1);
    if (w.full) return;
    w.buf[0] = (w.pos - 2) & 0xff;
    w.buf[1] = (w.pos - 2) >> 8;
    const again = this.blobs.put(w.buf, w.pos, id, w.words);
    if (again === -1) return;
    // The new record first: freeing the old one may move it (and say so in R_NEWEST).
    ri[o + R_NEWEST] = again;
    this.blobs.free(h);
    this.events.drop(r);
    ri[o + R_HIGHEST] = PACKED;
    for (let k = 0; k < w.taken; k++) this.texts.free(w.takenAt(k));
  }

  /** A lease's numbers into the writer (false for a lease a summary record does not keep). */
  private writeLease(s: number): boolean {
    const f = this.lf[s >>> PAGE_BITS]!;
    const i = this.li[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const io = (s & PAGE_MASK) * LI;
    const b = i[io + L_BITS]!;
    const token = f[fo + L_TOKEN]!;
    // Lines above 2^31 are negative here (kept beside, by slot).
    if ((b & GRANT_OPERATION) !== 0 || token === BIG || i[io + L_GRANT_LINE]! < 0 || i[io + L_RENEW_LINE]! < 0) return false;
    if ((b & (ENDED | END_RECORD)) === ENDED && i[io + L_END_LINE]! < 0) return false;
    const w = this.writer;
    const serial = f[fo + L_SERIAL]!;
    const grantTs = f[fo + L_GRANT_TS]!;
    const renewTs = f[fo + L_RENEW_TS]!;
    const ttl = f[fo + L_TTL]!;
    const grantLine = i[io + L_GRANT_LINE]!;
    // The grant's time and line first (repack() reads them).
    w.num(grantTs, this.baseTs);
    w.num(grantLine, this.baseLine);
    this.baseLine = grantLine;
    w.num(serial, this.baseSerial);
    w.num(renewTs, grantTs);
    w.num(ttl, this.baseTtl);
    w.num(token, this.baseToken);
    this.baseSerial = serial;
    this.baseTs = grantTs;
    if (!Number.isNaN(ttl)) this.baseTtl = ttl;
    if (!Number.isNaN(token)) this.baseToken = token;
    w.u(swap67(b ^ USUAL_BITS));
    w.u(i[io + L_GRANT_ORIGIN]!);
    w.u(i[io + L_RENEW_ORIGIN]! + 1);
    this.texts.pack(i[io + L_LEASE_ID]!, w, -1);
    w.u(i[io + L_OWNER]! + 1);
    w.num(i[io + L_RENEW_LINE]!, grantLine);
    if ((b & ENDED) !== 0) {
      if ((b & END_RECORD) !== 0) w.u(i[io + L_END]!);
      else {
        w.u(i[io + L_END]! ^ USUAL_END);
        w.num(f[fo + L_END_TS]!, renewTs);
        w.u(i[io + L_END_ORIGIN]!);
        w.num(i[io + L_END_LINE]!, grantLine);
      }
    }
    if ((b & GRANT_TTL_KEPT) !== 0) {
      const g = this.grantTtls.get(s);
      w.num(g === undefined ? NONE : g, 0);
    }
    return true;
  }

  /** Let a slot go whose references a summary record now holds. */
  private dropSlot(s: number): void {
    this.leaseEpoch++;
    const i = this.li[s >>> PAGE_BITS]!;
    const io = (s & PAGE_MASK) * LI;
    if ((i[io + L_BITS]! & GRANT_TTL_KEPT) !== 0) this.grantTtls.delete(s);
    i[io + L_BITS] = 0;
    this.lf[s >>> PAGE_BITS]![(s & PAGE_MASK) * LF + L_SERIAL] = 0;
    i[io + L_OLDER] = this.leaseFree;
    this.leaseFree = s;
  }

  /** The state compact() shrank, rebuilt from its summary record (which is let go). */
  private inflate(id: number): void {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI;
    const h = ri[o + R_NEWEST]!;
    const blobs = this.blobs;
    const r = this.reader.at(blobs.page(h), blobs.at(h) + 2);
    const head = r.u();
    const n = Math.floor((head >> 2) / 3);
    const mode = (head >> 2) % 3;
    const record = (head & HAS_RECORD) !== 0;
    const token = record ? r.num(0) : NONE;
    const hgAt = mode === 1 ? r.u() : -1;
    this.resetBases();
    let first = -1;
    let prev = -1;
    let hg = -1;
    for (let k = 0; k < n; k++) {
      const s = this.readLease(r);
      if (prev === -1) first = s;
      else this.li[prev >>> PAGE_BITS]![(prev & PAGE_MASK) * LI + L_OLDER] = s;
      prev = s;
      if (k === hgAt) hg = s;
    }
    if (mode === 2) hg = this.readLease(r);
    ri[o + R_NEWEST] = first;
    ri[o + R_HIGHEST_GRANTED] = hg;
    const wn = r.u();
    if (wn === 0) ri[o + R_WIN] = (ri[o + R_WIN]! & LOGS_WRITES) | NO_WINDOW;
    else {
      const next = r.u();
      let c = 0;
      while (1 << c < wn) c++;
      const at = this.winAlloc(c);
      const pool = this.winPools[c]![at >>> WIN_PAGE_BITS]!;
      const po = at & WIN_PAGE_MASK;
      let t = 0;
      for (let k = 0; k < wn; k++) pool[po + k] = t = r.num(t);
      ri[o + R_WIN_AT] = at;
      this.setWindow(id, c, wn, next);
    }
    if (record) ri[o + R_HIGHEST] = this.events.unpack(r, id, token, first !== -1 ? this.grantTs(first) : this.epoch, first !== -1 ? this.grantLine(first) : 0, (head & RECORD_LEASE) !== 0 ? this.leaseText(first) : -1);
    blobs.free(h);
    this.compacted--;
  }

  /** A lease from the reader, in a new slot (its older link -1). */
  private readLease(r: ByteReader): number {
    const s = this.allocLease();
    const f = this.lf[s >>> PAGE_BITS]!;
    const i = this.li[s >>> PAGE_BITS]!;
    const fo = (s & PAGE_MASK) * LF;
    const io = (s & PAGE_MASK) * LI;
    const grantTs = r.num(this.baseTs);
    const grantLine = r.num(this.baseLine);
    this.baseLine = grantLine;
    const serial = r.num(this.baseSerial);
    const renewTs = r.num(grantTs);
    const ttl = r.num(this.baseTtl);
    const token = r.num(this.baseToken);
    this.baseSerial = serial;
    this.baseTs = grantTs;
    if (!Number.isNaN(ttl)) this.baseTtl = ttl;
    if (!Number.isNaN(token)) this.baseToken = token;
    f[fo + L_SERIAL] = serial;
    f[fo + L_GRANT_TS] = grantTs;
    f[fo + L_RENEW_TS] = renewTs;
    f[fo + L_TTL] = ttl;
    f[fo + L_TOKEN] = token;
    const b = swap67(r.u()) ^ USUAL_BITS;
    i[io + L_BITS] = b;
    i[io + L_GRANT_ORIGIN] = r.u();
    i[io + L_RENEW_ORIGIN] = r.u() - 1;
    i[io + L_LEASE_ID] = this.texts.unpack(r, -1);
    i[io + L_OWNER] = r.u() - 1;
    i[io + L_GRANT_LINE] = grantLine;
    i[io + L_RENEW_LINE] = r.num(grantLine);
    i[io + L_OLDER] = -1;
    if ((b & ENDED) !== 0) {
      if ((b & END_RECORD) === 0) {
        i[io + L_END] = r.u() ^ USUAL_END;
        f[fo + L_END_TS] = r.num(renewTs);
        i[io + L_END_ORIGIN] = r.u();
        i[io + L_END_LINE] = r.num(grantLine);
      } else {
        i[io + L_END] = r.u();
        f[fo + L_END_TS] = 0;
        i[io + L_END_ORIGIN] = 0;
        i[io + L_END_LINE] = 0;
      }
    } else {
      f[fo + L_END_TS] = 0;
      i[io + L_END] = 0;
      i[io + L_END_ORIGIN] = 0;
      i[io + L_END_LINE] = 0;
    }
    if ((b & GRANT_TTL_KEPT) !== 0) {
      const g = r.num(0);
      this.grantTtls.set(s, Number.isNaN(g) ? undefined : g);
    }
    return s;
  }

  // --- Granted windows -------------------------------------------------------------------------

  private winAlloc(c: number): number {
    const free = this.winFree[c]!;
    if (free.length > 0) return free.pop()!;
    const at = this.winSizes[c]!;
    this.winSizes[c] = at + (1 << c);
    const pages = this.winPools[c]!;
    if (at >>> WIN_PAGE_BITS >= pages.length) pages.push(new Float64Array(1 << WIN_PAGE_BITS));
    return at;
  }

  private setWindow(id: number, c: number, n: number, next: number): void {
    const ri = this.ri[id >>> PAGE_BITS]!;
    const o = (id & PAGE_MASK) * RI + R_WIN;
    ri[o] = (ri[o]! & LOGS_WRITES) | c | (n << 8) | (next << 16);
  }

  /** Add a granted token to the window, unless it is there already. */
  rememberGrant(id: number, token: bigint): void {
    this.ensure(id);
    const w = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]!;
    const c = w & 0xff;
    const n = (w >> 8) & 0xff;
    const key = tokenKey(token);
    if (c === OBJECT_WINDOW || (key === BIG && c !== NO_WINDOW)) {
      this.rememberInObject(id, c, n, (w >> 16) & 0xff, token);
      return;
    }
    if (c === NO_WINDOW) {
      if (key === BIG) {
        this.objectWindows.set(id, [token]);
        this.setWindow(id, OBJECT_WINDOW, 1, 0);
        return;
      }
      const at = this.winAlloc(0);
      this.winPools[0]![at >>> WIN_PAGE_BITS]![at & WIN_PAGE_MASK] = key;
      this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT] = at;
      this.setWindow(id, 0, 1, 0);
      return;
    }
    const at = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT]!;
    const pool = this.winPools[c]![at >>> WIN_PAGE_BITS]!;
    const o = at & WIN_PAGE_MASK;
    for (let i = 0; i < n; i++) if (pool[o + i] === key) return;
    if (n < GRANTED_WINDOW) {
      if (n < 1 << c) {
        pool[o + n] = key;
        this.setWindow(id, c, n + 1, 0);
      } else {
        // Full: into a block of the next class.
        const next = this.winAlloc(c + 1);
        const to = this.winPools[c + 1]![next >>> WIN_PAGE_BITS]!;
        const t = next & WIN_PAGE_MASK;
        for (let i = 0; i < n; i++) to[t + i] = pool[o + i]!;
        to[t + n] = key;
        this.winFree[c]!.push(at);
        this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT] = next;
        this.setWindow(id, c + 1, n + 1, 0);
      }
    } else {
      // The window is full: replace the oldest.
      const next = (w >> 16) & 0xff;
      pool[o + next] = key;
      this.setWindow(id, c, n, (next + 1) % n);
    }
  }

  /** A window that holds (or is about to hold) a token that is not exact as a double: an array of numbers and BigInts. */
  private rememberInObject(id: number, c: number, n: number, next: number, token: bigint): void {
    let g = this.objectWindows.get(id);
    if (g === undefined) {
      // From the typed block, as numbers.
      const at = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT]!;
      const pool = this.winPools[c]![at >>> WIN_PAGE_BITS]!;
      const o = at & WIN_PAGE_MASK;
      g = [];
      for (let i = 0; i < n; i++) g.push(pool[o + i]!);
      this.winFree[c]!.push(at);
      this.objectWindows.set(id, g);
    }
    const key = windowKey(token);
    for (let i = 0; i < n; i++) if (g[i] === key) {
      this.setWindow(id, OBJECT_WINDOW, n, next);
      return;
    }
    if (n < GRANTED_WINDOW) {
      g.push(key);
      this.setWindow(id, OBJECT_WINDOW, n + 1, next);
    } else {
      g[next] = key;
      this.setWindow(id, OBJECT_WINDOW, n, (next + 1) % n);
    }
  }

  /** Was this token granted on this resource, as far as the remembered window tells? */
  grantStatus(id: number, token: bigint): 'granted' | 'never' | 'unknown' {
    this.ensure(id);
    const w = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]!;
    const c = w & 0xff;
    if (c === NO_WINDOW) return 'unknown';
    const n = (w >> 8) & 0xff;
    const highest = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_HIGHEST_GRANTED]!;
    if (c === OBJECT_WINDOW) {
      const g = this.objectWindows.get(id)!;
      const key = windowKey(token);
      for (let i = 0; i < n; i++) if (g[i] === key) return 'granted';
      if (token > this.leaseToken(highest)!) return 'never';
      let min = g[0]!;
      for (let i = 1; i < n; i++) if (g[i]! < min) min = g[i]!;
      return token > min ? 'never' : 'unknown';
    }
    const at = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT]!;
    const pool = this.winPools[c]![at >>> WIN_PAGE_BITS]!;
    const o = at & WIN_PAGE_MASK;
    const key = tokenKey(token);
    if (key !== BIG) for (let i = 0; i < n; i++) if (pool[o + i] === key) return 'granted';
    // Every token of a typed window is exact as a double, and so is the highest granted.
    const h = this.lf[highest >>> PAGE_BITS]![(highest & PAGE_MASK) * LF + L_TOKEN]!;
    if (key === BIG ? token > 0n : key > h) return 'never';
    let min = pool[o]!;
    for (let i = 1; i < n; i++) if (pool[o + i]! < min) min = pool[o + i]!;
    return key === BIG ? 'unknown' : key > min ? 'never' : 'unknown';
  }

  /** The window as it was kept before the store: undefined, the one token, or the tokens (numbers up to 2^53 - 1, else BigInts). */
  grantedTokens(id: number): (number | bigint)[] | bigint | undefined {
    this.ensure(id);
    const w = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN]!;
    const c = w & 0xff;
    if (c === NO_WINDOW) return undefined;
    const n = (w >> 8) & 0xff;
    let out: (number | bigint)[];
    if (c === OBJECT_WINDOW) out = this.objectWindows.get(id)!.slice();
    else {
      out = [];
      const at = this.ri[id >>> PAGE_BITS]![(id & PAGE_MASK) * RI + R_WIN_AT]!;
      for (let i = 0; i < n; i++) out.push(this.winPools[c]![at >>> WIN_PAGE_BITS]![(at & WIN_PAGE_MASK) + i]!);
    }
    if (n === 1) return typeof out[0] === 'bigint' ? out[0] : BigInt(out[0]!);
    return out;
  }
}

/** A token as the object window keeps it: a number when exact, else the BigInt. */
function windowKey(token: bigint): number | bigint {
  const k = tokenKey(token);
  return k === BIG ? token : k;
}

/**
 * One lease on a resource: a view of its slot in the store, made when asked for. Two views of one
 * lease are two objects: compare leases by `id`. Valid while the timeline keeps the lease (it keeps
 * the live ones and the MAX_ENDED most recent ended ones, MAX_LEASES at most, and its highest
 * granted): do not hold one across events.
 */
/** A Lease view used after its slot was let go or given to another lease (held across events). */
export class StaleLeaseViewError extends Error {
  constructor(resource: string, id: number) {
    super(`a Lease view of resource ${JSON.stringify(resource)} (lease #${id}) was used after the event it was made for: keep Lease.id across events and ask the timeline again`);
    this.name = 'StaleLeaseViewError';
  }
}

export class Lease {
  /** Unique in the run: the same lease has the same id in every view of it. */
  readonly id: number;

  constructor(
    private readonly store: TimelineStore,
    /** The lease's slot in the store. */
    readonly slot: number,
    /** The resource's id in the store (its name is built when an event or an error needs it). */
    private readonly resourceId: number,
  ) {
    this.id = store.serial(slot);
  }

  private get resource(): string {
    return this.store.name(this.resourceId);
  }

  /**
   * The slot, while it still holds this lease. A view held past the event it was made for may
   * find its slot let go or holding another lease (summary records move leases): that is an
   * error of the caller, said as one, never another lease's data read in silence.
   */
  private at(): number {
    if (this.store.serial(this.slot) !== this.id) throw new StaleLeaseViewError(this.resource, this.id);
    return this.slot;
  }

  get leaseId(): string | undefined {
    return this.store.leaseId(this.at());
  }

  get ownerId(): string | undefined {
    return this.store.ownerId(this.at());
  }

  get fenceToken(): bigint | undefined {
    return this.store.leaseToken(this.at());
  }

  /** When the lease was granted. */
  get grantTs(): number {
    return this.store.grantTs(this.at());
  }

  /** The lease's ttl (the last one logged, by the grant or a renewal). */
  get ttlMs(): number | undefined {
    const t = this.store.ttl(this.at());
    return Number.isNaN(t) ? undefined : t;
  }

  /** Time of the grant or the last successful keepalive. */
  get renewTs(): number {
    return this.store.renewTs(this.at());
  }

  /** The event that ended the lease, when one was logged. */
  get end(): LockEvent | undefined {
    return this.store.endEvent(this.at(), this.resource);
  }

  /** Whether an end was logged. */
  get ended(): boolean {
    return this.store.hasEnded(this.at());
  }

  /** How the lease ended, when an end was logged: the end event's type, or 'released-by-old-handle'. */
  get endKind(): LeaseEnd | undefined {
    return this.store.endKind(this.at());
  }

  /** The grant as an event (for evidence). */
  get grant(): LockEvent {
    return this.store.grantEvent(this.at(), this.resource);
  }

  /** The grant, or the last successful keepalive rebuilt as an event (for evidence). */
  get lastRenew(): LockEvent {
    return this.store.lastRenewEvent(this.at(), this.resource);
  }

  /** Whether the last renewal was a keepalive (not the grant itself). */
  get renewedSinceGrant(): boolean {
    return this.store.renewed(this.at());
  }

  /** The lease granted before this one on the resource, when the timeline keeps it. */
  get older(): Lease | undefined {
    const o = this.store.older(this.at());
    return o === -1 ? undefined : new Lease(this.store, o, this.resourceId);
  }

  /**
   * When the lease ended or ends: its logged end, else last renewal + ttl (inferred), else
   * undefined (no end logged and no ttl known).
   */
  endsAt(): number | undefined {
    const s = this.store;
    const slot = this.at();
    const ttl = s.ttl(slot);
    if (s.hasEnded(slot)) {
      const t = s.endTime(slot);
      // An expiry that names no lease, logged after the ttl ran out, is a later view of the ttl's
      // end (a Redis keyspace notification; see ResourceTimeline.expiringSlot). One that names the
      // lease is the authority's own word on it (a ZooKeeper session): it stands.
      return !Number.isNaN(ttl) && s.endKind(slot) === 'expire' && !s.endHasHandle(slot) ? Math.min(t, s.renewTs(slot) + ttl) : t;
    }
    return Number.isNaN(ttl) ? undefined : s.renewTs(slot) + ttl;
  }

  /** Not ended by a logged event, and not past its ttl since the last renewal. */
  liveAt(t: number): boolean {
    return this.store.liveAt(this.at(), t);
  }
}

/**
 * One resource's state: a view of the store (the engine re-points one view per event; `engine.timeline()`
 * makes one). `new ResourceTimeline(resource)` makes a resource in a store of its own.
 */
export class ResourceTimeline {
  readonly store: TimelineStore;
  /** The resource's id in the store. */
  id: number;

  constructor(resource: string);
  constructor(store: TimelineStore, id: number);
  constructor(a: string | TimelineStore, id = 0) {
    if (typeof a === 'string') {
      this.store = new TimelineStore();
      this.id = this.store.add(a);
    } else {
      this.store = a;
      this.id = id;
    }
  }

  get resource(): string {
    return this.store.name(this.id);
  }

  /** The most recently granted lease; older ones follow `older`. At most MAX_LEASES in all. */
  get newest(): Lease | undefined {
    const s = this.store.newest(this.id);
    return s === -1 ? undefined : this.lease(s);
  }

  /** The write that set the highest token the resource accepted (its fenceToken is that token). */
  get highest(): LockEvent | undefined {
    const r = this.store.highest(this.id);
    return r === -1 ? undefined : this.store.events.event(r);
  }

  /** The highest accepted token as a double (BIG when it is not exact as one, NONE for none). */
  get highestTokenKey(): number {
    return this.store.highestKey(this.id);
  }

  /** The highest token the resource accepted. */
  get highestToken(): bigint | undefined {
    const key = this.store.highestKey(this.id);
    // A summary record keeps only tokens exact as doubles: a BIG one is in the record.
    return Number.isNaN(key) ? undefined : key === BIG ? this.store.events.fenceToken(this.store.highest(this.id)) : tokenOfKey(key);
  }

  /** The lease of the highest token the authority granted (its fenceToken is that token). */
  get highestGranted(): Lease | undefined {
    const s = this.store.highestGranted(this.id);
    return s === -1 ? undefined : this.lease(s);
  }

  /**
   * The last GRANTED_WINDOW distinct granted tokens: undefined, the one token while only one was
   * granted, else the tokens (numbers when exact, else BigInts). A copy, for inspection.
   */
  get grantedTokens(): (number | bigint)[] | bigint | undefined {
    return this.store.grantedTokens(this.id);
  }

  /** The resource itself logs its write decisions (some write has observer "resource"). */
  get resourceLogsWrites(): boolean {
    return this.store.logsWrites(this.id);
  }

  get events(): number {
    return this.store.count(this.id, C_EVENTS);
  }
  get accepted(): number {
    return this.store.count(this.id, C_ACCEPTED);
  }
  get rejectedStaleFence(): number {
    return this.store.count(this.id, C_REJECTED_STALE);
  }
  get rejectedOther(): number {
    return this.store.count(this.id, C_REJECTED_OTHER);
  }
  get withoutToken(): number {
    return this.store.count(this.id, C_WITHOUT_TOKEN);
  }
  /** Findings made on the resource (counted by the engine). */
  get findings(): number {
    return this.store.count(this.id, C_FINDINGS);
  }
  set findings(n: number) {
    this.store.setCount(this.id, C_FINDINGS, n);
  }

  /** The rarely used facts, when one has happened (see RareFacts; read through the getters below). */
  get rare(): RareFacts | undefined {
    return this.store.rare.get(this.id);
  }

  /** The rarely used facts, allocated on first use. */
  rareFacts(): RareFacts {
    let r = this.store.rare.get(this.id);
    if (r === undefined) {
      r = {
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
      };
      this.store.rare.set(this.id, r);
    }
    return r;
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

  private lease(s: number): Lease {
    return new Lease(this.store, s, this.id);
  }

  /** The leases kept, oldest first (a copy, for inspection). */
  get leases(): Lease[] {
    const out: Lease[] = [];
    for (let s = this.store.newest(this.id); s !== -1; s = this.store.older(s)) out.unshift(this.lease(s));
    return out;
  }

  /** The current holder at time t: the most recently granted lease live at t (other than those `skip` names). */
  holder(t: number, skip?: (lease: Lease) => boolean): Lease | undefined {
    const s = this.holderSlot(t, skip);
    return s === -1 ? undefined : this.lease(s);
  }

  private holderSlot(t: number, skip?: (lease: Lease) => boolean): number {
    const store = this.store;
    for (let s = store.newest(this.id); s !== -1; s = store.older(s)) if (store.liveAt(s, t) && (skip === undefined || !skip(this.lease(s)))) return s;
    return -1;
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
  private expiringSlot(t: number): number {
    const store = this.store;
    let due = -1;
    let dueAt = Infinity;
    for (let l = store.newest(this.id); l !== -1; l = store.older(l)) {
      if (store.hasEnded(l)) continue;
      const ttl = store.ttl(l);
      if (Number.isNaN(ttl) || !store.liveAt(l, t)) return l;
      const at = store.renewTs(l) + ttl;
      if (due === -1 || at < dueAt) {
        due = l;
        dueAt = at;
      }
    }
    return due;
  }


  /** Whether a granted acquire only renews a live lease (the same grant logged again) rather than starting one. */
  renewsLease(grant: LockEvent): boolean {
    if (grant.leaseId === undefined) return false;
    const s = this.findSlot(grant);
    return s !== -1 && !this.store.hasEnded(s) && this.store.sameToken(s, grant.fenceToken);
  }

  /** The leases an expire, revoke or release will end when it is applied, with how (none for other events). */
  endingsOf(ev: LockEvent): { lease: Lease; kind: LeaseEnd }[] {
    const out: { lease: Lease; kind: LeaseEnd }[] = [];
    switch (ev.type) {
      case 'expire':
      case 'revoke': {
        const s = this.expirySlot(ev);
        if (s !== -1) out.push({ lease: this.lease(s), kind: ev.type });
        break;
      }
      case 'release':
        if (ev.result === 'released') {
          const victim = this.oldHandleSlot(ev);
          if (victim !== -1) out.push({ lease: this.lease(victim), kind: 'released-by-old-handle' });
          const own = this.ownReleaseSlot(ev, victim);
          if (own !== -1) out.push({ lease: this.lease(own), kind: 'release' });
        }
        break;
    }
    return out;
  }

  /** The lease an expire or revoke ends (-1 for none). */
  private expirySlot(ev: LockEvent): number {
    const s = this.findSlot(ev);
    const l = s !== -1 ? s : hasHandle(ev) ? -1 : ev.type === 'expire' ? this.expiringSlot(ev.ts) : this.holderSlot(ev.ts);
    return l !== -1 && !this.store.hasEnded(l) ? l : -1;
  }

  /** The releaser's own lease a successful release ends, other than the old-handle victim (-1 for none). */
  private ownReleaseSlot(ev: LockEvent, victim: number): number {
    const own = this.findSlot(ev);
    return own !== -1 && !this.store.hasEnded(own) && own !== victim ? own : -1;
  }

  /** The lease an event refers to: by leaseId, else by fenceToken, else the owner's latest lease. */
  findLease(ev: Handle): Lease | undefined {
    const s = this.findSlot(ev);
    if (s === -1) return undefined;
    // Several rules ask for the same event's lease: they share one view (views read the store live).
    const memo = this.store.slotMemo;
    if (memo.view === undefined || memo.view.slot !== s || memo.viewEpoch !== this.store.leaseEpoch) {
      memo.view = this.lease(s);
      memo.viewEpoch = this.store.leaseEpoch;
    }
    return memo.view;
  }

  private findSlot(ev: Handle): number {
    // The rules and apply() ask for the same event's lease several times in a row: the last
    // answer stands while no lease was added to or taken out of a list (events never change).
    const store = this.store;
    const memo = store.slotMemo;
    if (memo.event === ev && memo.id === this.id && memo.epoch === store.leaseEpoch) return memo.slot;
    const s = this.searchSlot(ev);
    memo.event = ev;
    memo.id = this.id;
    memo.epoch = store.leaseEpoch;
    memo.slot = s;
    return s;
  }

  private searchSlot(ev: Handle): number {
    const { leaseId, fenceToken, ownerId } = ev;
    const store = this.store;
    const first = store.newest(this.id);
    if (leaseId !== undefined) {
      for (let s = first; s !== -1; s = store.older(s)) if (store.leaseIdIs(s, leaseId)) return s;
      return -1;
    }
    if (fenceToken !== undefined) {
      const key = tokenKey(fenceToken);
      for (let s = first; s !== -1; s = store.older(s)) if (store.tokenKey(s) === key && (key !== BIG || store.leaseToken(s) === fenceToken)) return s;
      return -1;
    }
    if (ownerId !== undefined) {
      for (let s = first; s !== -1; s = store.older(s)) if (store.ownerId(s) === ownerId) return s;
    }
    return -1;
  }

  /** Whether a write counts as the resource's own decision (see README "Observers"). */
  isDecision(write: LockEvent): boolean {
    return write.observer !== 'worker' || !this.store.logsWrites(this.id);
  }

  staleness(write: LockEvent): Staleness {
    const token = write.fenceToken;
    if (token === undefined) return 'untokened';
    const h = this.store.highest(this.id);
    if (h === -1) return 'fresh';
    const events = this.store.events;
    const hk = events.tokenKey(h);
    const key = tokenKey(token);
    if (hk !== BIG && key !== BIG) {
      if (key > hk) return 'fresh';
      if (key < hk) return 'stale';
    } else {
      const ht = events.fenceToken(h)!;
      if (token > ht) return 'fresh';
      if (token < ht) return 'stale';
    }
    // Equal tokens: the token cannot tell the holders apart, so compare the lease, else the owner.
    const hOwner = events.ownerId(h);
    let same: boolean | undefined;
    if (write.leaseId !== undefined && events.hasLeaseId(h)) same = events.leaseIdIs(h, write.leaseId);
    else if (write.ownerId !== undefined && hOwner !== undefined) same = write.ownerId === hOwner;
    return same === false ? 'equal-other-handle' : 'equal-same-handle';
  }

  /**
   * A release from an old handle: its own lease is not live (ended, expired by ttl, or unknown)
   * and another lease holds the resource. Returns the holder it would remove.
   */
  isOldHandleRelease(release: LockEvent): Lease | undefined {
    const s = this.oldHandleSlot(release);
    return s === -1 ? undefined : this.lease(s);
  }

  private oldHandleSlot(release: LockEvent): number {
    const holder = this.holderSlot(release.ts);
    if (holder === -1 || this.sameHandleAs(release, holder) !== false) return -1;
    const own = this.findSlot(release);
    if (own !== -1 && own !== holder && this.store.liveAt(own, release.ts)) return -1;
    return holder;
  }

  /** sameHandle() of an event and a lease. */
  private sameHandleAs(a: Handle, s: number): boolean | undefined {
    const store = this.store;
    if (a.leaseId !== undefined && store.hasLeaseId(s)) return store.leaseIdIs(s, a.leaseId);
    if (a.fenceToken !== undefined && !Number.isNaN(store.tokenKey(s))) return store.sameToken(s, a.fenceToken);
    const ownerId = store.ownerId(s);
    if (a.ownerId !== undefined && ownerId !== undefined) return a.ownerId === ownerId;
    return undefined;
  }

  /** Was this token granted on this resource, as far as the remembered window tells? */
  grantStatus(token: bigint): 'granted' | 'never' | 'unknown' {
    return this.store.grantStatus(this.id, token);
  }

  /** Fold an event into the state. Called after the rules have seen it. */
  apply(ev: LockEvent): void {
    const store = this.store;
    store.bump(this.id, C_EVENTS);
    switch (ev.type) {
      case 'acquire':
        if (ev.result === 'granted') this.grant(ev);
        break;
      case 'keepalive': {
        const s = this.findSlot(ev);
        if (s !== -1 && ev.result === 'ok' && !store.hasEnded(s)) store.renew(s, ev);
        break;
      }
      case 'expire':
      case 'revoke': {
        const s = this.expirySlot(ev);
        if (s !== -1) store.endLease(s, this.id, ev, ev.type);
        break;
      }
      case 'release': {
        const victim = this.oldHandleSlot(ev);
        if (victim !== -1) {
          const rare = this.rareFacts();
          rare.oldHandleReleases++;
          if (ev.result === 'released') rare.oldHandleReleasesSucceeded++;
        }
        if (ev.result === 'released') {
          // The own lease is judged before the victim is ended (as endingsOf() tells them).
          const own = this.ownReleaseSlot(ev, victim);
          if (victim !== -1) store.endLease(victim, this.id, ev, 'released-by-old-handle');
          if (own !== -1) store.endLease(own, this.id, ev, 'release');
        }
        break;
      }
      case 'write':
        this.write(ev);
        break;
    }
  }

  private grant(ev: LockEvent): void {
    const store = this.store;
    const id = this.id;
    const token = ev.fenceToken;
    // The grant of a new highest token always starts a new lease (a grant logged again has its lease's token).
    let highest = false;
    if (token !== undefined) {
      const hg = store.highestGranted(id);
      highest = hg === -1 || token > store.leaseToken(hg)!;
      store.rememberGrant(id, token);
    }
    if (this.renewsLease(ev)) {
      store.renew(this.findSlot(ev), ev);
      return;
    }
    const lease = store.newLease(id, ev);
    if (highest) store.setHighestGranted(id, lease);
    // Keep every live lease and the MAX_ENDED most recent ended ones, the newest MAX_LEASES at most.
    let ended = 0;
    let count = 1;
    let prev = lease;
    for (let l = store.older(lease); l !== -1; ) {
      const next = store.older(l);
      if (count >= MAX_LEASES || (store.hasEnded(l) && ++ended > MAX_ENDED)) store.unlistAfter(prev, l);
      else {
        count++;
        prev = l;
      }
      l = next;
    }
  }

  private write(ev: LockEvent): void {
    const store = this.store;
    const id = this.id;
    if (ev.observer === 'resource') store.setLogsWrites(id);
    if (!this.isDecision(ev)) return;
    const staleness = this.staleness(ev);
    const stale = staleness === 'stale' || staleness === 'equal-other-handle';
    const rare = stale ? this.rareFacts() : undefined;
    if (rare !== undefined) rare.staleWrites++;
    switch (ev.result) {
      case 'accepted':
        store.bump(id, C_ACCEPTED);
        if (staleness === 'untokened') store.bump(id, C_WITHOUT_TOKEN);
        else if (rare !== undefined) {
          rare.staleWritesAccepted++;
          rare.firstAcceptedStale ??= { token: ev.fenceToken, highest: this.highestToken };
        } else if (staleness === 'fresh') {
          const s = this.findSlot(ev);
          const events = store.events;
          const old = store.highest(id);
          store.setHighest(id, events.put(ev, id, s === -1 ? undefined : { leaseText: store.leaseText(s) }));
          if (old !== -1) events.free(old);
        }
        break;
      case 'rejected-stale-fence':
        store.bump(id, C_REJECTED_STALE);
        if (rare !== undefined) rare.staleWritesExplicit++;
        break;
      default:
        store.bump(id, C_REJECTED_OTHER);
        if (rare !== undefined) {
          rare.firstNotExplicit ??= { token: ev.fenceToken, highest: this.highestToken, result: ev.result };
          (rare.notExplicitResults ??= new Set()).add(keptString(ev.result, false));
        }
        break;
    }
  }
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
