/** The canonical profile: records already in stalewrite's event format v1, validated with ajv. */
import type { ErrorObject } from 'ajv';
import validateEventRecord from '../generated/event-validator.js';
import { defaultObserver, defaultResult, RESULTS, type EventType, type Observer } from '../model/event.js';
import { parseTimestamp } from '../model/time.js';
import { parseFenceToken } from '../model/token.js';
import type { Profile } from './types.js';
import { keyGuard, repeatedKey, scanTopLevelKey } from './scan.js';
import { fastCanonicalEvent } from './fast-canonical.js';
import { fastCanonicalBytes } from './fast-canonical-bytes.js';
import { readKey } from './canonical-key.js';
import { keyScan } from './key-scan.js';

/** The validator of schema/event.schema.json, precompiled by ajv at build time (scripts/build.mjs). */
export const validateEvent = validateEventRecord;

export const canonical: Profile = {
  name: 'canonical',
  fastEvent: fastCanonicalEvent,
  fastBytes: fastCanonicalBytes,
  partitionKey: readKey,
  partitionKeys: keyScan,
  recipe: { kind: 'canonical' },
  toEvent(record, origin) {
    const dup = origin.text === undefined ? undefined : repeatedKey(origin.text, record, CANONICAL_GUARD);
    if (dup !== undefined) return dup;
    // No time of its own: the container log wrapper's, when the line came in one.
    if (record.ts === undefined && origin.wrapperTime !== undefined) record = { ...record, ts: origin.wrapperTime };
    if (!validateEvent(record)) return explain(record, validateEvent.errors ?? []);
    const time = parseTimestamp(record.ts);
    if (!time.ok) return time.reason;
    const type = record.type as EventType;
    let fenceToken: bigint | undefined;
    if (record.fenceToken !== undefined) {
      const raw = record.fenceToken;
      const t = parseFenceToken(raw, typeof raw === 'number' && !Number.isSafeInteger(raw) ? numberLiteral(origin.text, 'fenceToken', raw) : undefined);
      if (!t.ok) return t.reason;
      fenceToken = t.value;
    }
    let leaseId: string | undefined;
    if (record.leaseId !== undefined) {
      const raw = record.leaseId;
      if (typeof raw === 'number' && !Number.isSafeInteger(raw)) {
        const lit = numberLiteral(origin.text, 'leaseId', raw);
        if (lit === undefined) return `leaseId ${raw} is above 2^53 and cannot be read exactly from a JSON number; log it as a string`;
        leaseId = lit;
      } else leaseId = String(raw);
    }
    return {
      ts: time.ms,
      type,
      resource: record.resource as string,
      ownerId: record.ownerId as string | undefined,
      leaseId,
      operationId: record.operationId as string | undefined,
      fenceToken,
      ttlMs: record.ttlMs as number | undefined,
      result: (record.result as string | undefined) ?? defaultResult(type)!,
      observer: (record.observer as Observer | undefined) ?? defaultObserver(type),
      // The clock domain: `source`, else the logger's host (README "Clock domains"), else the input.
      source: (record.source as string | undefined) ?? hostOf(record) ?? origin.source,
      file: origin.file,
      line: origin.line,
      record,
      text: undefined,
      fields: undefined,
    };
  },
};

/**
 * The host a record names, the clock domain when it has no `source`: pino and bunyan's
 * `hostname`, else OpenTelemetry's `host.name` (a flat key, or `host: { name }` as ECS nests it).
 * Never a bare `host` string: in access logs that is often the HTTP target.
 */
export function hostOf(record: Readonly<Record<string, unknown>>): string | undefined {
  const own = (k: string) => (Object.prototype.hasOwnProperty.call(record, k) ? record[k] : undefined);
  const a = own('hostname');
  if (typeof a === 'string' && a !== '') return a;
  const b = own('host.name');
  if (typeof b === 'string' && b !== '') return b;
  const h = own('host');
  if (h !== null && typeof h === 'object' && !Array.isArray(h) && Object.prototype.hasOwnProperty.call(h, 'name')) {
    const n = (h as Record<string, unknown>).name;
    if (typeof n === 'string' && n !== '') return n;
  }
  return undefined;
}

/**
 * The keys whose repetition with another value could change a verdict: every canonical field, and
 * `hostname` / `host.name` (the clock domain when `source` is absent). Compared after JSON unescaping.
 */
export const CANONICAL_KEYS = ['ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source', 'hostname', 'host.name', 'host'] as const;
const CANONICAL_GUARD = keyGuard(CANONICAL_KEYS);

/**
 * Recover the exact digits of a top-level numeric field from the raw line, when JSON.parse
 * rounded it. Returns undefined unless the key appears at the top level, once or always written
 * alike, with a plain integer literal that parses to the same double.
 */
export function numberLiteral(text: string | undefined, key: string, parsed: number): string | undefined {
  if (text === undefined) return undefined;
  const found = scanTopLevelKey(text, key);
  if (found === undefined || found.count === 0 || !found.same || found.number === undefined) return undefined;
  if (!/^[0-9]+$/.test(found.number) || Number(found.number) !== parsed) return undefined;
  return found.number;
}

/** One-line reason from ajv's first error, phrased for a person reading a log. */
function explain(record: Record<string, unknown>, errors: ErrorObject[]): string {
  const e = errors[0];
  if (e === undefined) return 'does not match the canonical event schema';
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return `missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
  if (field === 'fenceToken') {
    const t = parseFenceToken(record.fenceToken);
    return t.ok ? `fenceToken: ${e.message}` : t.reason;
  }
  if (field === 'type') return `type ${show(record.type)} is not one of acquire, keepalive, expire, revoke, release, write`;
  if (field === 'result' && typeof record.type === 'string' && record.type in RESULTS) {
    return `result ${show(record.result)} is not allowed for ${record.type} (${RESULTS[record.type as EventType].join(', ')})`;
  }
  if (field === 'observer') return `observer ${show(record.observer)} is not one of authority, worker, resource`;
  return `${field === '' ? 'record' : field} ${e.message ?? 'is invalid'}`;
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}
