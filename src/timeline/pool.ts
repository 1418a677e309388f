/**
 * Compact storage for per-resource state: kept events as records in typed arrays (no object per
 * kept event), tokens as doubles beside an exact side table, the (file, source) pairs events come
 * from as reference-counted ids. State holds small integers into these; a record is built into a
 * LockEvent only when a rule or a finding asks for it (as evidence, rarely).
 */
import { EVENT_TYPES, OBSERVERS, keptDisplay, keptString, type EventType, type LockEvent, type Observer } from '../model/event.js';

/** A typed array `a` with room for index `need`, grown by half again (new slots filled with `fill`). */
export function grownF64(a: Float64Array<ArrayBuffer>, need: number, fill = 0): Float64Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Float64Array(capacityFor(a.length, need));
  b.set(a);
  if (fill !== 0) b.fill(fill, a.length);
  return b;
}

export function grownI32(a: Int32Array<ArrayBuffer>, need: number, fill = 0): Int32Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Int32Array(capacityFor(a.length, need));
  b.set(a);
  if (fill !== 0) b.fill(fill, a.length);
  return b;
}

export function grownU32(a: Uint32Array<ArrayBuffer>, need: number): Uint32Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Uint32Array(capacityFor(a.length, need));
  b.set(a);
  return b;
}

export function grownU16(a: Uint16Array<ArrayBuffer>, need: number): Uint16Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Uint16Array(capacityFor(a.length, need));
  b.set(a);
  return b;
}

export function grownU8(a: Uint8Array<ArrayBuffer>, need: number): Uint8Array<ArrayBuffer> {
  if (need < a.length) return a;
  const b = new Uint8Array(capacityFor(a.length, need));
  b.set(a);
  return b;
}

/** Capacity for index `need`: half as much again as now (not double: a grown column is mostly used), at least 64. */
export function capacityFor(now: number, need: number): number {
  return Math.max(64, need + 1, Math.floor(now * 1.5));
}

// --- Tokens --------------------------------------------------------------------------------------

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);
/** A token kept as a double: the value when 0 ≤ token ≤ 2^53 - 1 (exact), else BIG (kept as a BigInt beside). */
export const BIG = -1;
/** No token. */
export const NONE = Number.NaN;

/** The double a token is kept as (BIG when it is not exact as one; NONE when there is none). */
export function tokenKey(token: bigint | undefined): number {
  if (token === undefined) return NONE;
  return token >= 0n && token <= MAX_EXACT ? Number(token) : BIG;
}

const SMALL = 1024;
const smallTokens: bigint[] = Array.from({ length: SMALL }, (_, i) => BigInt(i));

/** The token a double stands for (not BIG or NONE). */
export function tokenOfKey(key: number): bigint {
  return key < SMALL ? smallTokens[key]! : BigInt(key);
}

// --- Origins -------------------------------------------------------------------------------------

/**
 * The (file, source) pairs kept events and leases come from, as ids, each held by a count of the
 * records that name it: a run reads a few files and sources, so this holds a few pairs, and a log
 * that gives every line its own source holds only the pairs live state still names.
 */
export class Origins {
  private readonly byFile = new Map<string, Map<string, number>>();
  private files: string[] = [];
  private sources: string[] = [];
  private refs = new Int32Array(16);
  private free: number[] = [];
  private lastFile = '';
  private lastSource = '';
  private last = -1;

  /** The id of (file, source), counted once more. */
  ref(file: string, source: string): number {
    let id: number;
    if (this.last !== -1 && file === this.lastFile && source === this.lastSource) id = this.last;
    else {
      let bySource = this.byFile.get(file);
      if (bySource === undefined) this.byFile.set(file, (bySource = new Map()));
      const found = bySource.get(source);
      if (found !== undefined) id = found;
      else {
        id = this.free.length > 0 ? this.free.pop()! : this.files.length;
        // The file is the input's name; a source may be cut from a line (see detach()).
        const s = source === file ? file : keptString(source, false);
        this.files[id] = file;
        this.sources[id] = s;
        if (id >= this.refs.length) this.refs = grownI32(this.refs, id);
        this.refs[id] = 0;
        bySource.set(s, id);
      }
      this.lastFile = file;
      this.lastSource = source;
      this.last = id;
    }
    this.refs[id]!++;
    return id;
  }

  /** Counted once less; forgotten at none. */
  unref(id: number): void {
    if (--this.refs[id]! > 0) return;
    const file = this.files[id]!;
    const bySource = this.byFile.get(file)!;
    bySource.delete(this.sources[id]!);
    if (bySource.size === 0) this.byFile.delete(file);
    if (this.last === id) this.last = -1;
    this.files[id] = '';
    this.sources[id] = '';
    this.free.push(id);
  }

  file(id: number): string {
    return this.files[id]!;
  }

  source(id: number): string {
    return this.sources[id]!;
  }
}

// --- Event fields packed in a number -------------------------------------------------------------

/** Results by index (a kept result is one of these, else OTHER_RESULT with the string beside). */
const RESULT_LIST = ['granted', 'busy', 'ok', 'failed', 'released', 'rejected', 'expired', 'revoked', 'accepted', 'rejected-stale-fence', 'error', 'timeout'];
const RESULT_INDEX = new Map(RESULT_LIST.map((r, i) => [r, i]));
const OTHER = 15;

/**
 * type (bits 0-2, 7 for another), observer (bits 3-4, 3 for another), result (bits 5-8, 15 for
 * another): what `meta` holds. Values outside the canonical sets (events given as objects may
 * carry any) go to a side table.
 */
export function packMeta(type: string, observer: string, result: string): number {
  const t = EVENT_TYPES.indexOf(type as EventType);
  const o = OBSERVERS.indexOf(observer as Observer);
  const r = RESULT_INDEX.get(result);
  return (t < 0 ? 7 : t) | ((o < 0 ? 3 : o) << 3) | ((r === undefined ? OTHER : r) << 5);
}

/** Whether packMeta kept all three exactly. */
export function metaExact(meta: number): boolean {
  return (meta & 7) !== 7 && ((meta >> 3) & 3) !== 3 && ((meta >> 5) & 15) !== OTHER;
}

export function typeOf(meta: number): EventType {
  return EVENT_TYPES[meta & 7]!;
}

export function observerOf(meta: number): Observer {
  return OBSERVERS[(meta >> 3) & 3]!;
}

export function resultOf(meta: number): string {
  return RESULT_LIST[(meta >> 5) & 15]!;
}

// --- Kept events ---------------------------------------------------------------------------------

/** Values a kept event may share with state that holds the same ones (one string per resource, per lease). */
export interface SharedStrings {
  readonly resource: string;
  readonly leaseId?: string;
  readonly ownerId?: string;
}

/**
 * Kept events, one record each in typed arrays: what keep() would copy, field for field, and the
 * same LockEvent when built back (`event()`). Records are allocated and freed by the state that
 * holds them (a free list); `next` links records into short lists for their holder.
 */
export class EventPool {
  ts = new Float64Array(0);
  token = new Float64Array(0);
  ttl = new Float64Array(0);
  line = new Float64Array(0);
  offset = new Float64Array(0);
  bytes = new Int32Array(0);
  origin = new Int32Array(0);
  meta = new Uint16Array(0);
  /** A list link for the holder (views of an operation, pending writes), -1 at the end; the free list when free. */
  next = new Int32Array(0);
  /** Holders of each record (put() of the event just put again shares its record). */
  private refs = new Int32Array(0);
  /** Four strings a record: resource, ownerId, leaseId, operationId. */
  private strs: (string | undefined)[] = [];
  /** A kept write's text or display fields (undefined for most: by reference). */
  private extra: (string | Readonly<Record<string, unknown>> | undefined)[] = [];
  /** Tokens that are not exact as doubles, and events whose type, observer or result is not canonical. */
  private readonly bigs = new Map<number, bigint>();
  private readonly odd = new Map<number, { type: string; observer: string; result: string }>();
  private freeHead = -1;
  private size = 0;
  /** The event put last and its record: the same event kept twice in a row (by the operation index, then as the highest write) is one record. */
  private lastEvent: LockEvent | undefined;
  private lastRecord = -1;
  /** Records held. */
  live = 0;

  constructor(readonly origins: Origins = new Origins()) {}

  private grow(need: number): void {
    if (need < this.ts.length) return;
    this.ts = grownF64(this.ts, need);
    this.token = grownF64(this.token, need);
    this.ttl = grownF64(this.ttl, need);
    this.line = grownF64(this.line, need);
    this.offset = grownF64(this.offset, need);
    this.bytes = grownI32(this.bytes, need);
    this.origin = grownI32(this.origin, need);
    this.meta = grownU16(this.meta, need);
    this.next = grownI32(this.next, need);
    this.refs = grownI32(this.refs, need);
  }

  /** Keep a copy of `ev` (as keep() would make it); returns its record. */
  put(ev: LockEvent, shared?: SharedStrings): number {
    if (ev === this.lastEvent) {
      this.refs[this.lastRecord]!++;
      return this.lastRecord;
    }
    let r = this.freeHead;
    if (r !== -1) this.freeHead = this.next[r]!;
    else {
      r = this.size++;
      this.grow(r);
    }
    this.live++;
    this.refs[r] = 1;
    this.lastEvent = ev;
    this.lastRecord = r;
    this.ts[r] = ev.ts;
    const t = tokenKey(ev.fenceToken);
    this.token[r] = t;
    if (t === BIG) this.bigs.set(r, ev.fenceToken!);
    this.ttl[r] = ev.ttlMs === undefined ? NONE : ev.ttlMs;
    this.line[r] = ev.line;
    this.origin[r] = this.origins.ref(ev.file, ev.source);
    const meta = packMeta(ev.type, ev.observer, ev.result);
    this.meta[r] = meta;
    if (!metaExact(meta)) this.odd.set(r, { type: ev.type, observer: keptString(ev.observer, false), result: keptString(ev.result, false) });
    this.next[r] = -1;
    const d = keptDisplay(ev);
    this.offset[r] = d.offset === undefined ? NONE : d.offset;
    this.bytes[r] = d.bytes === undefined ? -1 : d.bytes;
    this.extra[r] = d.text ?? d.fields;
    // Strings of an event by reference that holds neither its line nor a record are its own (see keep()).
    const own = ev.offset !== undefined && ev.text === undefined && ev.record === undefined;
    const s = shared;
    const k = r * 4;
    const strs = this.strs;
    strs[k] = s !== undefined && s.resource === ev.resource ? s.resource : keptString(ev.resource, own);
    strs[k + 1] = s !== undefined && ev.ownerId !== undefined && s.ownerId === ev.ownerId ? s.ownerId : ev.ownerId === undefined ? undefined : keptString(ev.ownerId, own);
    strs[k + 2] = s !== undefined && ev.leaseId !== undefined && s.leaseId === ev.leaseId ? s.leaseId : ev.leaseId === undefined ? undefined : keptString(ev.leaseId, own);
    strs[k + 3] = ev.operationId === undefined ? undefined : keptString(ev.operationId, own);
    return r;
  }

  /** Let a record go (once its last holder does). */
  free(r: number): void {
    if (--this.refs[r]! > 0) return;
    if (r === this.lastRecord) {
      this.lastEvent = undefined;
      this.lastRecord = -1;
    }
    this.live--;
    this.origins.unref(this.origin[r]!);
    if (this.token[r] === BIG) this.bigs.delete(r);
    if (!metaExact(this.meta[r]!)) this.odd.delete(r);
    const k = r * 4;
    const strs = this.strs;
    strs[k] = strs[k + 1] = strs[k + 2] = strs[k + 3] = undefined;
    this.extra[r] = undefined;
    this.next[r] = this.freeHead;
    this.freeHead = r;
  }

  /** The record's token (undefined when none). */
  fenceToken(r: number): bigint | undefined {
    const t = this.token[r]!;
    return t === BIG ? this.bigs.get(r)! : Number.isNaN(t) ? undefined : tokenOfKey(t);
  }

  ownerId(r: number): string | undefined {
    return this.strs[r * 4 + 1];
  }

  leaseId(r: number): string | undefined {
    return this.strs[r * 4 + 2];
  }

  operationId(r: number): string | undefined {
    return this.strs[r * 4 + 3];
  }

  result(r: number): string {
    const m = this.meta[r]!;
    return ((m >> 5) & 15) === OTHER ? this.odd.get(r)!.result : resultOf(m);
  }

  source(r: number): string {
    return this.origins.source(this.origin[r]!);
  }

  /** The kept event, built (a new object each time: callers that compare events by identity keep one). */
  event(r: number): LockEvent {
    const m = this.meta[r]!;
    const odd = metaExact(m) ? undefined : this.odd.get(r);
    const k = r * 4;
    const strs = this.strs;
    const extra = this.extra[r];
    const ttl = this.ttl[r]!;
    const offset = this.offset[r]!;
    const o = this.origin[r]!;
    return {
      ts: this.ts[r]!,
      type: odd !== undefined && (m & 7) === 7 ? (odd.type as EventType) : typeOf(m),
      resource: strs[k]!,
      ownerId: strs[k + 1],
      leaseId: strs[k + 2],
      operationId: strs[k + 3],
      fenceToken: this.fenceToken(r),
      ttlMs: Number.isNaN(ttl) ? undefined : ttl,
      result: odd !== undefined && ((m >> 5) & 15) === OTHER ? odd.result : resultOf(m),
      observer: odd !== undefined && ((m >> 3) & 3) === 3 ? (odd.observer as Observer) : observerOf(m),
      source: this.origins.source(o),
      file: this.origins.file(o),
      line: this.line[r]!,
      record: undefined,
      text: typeof extra === 'string' ? extra : undefined,
      fields: typeof extra === 'object' ? extra : undefined,
      offset: Number.isNaN(offset) ? undefined : offset,
      bytes: this.bytes[r] === -1 ? undefined : this.bytes[r],
    };
  }
}
