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
  /** The original record, kept for display of other fields. */
  readonly record?: Readonly<Record<string, unknown>>;
}

export function defaultObserver(type: EventType): Observer {
  return type === 'write' ? 'resource' : 'authority';
}

export function defaultResult(type: EventType): string | undefined {
  return type === 'write' ? undefined : RESULTS[type][0];
}
