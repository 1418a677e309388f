/**
 * What the canonical fast readers accept, in one place: the string reader (fast-canonical.ts) and
 * the byte reader (fast-canonical-bytes.ts) scan a line their own way, then hand the values they
 * resolved (each field's kind, the index of a matched name, digit checks, numbers read) to these
 * functions, which say whether the fast path may build the event or must decline (the general
 * path then decides). So both readers decline in the same cases, by the same code.
 *
 * These are pure functions of their arguments, small enough to be inlined into the readers' hot
 * loops: they allocate nothing and read no state.
 */
import { defaultObserver, EVENT_TYPES, OBSERVERS, RESULTS, type EventType, type Observer } from '../model/event.js';
import { parseTimestamp } from '../model/time.js';

// The kind of a value as a reader scanned it (0: the key is absent).
export const STRING = 1;
export const NUMBER = 2;
/** `true`, `false` or `null`. */
export const LITERAL = 3;

// Canonical keys, as bits of a reader's `seen`.
export const K_TS = 1;
export const K_TYPE = 2;
export const K_RESOURCE = 4;
export const K_OWNER = 8;
export const K_LEASE = 16;
export const K_OPERATION = 32;
export const K_TOKEN = 64;
export const K_TTL = 128;
export const K_RESULT = 256;
export const K_OBSERVER = 512;
export const K_SOURCE = 1024;
/** `hostname` (pino, bunyan) or `host.name` (ECS): the clock domain when `source` is absent. */
export const K_HOST = 2048;

/** The event types, in the order a reader's type index counts them. */
export const TYPES: readonly EventType[] = EVENT_TYPES;
/** The observers, in the order a reader's observer index counts them. */
export const OBSERVER_NAMES: readonly Observer[] = OBSERVERS;
/** RESULTS of each type, by type index (an array read, not a keyed property lookup, on the hot path). */
export const RESULTS_BY_TYPE: readonly (readonly string[])[] = TYPES.map((t) => RESULTS[t]);
const DEFAULT_OBSERVER: readonly Observer[] = TYPES.map(defaultObserver);
const WRITE = TYPES.indexOf('write');

/** Longest fenceToken a fast reader reads (longer ones: the general path says why). */
const MAX_TOKEN_DIGITS = 80;
/** Most digits of an integer that is exact as a double (read digit by digit, or written as a JSON number). */
export const MAX_EXACT_DIGITS = 15;

/**
 * The fields' kinds (and the lengths of those that must not be empty) are the ones the schema
 * accepts: `type`, `resource` (not empty) strings; `ts` a string or a number; `result`, `observer`,
 * `ownerId`, `operationId` absent or strings; `ttlMs` absent or a number; `leaseId` absent, a
 * string or a number; `source`, `hostname` absent or non-empty strings. (`fenceToken`: see
 * fenceTokenAccepted.) False: the reader declines.
 */
export function kindsAccepted(
  typeKind: number,
  resKind: number,
  resLen: number,
  tsKind: number,
  resultKind: number,
  obsKind: number,
  ownerKind: number,
  opKind: number,
  ttlKind: number,
  leaseKind: number,
  srcKind: number,
  srcLen: number,
  hostKind: number,
  hostLen: number,
): boolean {
  if (typeKind !== STRING || resKind !== STRING || resLen === 0) return false;
  if (tsKind !== STRING && tsKind !== NUMBER) return false;
  if ((resultKind !== 0 && resultKind !== STRING) || (obsKind !== 0 && obsKind !== STRING)) return false;
  if ((ownerKind !== 0 && ownerKind !== STRING) || (opKind !== 0 && opKind !== STRING)) return false;
  if ((ttlKind !== 0 && ttlKind !== NUMBER) || (leaseKind !== 0 && leaseKind !== STRING && leaseKind !== NUMBER)) return false;
  if (srcKind !== 0 && (srcKind !== STRING || srcLen === 0)) return false;
  if (hostKind !== 0 && (hostKind !== STRING || hostLen === 0)) return false;
  return true;
}

/** The epoch ms of a `ts` written as a JSON number (its value `v`), or undefined: decline. */
export function timestampOfNumber(v: number): number | undefined {
  const time = parseTimestamp(v);
  return time.ok ? time.ms : undefined;
}

/**
 * The result of an event of type TYPES[typeIndex]: its default when the key is absent (`resultKind`
 * 0; a write has none, so it declines), else the name at `index` of RESULTS_BY_TYPE[typeIndex] (the
 * one the string matched, -1 for none). Undefined: decline. Kinds as kindsAccepted checked them.
 */
export function resultOf(typeIndex: number, resultKind: number, index: number): string | undefined {
  const results = RESULTS_BY_TYPE[typeIndex]!;
  if (resultKind === 0) return typeIndex === WRITE ? undefined : results[0]; // required for writes
  return index === -1 ? undefined : results[index];
}

/** The observer: the type's default when the key is absent, else OBSERVER_NAMES[index] (-1: none matched, decline). */
export function observerOf(typeIndex: number, obsKind: number, index: number): Observer | undefined {
  if (obsKind === 0) return DEFAULT_OBSERVER[typeIndex];
  return index === -1 ? undefined : OBSERVER_NAMES[index];
}

/**
 * A present `fenceToken` of `len` characters (`digits`: all ASCII digits, at least one) is read by
 * the fast path: a decimal string of at most 80 digits, or a plain integer literal small enough to
 * be exact as a double (at most 15 digits). False: decline.
 */
export function fenceTokenAccepted(kind: number, len: number, digits: boolean): boolean {
  if (len > MAX_TOKEN_DIGITS || !digits) return false; // long ones: the general path says why
  return kind === NUMBER ? len <= MAX_EXACT_DIGITS : kind === STRING;
}

/**
 * A `leaseId` written as a JSON number of `len` characters is read as the text it is written as
 * (its String() is the same text): an integer (`neg`: 1 when it starts with `-`; `digits`: the
 * rest is all ASCII digits) small enough to be exact, and not `-0` (`last`: its last character's
 * code). False: decline.
 */
export function numericLeaseAccepted(len: number, neg: number, digits: boolean, last: number): boolean {
  if (!digits || len - neg > MAX_EXACT_DIGITS) return false;
  return !(neg === 1 && len === 2 && last === 48); // -0
}

/** A `ttlMs` whose value is `v` is one the schema accepts (not negative, finite). */
export function ttlAccepted(v: number): boolean {
  return v >= 0 && Number.isFinite(v);
}

