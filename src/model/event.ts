/** Canonical event model (format v1). See README "Canonical event format". */

export const EVENT_TYPES = ['acquire', 'keepalive', 'expire', 'revoke', 'release', 'write'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const OBSERVERS = ['authority', 'worker', 'resource'] as const;
export type Observer = (typeof OBSERVERS)[number];

export const WRITE_RESULTS = ['accepted', 'rejected-stale-fence', 'rejected', 'error', 'timeout'] as const;
export type WriteResult = (typeof WRITE_RESULTS)[number];

/** Allowed results per event type; the first one is the default (write has none: it is required). */
export const RESULTS: Record<EventType, readonly string[]> = {
  acquire: ['granted', 'busy'],
  keepalive: ['ok', 'failed'],
  release: ['released', 'rejected'],
  expire: ['expired'],
  revoke: ['revoked'],
  write: WRITE_RESULTS,
};

/**
 * One canonical event, as the engine sees it. Immutable once built: nothing in the engine changes
 * an event (state that keeps one keeps its own trimmed copy, see keep()).
 * `ts` is epoch milliseconds (may carry a fraction).
 */
export interface LockEvent {
  /** Epoch milliseconds. */
  readonly ts: number;
  readonly type: EventType;
  readonly resource: string;
  readonly ownerId?: string;
  readonly leaseId?: string;
  readonly operationId?: string;
  /** Exact fencing token. */
  readonly fenceToken?: bigint;
  readonly ttlMs?: number;
  readonly result: string;
  readonly observer: Observer;
  /** Log stream or clock domain; defaults to the input's name. */
  readonly source: string;
  /** Input the line came from (path as given, or `stdin`). */
  readonly file: string;
  /** 1-based physical line number in `file` (0 for events given as objects). */
  readonly line: number;
  /**
   * The original record, for display of its other fields, when it is not simply its JSON line
   * (then `text` holds the line instead). A kept copy (keep()) has none: a kept write has its
   * `fields`, or its `text`; a kept lock event has neither.
   */
  readonly record?: Readonly<Record<string, unknown>>;
  /**
   * The JSON line itself, in place of a record parsed from it (the canonical fast path never
   * parses one; other JSON profiles drop theirs): the record is parsed back only when display
   * fields are needed. Kept by kept writes whose line is at most MAX_KEPT_LINE characters. For a
   * long canonical line of an input that cannot be read back (stdin, a pipe, gzip), a shortened
   * copy of the line: its string values cut past MAX_DISPLAY_CHARS, so the same display fields
   * (ingest/records.ts; the duplicate check compares such a line by the digest of the whole line).
   */
  readonly text?: string;
  /** Non-canonical scalar fields of the record, clipped: what is kept for display (writes only, once kept). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /**
   * Where the line is in its input (byte offset, and length before the newline), when the input
   * is a plain file that can be read again and the line is the event's JSON (`text`): a kept copy
   * then holds these two numbers instead of the line, and the line is read back when a finding
   * shows the event (ingest/readback.ts).
   */
  readonly offset?: number;
  readonly bytes?: number;
}

/**
 * A LockEvent that state keeps or builds (keep()'s copies; a kept record, a lease's grant,
 * renewal or end built back, timeline/). A class of its own, so that these objects never share
 * hidden classes with the events the readers make: their fields hold other kinds of values
 * (`undefined` where a reader's event holds a number), and sharing would make V8 change the
 * readers' shapes and deoptimise every function that takes events.
 */
export class KeptEvent implements LockEvent {
  readonly record: undefined = undefined;
  constructor(
    readonly ts: number,
    readonly type: EventType,
    readonly resource: string,
    readonly ownerId: string | undefined,
    readonly leaseId: string | undefined,
    readonly operationId: string | undefined,
    readonly fenceToken: bigint | undefined,
    readonly ttlMs: number | undefined,
    readonly result: string,
    readonly observer: Observer,
    readonly source: string,
    readonly file: string,
    readonly line: number,
    readonly text: string | undefined = undefined,
    readonly fields: Readonly<Record<string, unknown>> | undefined = undefined,
    readonly offset: number | undefined = undefined,
    readonly bytes: number | undefined = undefined,
  ) {}
}

/**
 * The `resource` of a lease-scoped event: an expire, revoke or keepalive that names a lease (a
 * ZooKeeper session, say) but no resource, because the authority ends or renews the lease
 * wherever it is held. The engine applies it to every resource whose live lease has that
 * leaseId. Only profiles make such events (a rule with `"scope": "lease"`); the canonical format
 * always names a resource.
 */
export const LEASE_SCOPED = '';

export function isLeaseScoped(ev: Pick<LockEvent, 'resource'>): boolean {
  return ev.resource === LEASE_SCOPED;
}

/** Reads an input's line back by reference: its text, or why it cannot be shown. */
export type LineReader = (file: string, offset: number, bytes: number) => string | { readonly unavailable: string };

const CANONICAL_FIELDS = new Set(['ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source']);
const MAX_DISPLAY_FIELDS = 12;
/** Characters of a display field's string shown at most (a longer one is clipped, with an ellipsis). */
export const MAX_DISPLAY_CHARS = 200;

/** Non-canonical scalar fields of a record, clipped, for display (undefined when none). */
export function displayFields(record: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> | undefined {
  if (record === undefined) return undefined;
  let out: Record<string, unknown> | undefined;
  let n = 0;
  for (const key in record) {
    if (CANONICAL_FIELDS.has(key) || !Object.prototype.hasOwnProperty.call(record, key)) continue;
    const v = record[key];
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') continue;
    out ??= Object.create(null) as Record<string, unknown>;
    out[key] = typeof v === 'string' && v.length > MAX_DISPLAY_CHARS ? detach(v.slice(0, MAX_DISPLAY_CHARS) + '…') : v;
    if (++n >= MAX_DISPLAY_FIELDS) break;
  }
  return out;
}

/**
 * A kept write's line is kept as it is up to this many characters; a longer one is parsed at
 * once and only its clipped display fields are kept (all a report shows of it), so what state
 * holds per kept event does not grow with line length (a 900 KB `msg` is never held), and the
 * operation index's 100 000 kept writes of an input that cannot be read back hold tens of MB, not
 * hundreds (it was 4 096: 100 000 operations of 3 KB lines on stdin peaked at 715 MB, now 235).
 */
export const MAX_KEPT_LINE = 1024;

/**
 * A copy of `s` that holds no larger string. V8 makes a slice of 13 or more characters a view
 * into the string it was cut from, so a resource name, owner or message cut from a 900 KB line
 * keeps the whole line alive for as long as state keeps the name. State that outlives the line
 * keeps detached copies. (`s + ' '` is a rope that slicing flattens into a string of its own.)
 */
export function detach(s: string): string {
  if (s.length < 13) return s;
  if (s.length > MAX_DETACHED_SHARED) return (s + ' ').slice(0, -1);
  // The same value detached a moment ago (the input's name on every lease, a message repeated):
  // that copy, equal and holding nothing larger, instead of a new one.
  const slot = (s.length * 31 + s.charCodeAt(0) * 7 + s.charCodeAt(s.length - 1) + s.charCodeAt(s.length >> 1)) & (DETACHED_SLOTS - 1);
  const hit = detached[slot];
  if (hit === s) return hit;
  const copy = (s + ' ').slice(0, -1);
  detached[slot] = copy;
  return copy;
}

/** Detached copies remembered for reuse (bounded: DETACHED_SLOTS strings of at most MAX_DETACHED_SHARED characters). */
const DETACHED_SLOTS = 256;
const MAX_DETACHED_SHARED = 256;
const detached: (string | undefined)[] = new Array<string | undefined>(DETACHED_SLOTS).fill(undefined);

/** Values a kept copy may share with state that holds the same ones (one string per resource, per lease). */
export interface Shared {
  readonly resource: string;
  readonly leaseId?: string;
  readonly ownerId?: string;
  readonly fenceToken?: bigint;
}

/**
 * The copy of an event that per-resource state keeps: the parsed record is dropped, so what stays
 * in memory per resource is small and bounded. Writes keep their display fields (the value
 * written shows in stories), or their line when it is short and no record was parsed (parsed
 * again only if a report shows the write); lock events, whose extra fields are mostly messages,
 * keep neither. Equal strings and tokens are replaced by those of `shared`. The event itself is
 * never changed: other state, a capture or a rule may hold it as it came.
 */
export function keep(ev: LockEvent, shared?: Shared): LockEvent {
  const { text, fields, offset, bytes } = keptDisplay(ev);
  const s = shared;
  const own = ownStrings(ev);
  return new KeptEvent(
    ev.ts,
    ev.type,
    s !== undefined && s.resource === ev.resource ? s.resource : keptString(ev.resource, own),
    s !== undefined && ev.ownerId !== undefined && s.ownerId === ev.ownerId ? s.ownerId : keptOpt(ev.ownerId, own),
    s !== undefined && ev.leaseId !== undefined && s.leaseId === ev.leaseId ? s.leaseId : keptOpt(ev.leaseId, own),
    keptOpt(ev.operationId, own),
    s !== undefined && ev.fenceToken !== undefined && s.fenceToken === ev.fenceToken ? s.fenceToken : ev.fenceToken,
    ev.ttlMs,
    keptString(ev.result, own),
    ev.observer,
    // The input's name (the default source) is no slice of a line either.
    own ? ev.source : ev.source === ev.file ? ev.file : detach(ev.source),
    ev.file,
    ev.line,
    text,
    fields,
    offset,
    bytes,
  );
}

/**
 * What a kept copy of an event holds for display (see keep()): writes keep their display fields,
 * their line's place (by reference), or their line when it is short and no record was parsed;
 * lock events keep none of these.
 */
export function keptDisplay(ev: LockEvent): { text?: string; fields?: Readonly<Record<string, unknown>>; offset?: number; bytes?: number } {
  if (ev.type !== 'write') return {};
  // By reference: read back if a finding shows it.
  if (ev.offset !== undefined && ev.record === undefined) return { offset: ev.offset, bytes: ev.bytes, fields: ev.fields };
  if (ev.record !== undefined) return { fields: displayFields(ev.record) };
  if (ev.text !== undefined && ev.text.length > MAX_KEPT_LINE) return { fields: displayFields(JSON.parse(ev.text) as Record<string, unknown>) };
  if (ev.text !== undefined) return { text: ev.text };
  return { fields: ev.fields };
}

/**
 * Whether the event's strings are its own: an event by reference that holds neither its line nor a
 * record (the byte path's, or a kept write) has no line to detach them from.
 */
export function ownStrings(ev: LockEvent): boolean {
  return ev.offset !== undefined && ev.text === undefined && ev.record === undefined;
}

/** A string as kept state holds it: as it is when the event's strings are its own (`own`), else detached from its line. */
export function keptString(s: string, own: boolean): string {
  return own || s.length < 13 ? s : detach(s);
}

function keptOpt(s: string | undefined, own: boolean): string | undefined {
  return s === undefined ? undefined : keptString(s, own);
}

/**
 * The event itself when it holds nothing large (no parsed record, a line of at most
 * MAX_KEPT_LINE characters), else its kept copy: for state that holds an event briefly on every
 * event (the previous line of a clock domain) and should not pay a copy each time.
 */
export function bounded(ev: LockEvent): LockEvent {
  return ev.record === undefined && (ev.text === undefined || ev.text.length <= MAX_KEPT_LINE) ? ev : keep(ev);
}

/** The event's whole record, when it still has one (parsed from its line if need be). */
export function recordOf(ev: LockEvent): Readonly<Record<string, unknown>> | undefined {
  if (ev.record !== undefined) return ev.record;
  return ev.text !== undefined ? (JSON.parse(ev.text) as Record<string, unknown>) : undefined;
}

/**
 * Display fields of an event, kept or not: from its record or line, else read back by reference
 * (with `lines`), else its kept fields. `unavailable` says why a referenced line cannot be shown.
 */
export function fieldsOf(ev: LockEvent, lines?: LineReader): { fields?: Readonly<Record<string, unknown>>; unavailable?: string } {
  if (ev.record !== undefined || ev.text !== undefined) return { fields: displayFields(recordOf(ev)) };
  // A kept write by reference, or an event of the byte path (which holds no text; kept lock events hold no offset).
  if (ev.offset !== undefined && ev.bytes !== undefined) {
    if (lines === undefined) return { unavailable: 'the line is kept by reference and no reader was given' };
    const text = lines(ev.file, ev.offset, ev.bytes);
    if (typeof text !== 'string') return { unavailable: text.unavailable };
    try {
      return { fields: displayFields(JSON.parse(text) as Record<string, unknown>) };
    } catch {
      return { unavailable: `the line read back from ${ev.file} at byte ${ev.offset} is not the JSON it was (the file changed)` };
    }
  }
  return { fields: ev.fields };
}

export function defaultObserver(type: EventType): Observer {
  return type === 'write' ? 'resource' : 'authority';
}

export function defaultResult(type: EventType): string | undefined {
  return type === 'write' ? undefined : RESULTS[type][0];
}
