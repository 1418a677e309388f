/**
 * Compact storage for per-resource state: kept events as records in typed arrays (no object per
 * kept event), tokens as doubles beside an exact side table, the (file, source) pairs events come
 * from as reference-counted ids. State holds small integers into these; a record is built into a
 * LockEvent only when a rule or a finding asks for it (as evidence, rarely).
 */
import { EVENT_TYPES, KeptEvent, OBSERVERS, keptDisplay, keptString, ownStrings, type EventType, type LockEvent, type Observer } from '../model/event.js';

/**
 * A typed array `a` with room for index `need`: the same array, or a copy of it twice as long (new
 * slots filled with `fill`). Doubling keeps the copies few; the part not used yet costs address
 * space, not memory, once an array is large (the allocator maps it, and the system gives a page only
 * when it is first written).
 */
export function grown<T extends Float64Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>>(a: T, need: number, fill = 0): T {
  if (need < a.length) return a;
  const b = new (a.constructor as new (length: number) => T)(capacityFor(a.length, need));
  (b as Float64Array<ArrayBuffer>).set(a);
  if (fill !== 0) b.fill(fill, a.length);
  return b;
}

/** Capacity for index `need`: twice as much as now, at least 256. */
function capacityFor(now: number, need: number): number {
  return Math.max(256, need + 1, now * 2);
}

// --- Pages ---------------------------------------------------------------------------------------

/**
 * The pools keep their numbers in pages of PAGE records (a record's numbers together, at a fixed
 * stride), added as a pool grows and never moved, copied or freed while the store lives: no copy
 * when a pool grows, and no unused capacity beyond the last page. (An array that doubles is
 * copied each time, the old one is memory until the collector frees it, and the C allocator
 * hands out and zeroes the unused half.)
 */
export const PAGE_BITS = 13;
export const PAGE = 1 << PAGE_BITS;
export const PAGE_MASK = PAGE - 1;

/** Pages of `stride` doubles per record, with room for record r (new numbers are `fill`). */
export function reserveF64(pages: Float64Array<ArrayBuffer>[], stride: number, r: number, fill = 0): void {
  while (r >>> PAGE_BITS >= pages.length) pages.push(fill === 0 ? new Float64Array(stride << PAGE_BITS) : new Float64Array(stride << PAGE_BITS).fill(fill));
}

export function reserveI32(pages: Int32Array<ArrayBuffer>[], stride: number, r: number): void {
  while (r >>> PAGE_BITS >= pages.length) pages.push(new Int32Array(stride << PAGE_BITS));
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

/** The token kept as `key` for `at`: undefined for NONE, from `bigs` for BIG. */
export function tokenAt(key: number, bigs: ReadonlyMap<number, bigint>, at: number): bigint | undefined {
  return key === BIG ? bigs.get(at)! : Number.isNaN(key) ? undefined : tokenOfKey(key);
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
        if (id >= this.refs.length) this.refs = grown(this.refs, id);
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

  /** Pairs held now. */
  get live(): number {
    return this.files.length - this.free.length;
  }

  source(id: number): string {
    return this.sources[id]!;
  }
}

// --- Hashing -------------------------------------------------------------------------------------

/** A 32-bit hash of a string's UTF-16 code units and a seed (FNV-1a, mixed). */
export function hashString(s: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h ^ (h >>> 15)) | 0;
}

// --- Shared strings ----------------------------------------------------------------------------

/**
 * Strings that many leases and records share (owners: a few workers hold every lease), as ids
 * held by a count of the records that name them: one string per distinct value, four bytes per
 * holder; a log that gives every lease its own owner holds only the owners live state names.
 */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private readonly strings: (string | undefined)[] = [];
  private refs = new Int32Array(16);
  private readonly free: number[] = [];

  /** The id of s, counted once more (-1 for undefined). `own`: the string is the event's own (see keptString). */
  ref(s: string | undefined, own = false): number {
    if (s === undefined) return -1;
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.free.length > 0 ? this.free.pop()! : this.strings.length;
      const kept = keptString(s, own);
      this.strings[id] = kept;
      this.ids.set(kept, id);
      if (id >= this.refs.length) this.refs = grown(this.refs, id);
      this.refs[id] = 0;
    }
    this.refs[id]!++;
    return id;
  }

  /** Counted once less; forgotten at none. */
  unref(id: number): void {
    if (id === -1 || --this.refs[id]! > 0) return;
    this.ids.delete(this.strings[id]!);
    this.strings[id] = undefined;
    this.free.push(id);
  }

  get(id: number): string | undefined {
    return id === -1 ? undefined : this.strings[id];
  }

  /** Strings held now. */
  get live(): number {
    return this.ids.size;
  }
}

// --- Identifiers as bytes --------------------------------------------------------------------------

/**
 * Identifiers that state keeps one of per lease or per write (lease ids, operation ids) as bytes
 * in typed arrays, not as strings: a string per lease and per write would be an object on the
 * heap for as long as the lease, and garbage for the collector after. An identifier whose
 * characters are all below 256 (Latin-1, every ASCII id) is a block [length, holders, bytes…] of
 * 8, 12, 16, 24, 32, 48 or 64 bytes, reused once its last holder lets it go (a record and its
 * lease share one); any other (longer, or with a character above 255) is kept as a string. A
 * handle is a number: -1 for none, the block's place and class, or -2 - k for the k-th string.
 */
const TEXT_CLASSES = [8, 12, 16, 24, 32, 48, 64];
/** A page's bytes: a multiple of every class, so that no block crosses a page. */
const TEXT_PAGE = 192 * 256;
const MAX_HOLDERS = 255;

export class Texts {
  /** Per class, pages of TEXT_PAGE bytes. */
  private readonly pools: Uint8Array<ArrayBuffer>[][] = TEXT_CLASSES.map(() => []);
  private readonly used = TEXT_CLASSES.map(() => 0);
  private readonly freeBlocks: number[][] = TEXT_CLASSES.map(() => []);
  private readonly long: (string | undefined)[] = [];
  private readonly longFree: number[] = [];
  /** Identifiers held (each counted once, however many holders share it). */
  live = 0;

  put(s: string | undefined): number {
    if (s === undefined) return -1;
    this.live++;
    const n = s.length;
    let c = 0;
    while (c < TEXT_CLASSES.length && TEXT_CLASSES[c]! < n + 2) c++;
    let latin1 = c < TEXT_CLASSES.length;
    for (let i = 0; latin1 && i < n; i++) if (s.charCodeAt(i) > 255) latin1 = false;
    if (!latin1) {
      const k = this.longFree.length > 0 ? this.longFree.pop()! : this.long.length;
      this.long[k] = keptString(s, false);
      return -2 - k;
    }
    const at = this.alloc(c);
    const page = this.pools[c]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    page[o] = n;
    page[o + 1] = 1;
    for (let i = 0; i < n; i++) page[o + 2 + i] = s.charCodeAt(i);
    return at * 8 + c;
  }

  /** A free block of class c (its place). */
  private alloc(c: number): number {
    let at = this.freeBlocks[c]!.pop();
    if (at === undefined) {
      at = this.used[c]!;
      this.used[c] = at + TEXT_CLASSES[c]!;
      const pages = this.pools[c]!;
      if (Math.floor(at / TEXT_PAGE) >= pages.length) pages.push(new Uint8Array(TEXT_PAGE));
    }
    return at;
  }

  /**
   * Identifier h into a summary record: none; the same holder's reference as `same` (a lease and
   * its write share one); its bytes; or the handle of one kept as a string. When it writes the
   * bytes or `same`, h goes to the writer's taken(): the caller lets it go once the record is kept.
   */
  pack(h: number, w: ByteWriter, same: number): void {
    if (h === -1) w.u(0);
    else if (h < -1) {
      w.u(1);
      w.i(h);
    } else if (h === same) {
      w.u(2);
      w.take(h);
    } else {
      const page = this.pools[h & 7]![Math.floor(Math.floor(h / 8) / TEXT_PAGE)]!;
      const o = Math.floor(h / 8) % TEXT_PAGE;
      w.u(3 + page[o]!);
      w.bytes(page, o + 2, page[o]!);
      w.take(h);
    }
  }

  /** An identifier pack() wrote, kept again (`same`: the handle it may share); returns its handle. */
  unpack(rd: ByteReader, same: number): number {
    const t = rd.u();
    if (t === 0) return -1;
    if (t === 1) return rd.i();
    if (t === 2) return this.share(same);
    const n = t - 3;
    this.live++;
    let c = 0;
    while (TEXT_CLASSES[c]! < n + 2) c++;
    const at = this.alloc(c);
    const page = this.pools[c]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    page[o] = n;
    page[o + 1] = 1;
    const from = rd.buf;
    const p = rd.pos;
    for (let k = 0; k < n; k++) page[o + 2 + k] = from[p + k]!;
    rd.pos = p + n;
    return at * 8 + c;
  }

  /** One more holder of h (the same identifier kept twice); returns the handle to keep. */
  share(h: number): number {
    if (h < 0) return h === -1 ? -1 : this.put(this.long[-2 - h]);
    const at = Math.floor(h / 8);
    const page = this.pools[h & 7]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    if (page[o + 1]! >= MAX_HOLDERS) return this.put(this.get(h));
    page[o + 1]!++;
    return h;
  }

  /** One holder less; the identifier goes with its last. */
  free(h: number): void {
    if (h === -1) return;
    if (h < -1) {
      this.live--;
      this.long[-2 - h] = undefined;
      this.longFree.push(-2 - h);
      return;
    }
    const c = h & 7;
    const at = Math.floor(h / 8);
    const page = this.pools[c]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    if (--page[o + 1]! > 0) return;
    this.live--;
    this.freeBlocks[c]!.push(at);
  }

  /** Whether the identifier is `s` (none is undefined). */
  is(h: number, s: string | undefined): boolean {
    if (s === undefined || h === -1) return s === undefined && h === -1;
    if (h < -1) return this.long[-2 - h] === s;
    const at = Math.floor(h / 8);
    const page = this.pools[h & 7]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    const n = s.length;
    if (page[o] !== n) return false;
    for (let i = 0; i < n; i++) if (page[o + 2 + i] !== s.charCodeAt(i)) return false;
    return true;
  }

  /** The identifier as a string (a new one each time; undefined for none). */
  get(h: number): string | undefined {
    if (h === -1) return undefined;
    if (h < -1) return this.long[-2 - h];
    const at = Math.floor(h / 8);
    const page = this.pools[h & 7]![Math.floor(at / TEXT_PAGE)]!;
    const o = at % TEXT_PAGE;
    return String.fromCharCode.apply(null, page.subarray(o + 2, o + 2 + page[o]!) as unknown as number[]);
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

// --- Line numbers ------------------------------------------------------------------------------

/** Line numbers are kept as 32-bit integers; a larger one (a file of more than 2^31 lines) as LONG_LINE, the number beside. */
const LONG_LINE = -2;

/** The integer a line number is kept as at `at` of `ints`; a larger one goes to `long` under `key`. */
export function putLine(ints: Int32Array, at: number, key: number, line: number, long: Map<number, number>): void {
  if (line <= 0x7fffffff) ints[at] = line;
  else {
    ints[at] = LONG_LINE;
    long.set(key, line);
  }
}

export function lineAt(ints: Int32Array, at: number, key: number, long: Map<number, number>): number {
  const v = ints[at]!;
  return v === LONG_LINE ? long.get(key)! : v;
}

// --- Kept events ---------------------------------------------------------------------------------

// Kept-event records: doubles at stride EF, integers at stride EI (a record's numbers are together).
const EF = 4;
const E_TS = 0;
const E_TOKEN = 1;
const E_TTL = 2;
const E_OFFSET = 3;
const EI = 9;
const E_BYTES = 0;
const E_ORIGIN = 1;
/** The holder's list link, or the free list's. */
const E_NEXT = 2;
/** packMeta (bits 0-8) and the count of holders (from bit 9). */
const E_META = 3;
const E_LINE = 4;
/** The resource's id in the store (name()). */
const E_RESOURCE = 5;
/** Texts handles. */
const E_LEASE = 6;
const E_OPERATION = 7;
/** The ownerId's id in `owners`. */
const E_OWNER = 8;
const META_BITS = 0x1ff;
/** The meta a summary record's write is XORed with (an accepted write the resource logged: written as 0). */
const USUAL_WRITE = packMeta('write', 'resource', 'accepted');
const REF = 1 << 9;

/**
 * What a kept event may share with state that holds the same (handles in the Texts): its lease's
 * leaseId, its operation's operationId (the operation index's entry).
 */
export interface SharedStrings {
  readonly leaseText?: number;
  readonly operationText?: number;
}

/**
 * Kept events, one record each in typed arrays: what keep() would copy, field for field, and the
 * same LockEvent when built back (`event()`). Records are allocated and freed by the state that
 * holds them (a free list), and counted: the same event kept twice in a row (by the operation
 * index, then as its resource's highest write) is one record. `next` links records into short
 * lists for their holder. A record names its resource by id (`name` gives the name).
 */
export class EventPool {
  private readonly f: Float64Array<ArrayBuffer>[] = [];
  private readonly i: Int32Array<ArrayBuffer>[] = [];

  /** A kept write's text or display fields (undefined for most: by reference). */
  private extra: (string | Readonly<Record<string, unknown>> | undefined)[] = [];
  /** Tokens that are not exact as doubles, events whose type, observer or result is not canonical, line numbers above 2^31. */
  private readonly bigs = new Map<number, bigint>();
  private readonly odd = new Map<number, { type: string; observer: string; result: string }>();
  private readonly longLines = new Map<number, number>();
  private freeHead = -1;
  private size = 0;
  /** The event put last and its record. */
  private lastEvent: LockEvent | undefined;
  private lastRecord = -1;
  /** Records held. */
  live = 0;

  constructor(
    /** A resource's name by id. */
    private readonly name: (id: number) => string,
    readonly origins: Origins = new Origins(),
    readonly texts: Texts = new Texts(),
    readonly owners: StringTable = new StringTable(),
  ) {}

  /** Keep a copy of `ev`, an event of resource `resource` (an id of `names`), as keep() would make it; returns its record. */
  put(ev: LockEvent, resource: number, shared?: SharedStrings): number {
    const last = this.lastRecord;
    if (ev === this.lastEvent && this.i[last >>> PAGE_BITS]![(last & PAGE_MASK) * EI + E_RESOURCE] === resource) {
      const li = this.i[last >>> PAGE_BITS]!;
      const lo = (last & PAGE_MASK) * EI;
      li[lo + E_META]! += REF;
      // Kept first without its lease (by the operation index): share the lease's leaseId now.
      this.adopt(li, lo + E_LEASE, shared?.leaseText, ev.leaseId);
      this.adopt(li, lo + E_OPERATION, shared?.operationText, ev.operationId);
      return last;
    }
    const r = this.alloc();
    this.lastEvent = ev;
    this.lastRecord = r;
    const f = this.f[r >>> PAGE_BITS]!;
    const i = this.i[r >>> PAGE_BITS]!;
    const fo = (r & PAGE_MASK) * EF;
    const io = (r & PAGE_MASK) * EI;
    f[fo + E_TS] = ev.ts;
    const t = tokenKey(ev.fenceToken);
    f[fo + E_TOKEN] = t;
    if (t === BIG) this.bigs.set(r, ev.fenceToken!);
    f[fo + E_TTL] = ev.ttlMs === undefined ? NONE : ev.ttlMs;
    putLine(i, io + E_LINE, r, ev.line, this.longLines);
    i[io + E_RESOURCE] = resource;
    i[io + E_ORIGIN] = this.origins.ref(ev.file, ev.source);
    const meta = packMeta(ev.type, ev.observer, ev.result);
    i[io + E_META] = meta | REF;
    if (!metaExact(meta)) this.odd.set(r, { type: ev.type, observer: keptString(ev.observer, false), result: keptString(ev.result, false) });
    i[io + E_NEXT] = -1;
    const d = keptDisplay(ev);
    f[fo + E_OFFSET] = d.offset === undefined ? NONE : d.offset;
    i[io + E_BYTES] = d.bytes === undefined ? -1 : d.bytes;
    // Most records have none (by reference): the array grows only as far as records that have one.
    const extra = d.text ?? d.fields;
    if (extra !== undefined || r < this.extra.length) this.extra[r] = extra;
    // Strings of an event by reference that holds neither its line nor a record are its own (see keep()).
    i[io + E_OWNER] = this.owners.ref(ev.ownerId, ownStrings(ev));
    i[io + E_LEASE] = this.textFor(shared?.leaseText, ev.leaseId);
    i[io + E_OPERATION] = this.textFor(shared?.operationText, ev.operationId);
    return r;
  }

  /** A Texts handle for `value`: the shared one (SharedStrings) when it holds the same text, else one of its own. */
  private textFor(shared: number | undefined, value: string | undefined): number {
    return shared !== undefined && this.texts.is(shared, value) ? this.texts.share(shared) : this.texts.put(value);
  }

  /** The record's handle at `at` swapped for the shared one when that holds the same text (its own let go). */
  private adopt(li: Int32Array, at: number, shared: number | undefined, value: string | undefined): void {
    const own = li[at]!;
    if (shared === undefined || shared === own || !this.texts.is(shared, value)) return;
    this.texts.free(own);
    li[at] = this.texts.share(shared);
  }

  /**
   * Whether a summary record can keep r: one holder, and nothing kept beside it (a token above
   * 2^53, a type, result or observer outside the canonical sets, a line above 2^31, a text or fields).
   */
  packable(r: number): boolean {
    const i = this.i[r >>> PAGE_BITS]!;
    const io = (r & PAGE_MASK) * EI;
    const m = i[io + E_META]!;
    return m >>> 9 === 1 && metaExact(m & META_BITS) && this.tokenKey(r) !== BIG && i[io + E_LINE]! >= 0 && !(r < this.extra.length && this.extra[r] !== undefined);
  }

  /** The record's leaseId handle in the texts. */
  leaseText(r: number): number {
    return this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_LEASE]!;
  }

  /**
   * A packable() record's numbers into `w` but its token (tokenKey(): the caller keeps it where
   * it reads it without rebuilding anything), its time from `ts` and its line from `line`, its
   * references with them (identifiers to let go into the writer's taken()). A leaseId that is
   * `same` (a handle of the texts) is written as such.
   */
  pack(r: number, w: ByteWriter, ts: number, line: number, same: number): void {
    const f = this.f[r >>> PAGE_BITS]!;
    const i = this.i[r >>> PAGE_BITS]!;
    const fo = (r & PAGE_MASK) * EF;
    const io = (r & PAGE_MASK) * EI;
    w.num(f[fo + E_TS]!, ts);
    w.num(f[fo + E_TTL]!, 0);
    w.num(f[fo + E_OFFSET]!, 0);
    w.u(i[io + E_BYTES]! + 1);
    w.u(i[io + E_ORIGIN]!);
    w.u((i[io + E_META]! & META_BITS) ^ USUAL_WRITE);
    w.num(i[io + E_LINE]!, line);
    this.texts.pack(i[io + E_LEASE]!, w, same);
    this.texts.pack(i[io + E_OPERATION]!, w, -1);
    w.u(i[io + E_OWNER]! + 1);
    w.u(i[io + E_NEXT]! + 1);
  }


  /** Let the slot of a record pack() wrote go (its references are the summary record's now). */
  drop(r: number): void {
    if (r === this.lastRecord) {
      this.lastEvent = undefined;
      this.lastRecord = -1;
    }
    this.live--;
    const i = this.i[r >>> PAGE_BITS]!;
    const io = (r & PAGE_MASK) * EI;
    i[io + E_META] = 0;
    i[io + E_NEXT] = this.freeHead;
    this.freeHead = r;
  }

  /** A record pack() wrote (with `ts`, `line` and `same`), from `rd`, of resource `resource`, with token key `token`, in a new slot; returns it. */
  unpack(rd: ByteReader, resource: number, token: number, ts: number, line: number, same: number): number {
    const r = this.alloc();
    const f = this.f[r >>> PAGE_BITS]!;
    const i = this.i[r >>> PAGE_BITS]!;
    const fo = (r & PAGE_MASK) * EF;
    const io = (r & PAGE_MASK) * EI;
    f[fo + E_TOKEN] = token;
    f[fo + E_TS] = rd.num(ts);
    f[fo + E_TTL] = rd.num(0);
    f[fo + E_OFFSET] = rd.num(0);
    i[io + E_BYTES] = rd.u() - 1;
    i[io + E_ORIGIN] = rd.u();
    i[io + E_META] = (rd.u() ^ USUAL_WRITE) | REF;
    i[io + E_LINE] = rd.num(line);
    i[io + E_RESOURCE] = resource;
    i[io + E_LEASE] = this.texts.unpack(rd, same);
    i[io + E_OPERATION] = this.texts.unpack(rd, -1);
    i[io + E_OWNER] = rd.u() - 1;
    i[io + E_NEXT] = rd.u() - 1;
    if (r < this.extra.length) this.extra[r] = undefined;
    return r;
  }

  /** A free record (counted live). */
  private alloc(): number {
    let r = this.freeHead;
    if (r !== -1) this.freeHead = this.next(r);
    else {
      r = this.size++;
      reserveF64(this.f, EF, r);
      reserveI32(this.i, EI, r);
    }
    this.live++;
    return r;
  }

  /** Let a record go (once its last holder does). */
  free(r: number): void {
    const io = (r & PAGE_MASK) * EI;
    const i = this.i[r >>> PAGE_BITS]!;
    i[io + E_META]! -= REF;
    if (i[io + E_META]! >= REF) return;
    if (r === this.lastRecord) {
      this.lastEvent = undefined;
      this.lastRecord = -1;
    }
    this.live--;
    this.origins.unref(i[io + E_ORIGIN]!);
    if (this.tokenKey(r) === BIG) this.bigs.delete(r);
    if (!metaExact(i[io + E_META]!)) this.odd.delete(r);
    if (i[io + E_LINE] === LONG_LINE) this.longLines.delete(r);
    this.owners.unref(i[io + E_OWNER]!);
    this.texts.free(i[io + E_LEASE]!);
    this.texts.free(i[io + E_OPERATION]!);
    if (r < this.extra.length) this.extra[r] = undefined;
    i[io + E_NEXT] = this.freeHead;
    this.freeHead = r;
  }

  /** The record after r in its holder's list (-1 at the end). */
  next(r: number): number {
    return this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_NEXT]!;
  }

  setNext(r: number, next: number): void {
    this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_NEXT] = next;
  }

  ts(r: number): number {
    return this.f[r >>> PAGE_BITS]![(r & PAGE_MASK) * EF + E_TS]!;
  }

  /** The token as a double (BIG when it is not exact as one, NONE for none). */
  tokenKey(r: number): number {
    return this.f[r >>> PAGE_BITS]![(r & PAGE_MASK) * EF + E_TOKEN]!;
  }

  /** The record's token (undefined when none). */
  fenceToken(r: number): bigint | undefined {
    return tokenAt(this.f[r >>> PAGE_BITS]![(r & PAGE_MASK) * EF + E_TOKEN]!, this.bigs, r);
  }

  /** The record's event type. */
  type(r: number): EventType {
    const m = this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_META]!;
    return (m & 7) === 7 ? (this.odd.get(r)!.type as EventType) : typeOf(m);
  }

  ownerId(r: number): string | undefined {
    return this.owners.get(this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_OWNER]!);
  }

  hasLeaseId(r: number): boolean {
    return this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_LEASE] !== -1;
  }

  /** Whether the record's leaseId is `leaseId`. */
  leaseIdIs(r: number, leaseId: string | undefined): boolean {
    return this.texts.is(this.i[r >>> PAGE_BITS]![(r & PAGE_MASK) * EI + E_LEASE]!, leaseId);
  }

  /** The kept event, built (a new object each time: callers that compare events by identity keep one). */
  event(r: number): LockEvent {
    const f = this.f[r >>> PAGE_BITS]!;
    const i = this.i[r >>> PAGE_BITS]!;
    const fo = (r & PAGE_MASK) * EF;
    const io = (r & PAGE_MASK) * EI;
    const m = i[io + E_META]! & META_BITS;
    const odd = metaExact(m) ? undefined : this.odd.get(r);
    const extra = r < this.extra.length ? this.extra[r] : undefined;
    const ttl = f[fo + E_TTL]!;
    const offset = f[fo + E_OFFSET]!;
    const bytes = i[io + E_BYTES]!;
    const o = i[io + E_ORIGIN]!;
    return new KeptEvent(
      f[fo + E_TS]!,
      odd !== undefined && (m & 7) === 7 ? (odd.type as EventType) : typeOf(m),
      this.name(i[io + E_RESOURCE]!),
      this.owners.get(i[io + E_OWNER]!),
      this.texts.get(i[io + E_LEASE]!),
      this.texts.get(i[io + E_OPERATION]!),
      this.fenceToken(r),
      Number.isNaN(ttl) ? undefined : ttl,
      odd !== undefined && ((m >> 5) & 15) === OTHER ? odd.result : resultOf(m),
      odd !== undefined && ((m >> 3) & 3) === 3 ? (odd.observer as Observer) : observerOf(m),
      this.origins.source(o),
      this.origins.file(o),
      lineAt(i, io + E_LINE, r, this.longLines),
      typeof extra === 'string' ? extra : undefined,
      typeof extra === 'object' ? extra : undefined,
      Number.isNaN(offset) ? undefined : offset,
      bytes === -1 ? undefined : bytes,
    );
  }
}

// --- Summary records -----------------------------------------------------------------------------

/**
 * Block sizes (bytes, a 4-byte owner included), multiples of 4: steps of 4 up to 128, then of an
 * eighth of the size, the largest holding MAX_BLOB bytes. A byte string goes in the smallest
 * block that holds it: at most 3 bytes (past 128, an eighth) are unused.
 */
/** The longest byte string. */
export const MAX_BLOB = 4096;
const BLOB_SIZES: number[] = [];
for (let size = 8; ; size += size < 128 ? 4 : 2 ** (Math.floor(Math.log2(size)) - 3)) {
  BLOB_SIZES.push(size);
  if (size >= 4 + MAX_BLOB) break;
}
const BLOB_CLASSES = BLOB_SIZES.length;
/** A handle: a block's index in its class times CLASS_SPAN, plus the class. */
const CLASS_BITS = 7;
const CLASS_SPAN = 1 << CLASS_BITS;
/** Blocks per class (2^24): handles stay int32s. */
const MAX_BLOCKS = 2 ** 31 / CLASS_SPAN;
/** A page's bytes, at most (a power of two of blocks, 16 to 32 KiB for most classes). */
const BLOB_PAGE = 32768;
const BLOCK_BITS = BLOB_SIZES.map((size) => Math.max(0, Math.floor(Math.log2(BLOB_PAGE / size))));
/**
 * Byte strings of up to MAX_BLOB bytes, each in one block of a size class (so no links, and read
 * in place), each class dense: a freed block takes the class's last one (whose owner hears of its
 * new handle: `moved`), and pages at the end that hold none are let go. So a class holds only
 * the blocks in use, whatever it once held (byte strings grow and shrink as their owners' state
 * does), and the bytes held are about what the strings need. The summary record of a resource
 * with no live lease is one (TimelineStore.compact), its owner the resource.
 */
export class Blobs {
  private readonly pages: Uint8Array<ArrayBuffer>[][] = BLOB_SIZES.map(() => []);
  /** The same pages as 32-bit words: blocks are copied by word. */
  private readonly words: Int32Array<ArrayBuffer>[][] = BLOB_SIZES.map(() => []);
  private readonly counts = new Int32Array(BLOB_CLASSES);
  /** Byte strings held, and the bytes of their blocks (owners included). */
  live = 0;
  bytes = 0;

  constructor(
    /** Told when a block moves (another was freed): its owner and its new handle. */
    private readonly moved: (owner: number, h: number) => void = () => {},
  ) {}

  /**
   * Keep the first `n` bytes of `from` (n ≤ MAX_BLOB) for `owner` (an int32); returns the handle,
   * or -1 when the class is full (MAX_BLOCKS). With `words` (the same buffer as 32-bit words),
   * copied by word, else by byte.
   */
  put(from: Uint8Array, n: number, owner: number, words?: Int32Array): number {
    const need = 4 + ((n + 3) & ~3);
    let c = need <= 128 ? Math.max(0, (need - 8) >> 2) : 30;
    while (BLOB_SIZES[c]! < need) c++;
    const k = this.counts[c]!;
    if (k >= MAX_BLOCKS) return -1;
    const bits = BLOCK_BITS[c]!;
    const size = BLOB_SIZES[c]!;
    if (k >>> bits >= this.pages[c]!.length) {
      const page = new Uint8Array(size << bits);
      this.pages[c]!.push(page);
      this.words[c]!.push(new Int32Array(page.buffer));
    }
    this.counts[c] = k + 1;
    const w = this.words[c]![k >>> bits]!;
    const o = (k & ((1 << bits) - 1)) * size;
    w[o >> 2] = owner;
    // Loops, not set(subarray()): no view object per string.
    if (words !== undefined) {
      const end = (n + 3) >> 2;
      for (let b = 0; b < end; b++) w[(o >> 2) + 1 + b] = words[b]!;
    } else {
      const page = this.pages[c]![k >>> bits]!;
      for (let b = 0; b < n; b++) page[o + 4 + b] = from[b]!;
    }
    this.live++;
    this.bytes += size;
    return k * CLASS_SPAN + c;
  }

  /** The page that holds h's bytes (from at(h) on), read in place (valid until the next put() or free()). */
  page(h: number): Uint8Array {
    const c = h & (CLASS_SPAN - 1);
    return this.pages[c]![h >>> CLASS_BITS >>> BLOCK_BITS[c]!]!;
  }

  at(h: number): number {
    const c = h & (CLASS_SPAN - 1);
    return ((h >>> CLASS_BITS) & ((1 << BLOCK_BITS[c]!) - 1)) * BLOB_SIZES[c]! + 4;
  }

  /** Let h go: the class's last block takes its place (its owner is told), a page left empty at the end goes. */
  free(h: number): void {
    const c = h & (CLASS_SPAN - 1);
    const k = h >>> CLASS_BITS;
    const last = this.counts[c]! - 1;
    const bits = BLOCK_BITS[c]!;
    const mask = (1 << bits) - 1;
    const size = BLOB_SIZES[c]!;
    const words = this.words[c]!;
    if (k !== last) {
      const from = words[last >>> bits]!;
      const to = words[k >>> bits]!;
      const fo = ((last & mask) * size) >> 2;
      const t = ((k & mask) * size) >> 2;
      for (let b = 0; b < size >> 2; b++) to[t + b] = from[fo + b]!;
      this.moved(to[t]!, h);
    }
    this.counts[c] = last;
    // One empty page stays (no page made and let go again and again at a boundary).
    if (words.length >= ((last + mask) >>> bits) + 2) {
      words.pop();
      this.pages[c]!.pop();
    }
    this.live--;
    this.bytes -= size;
  }

  /** Pages held, of every class. */
  get pageCount(): number {
    let n = 0;
    for (const p of this.pages) n += p.length;
    return n;
  }
}

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
/** Below this, a difference of two integers is written as a varint (zigzag, times 2: the low bit tells the kind). */
const MAX_DELTA = 2 ** 48;

/**
 * Numbers as bytes, for summary records: unsigned varints, int32s zigzagged, and doubles as the
 * difference from a base when both are safe integers (a time from the one before it, a token from
 * the one before it: one or two bytes), else NaN in one byte or the double's eight bytes.
 * Every value comes back exactly as written.
 */
export class ByteWriter {
  readonly buf = new Uint8Array(MAX_BLOB + 64);
  /** The same bytes as 32-bit words (Blobs.put copies by word). */
  readonly words = new Int32Array(this.buf.buffer);
  pos = 0;
  /** Identifiers the record takes over (Texts.pack), let go by the caller once the record is kept. */
  private takenList = new Int32Array(16);
  taken = 0;

  /** Start a record at byte `pos`, with nothing taken. */
  reset(pos: number): void {
    this.pos = pos;
    this.taken = 0;
  }

  take(h: number): void {
    if (this.taken === this.takenList.length) {
      const more = new Int32Array(this.taken * 2);
      more.set(this.takenList);
      this.takenList = more;
    }
    this.takenList[this.taken++] = h;
  }

  /** The k-th identifier taken (k < taken). */
  takenAt(k: number): number {
    return this.takenList[k]!;
  }
  /** Past MAX_BLOB: the record does not fit (the caller keeps the state as it is). */
  get full(): boolean {
    return this.pos > MAX_BLOB;
  }

  u(v: number): void {
    const b = this.buf;
    let p = this.pos;
    if (p > MAX_BLOB) return;
    if (v < 128) {
      b[p] = v;
      this.pos = p + 1;
      return;
    }
    // Above 2^31, by division (bit operations are 32-bit); below, by shifts.
    while (v >= 0x80000000) {
      b[p++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    while (v >= 128) {
      b[p++] = (v & 127) | 128;
      v >>>= 7;
    }
    b[p++] = v;
    this.pos = p;
  }

  i(v: number): void {
    this.u(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  bytes(from: Uint8Array, at: number, n: number): void {
    if (this.pos + n > MAX_BLOB) {
      this.pos = MAX_BLOB + 1;
      return;
    }
    const b = this.buf;
    const p = this.pos;
    for (let k = 0; k < n; k++) b[p + k] = from[at + k]!;
    this.pos = p + n;
  }

  num(x: number, base: number): void {
    // (-0 is written as its double: a difference would give it back as 0.)
    if (Number.isSafeInteger(x) && Number.isSafeInteger(base) && (x !== 0 || 1 / x > 0)) {
      const d = x - base;
      if (d > -MAX_DELTA && d < MAX_DELTA) {
        this.u((d >= 0 ? d * 2 : -d * 2 - 1) * 2);
        return;
      }
    }
    if (Number.isNaN(x)) {
      this.u(3);
      return;
    }
    this.u(1);
    if (this.pos > MAX_BLOB) return;
    f64[0] = x;
    this.buf.set(f64Bytes, this.pos);
    this.pos += 8;
  }
}

export class ByteReader {
  buf: Uint8Array = new Uint8Array(0);
  pos = 0;

  at(buf: Uint8Array, pos: number): this {
    this.buf = buf;
    this.pos = pos;
    return this;
  }

  u(): number {
    const b = this.buf;
    let p = this.pos;
    let x = b[p++]!;
    if (x < 128) {
      this.pos = p;
      return x;
    }
    let v = x & 127;
    // Four bytes by shifts (28 bits), the rest by multiplication.
    let shift = 7;
    do {
      x = b[p++]!;
      v |= (x & 127) << shift;
      shift += 7;
    } while (x >= 128 && shift < 28);
    if (x >= 128) {
      let mul = 2 ** 28;
      do {
        x = b[p++]!;
        v += (x & 127) * mul;
        mul *= 128;
      } while (x >= 128);
    }
    this.pos = p;
    return v;
  }

  i(): number {
    const z = this.u();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  num(base: number): number {
    const v = this.u();
    if (v % 2 === 0) {
      const z = v / 2;
      return base + (z % 2 === 0 ? z / 2 : -(z + 1) / 2);
    }
    if (v === 3) return Number.NaN;
    for (let k = 0; k < 8; k++) f64Bytes[k] = this.buf[this.pos++]!;
    return f64[0]!;
  }
}
