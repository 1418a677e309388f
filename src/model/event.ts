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
 * One canonical event, as the engine sees it. Immutable once built.
 * `ts` is epoch milliseconds (may carry a fraction); `tsText` keeps what the log said.
 */
export interface LockEvent {
  /** Epoch milliseconds. */
  readonly ts: number;
  readonly type: EventType;
  /** Replaced by the resource's own (shared) string when the engine takes the event. */
  resource: string;
  /** ownerId, leaseId and fenceToken may be replaced by equal shared values when the event is kept. */
  ownerId?: string;
  leaseId?: string;
  readonly operationId?: string;
  /** Exact fencing token. */
  fenceToken?: bigint;
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
   * (then `text` holds the line instead). Dropped by retain() once the event is kept: a kept write
   * has its `fields`, or its `text`; a kept lock event has neither.
   */
  record?: Readonly<Record<string, unknown>>;
  /**
   * The JSON line itself, in place of a record parsed from it (the canonical fast path never
   * parses one; other JSON profiles drop theirs): the record is parsed back only when display
   * fields are needed. Kept by retained writes.
   */
  text?: string;
  /** Non-canonical scalar fields of the record, clipped: what is kept for display (writes only, once retained). */
  fields?: Readonly<Record<string, unknown>>;
}

const CANONICAL_FIELDS = new Set(['ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source']);
const MAX_DISPLAY_FIELDS = 12;
const MAX_DISPLAY_CHARS = 200;

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
    out[key] = typeof v === 'string' && v.length > MAX_DISPLAY_CHARS ? v.slice(0, MAX_DISPLAY_CHARS) + '…' : v;
    if (++n >= MAX_DISPLAY_FIELDS) break;
  }
  return out;
}

/**
 * Called when an event is kept in per-resource state: the parsed record is dropped, so what stays
 * in memory per resource is small. Writes keep their display fields (the value written shows in
 * stories), or their line when no record was parsed, parsed again only if a report shows the
 * write; lock events, whose extra fields are mostly messages, keep neither.
 */
export function retain<T extends LockEvent | undefined>(ev: T): T {
  if (ev === undefined) return ev;
  if (ev.type !== 'write') {
    ev.fields = undefined;
    ev.text = undefined;
  } else if (ev.record !== undefined) ev.fields = displayFields(ev.record);
  ev.record = undefined;
  return ev;
}

/** The event's whole record, when it still has one (parsed from its line if need be). */
export function recordOf(ev: LockEvent): Readonly<Record<string, unknown>> | undefined {
  if (ev.record !== undefined) return ev.record;
  return ev.text !== undefined ? (JSON.parse(ev.text) as Record<string, unknown>) : undefined;
}

/** Display fields of an event, retained or not. */
export function fieldsOf(ev: LockEvent): Readonly<Record<string, unknown>> | undefined {
  return ev.record !== undefined || ev.text !== undefined ? displayFields(recordOf(ev)) : ev.fields;
}

export function defaultObserver(type: EventType): Observer {
  return type === 'write' ? 'resource' : 'authority';
}

export function defaultResult(type: EventType): string | undefined {
  return type === 'write' ? undefined : RESULTS[type][0];
}
