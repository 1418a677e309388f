/**
 * The fast path of the canonical profile: one pass over the line's text, without JSON.parse, the
 * record object, the schema validator or the duplicate-key scan. It reads only the common shape
 * (one flat object of strings, numbers and literals, no escapes) and answers `undefined` whenever
 * it is not sure: an escape, a control character, a nested value, a canonical key written twice,
 * a value the schema would reject, a token above 2^53 written as a number… The caller then takes
 * the general path (JSON.parse, the schema, the exact checks), which gives the same event or the
 * reason the line is invalid. So the fast path changes speed, never results; the property tests
 * and the fixtures check both paths against each other.
 *
 * The event keeps the line's text instead of a parsed record: display fields are parsed from it
 * only when a report needs them.
 */
import type { LockEvent } from '../model/event.js';
import { fastTimestampIn, parseTimestamp } from '../model/time.js';
import { fenceTokenAccepted, K_HOST, K_LEASE, K_OBSERVER, K_OPERATION, K_OWNER, K_RESOURCE, K_RESULT, K_SOURCE, K_TOKEN, K_TS, K_TTL, K_TYPE, kindsAccepted, LITERAL, NUMBER, numericLeaseAccepted, OBSERVER_NAMES, observerOf, resultOf, RESULTS_BY_TYPE, STRING, timestampOfNumber, ttlAccepted, TYPES } from './fast-decisions.js';
import type { RecordOrigin } from './types.js';

/** A control character or a backslash anywhere: the general path decides. */
const NEEDS_GENERAL = /[\u0000-\u001f\\]/;

/** Which canonical key the quoted key at [start, start+len) is (0 for any other key). */
function keyBit(t: string, start: number, len: number): number {
  switch (len) {
    case 2:
      return t.startsWith('ts', start) ? K_TS : 0;
    case 4:
      return t.startsWith('type', start) ? K_TYPE : 0;
    case 5:
      return t.startsWith('ttlMs', start) ? K_TTL : 0;
    case 6:
      return t.startsWith('result', start) ? K_RESULT : t.startsWith('source', start) ? K_SOURCE : 0;
    case 7:
      return t.startsWith('ownerId', start) ? K_OWNER : t.startsWith('leaseId', start) ? K_LEASE : 0;
    case 8:
      return t.startsWith('resource', start) ? K_RESOURCE : t.startsWith('observer', start) ? K_OBSERVER : t.startsWith('hostname', start) ? K_HOST : 0;
    case 9:
      return t.startsWith('host.name', start) ? K_HOST : 0;
    case 10:
      return t.startsWith('fenceToken', start) ? K_TOKEN : 0;
    case 11:
      return t.startsWith('operationId', start) ? K_OPERATION : 0;
    default:
      return 0;
  }
}

/** End (exclusive) of a JSON number starting at i, or -1 when it is not one. */
/** End (exclusive) of the number, `true`, `false` or `null` starting at i, or -1 when there is none. */
export function scalarEnd(t: string, i: number, n: number): number {
  const c = t.charCodeAt(i);
  if (c === 45 || (c >= 48 && c <= 57)) return numberEnd(t, i, n);
  if (c === 116) return t.startsWith('true', i) ? i + 4 : -1;
  if (c === 102) return t.startsWith('false', i) ? i + 5 : -1;
  if (c === 110) return t.startsWith('null', i) ? i + 4 : -1;
  return -1;
}

function numberEnd(t: string, i: number, n: number): number {
  let c = t.charCodeAt(i);
  if (c === 45 /* - */) c = t.charCodeAt(++i);
  if (c === 48 /* 0 */) i++;
  else if (c >= 49 && c <= 57) {
    do c = t.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  } else return -1;
  c = t.charCodeAt(i);
  if (c === 46 /* . */) {
    c = t.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = t.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69 /* e E */) {
    c = t.charCodeAt(++i);
    if (c === 43 || c === 45) c = t.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = t.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  return i > n ? -1 : i;
}

/** [start, end) holds only ASCII digits, at least one. */
function allDigits(t: string, start: number, end: number): boolean {
  if (end <= start) return false;
  for (let i = start; i < end; i++) {
    const c = t.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The index of the entry of `names` equal to the text at [start, end), or -1. */
function indexIn(t: string, start: number, end: number, names: readonly string[]): number {
  const len = end - start;
  for (let k = 0; k < names.length; k++) {
    const name = names[k]!;
    if (name.length === len && t.startsWith(name, start)) return k;
  }
  return -1;
}

// The last value read of a few fields: consecutive lines often repeat them, and one shared string
// is both less garbage and a hash already computed for the engine's map lookups.
let lastResource = '';
let lastOwner = '';
let lastLease = '';
let lastSource = '';

/** The text t[start, end): `last` itself when equal, else a new slice. */
function recent(t: string, start: number, end: number, last: string): string {
  return last.length === end - start && t.startsWith(last, start) ? last : t.slice(start, end);
}

/**
 * The canonical event of one line, or undefined when the general path must decide (see above).
 * Never returns a reason: an invalid line always goes the general way, for its exact message.
 */
export function fastCanonicalEvent(t: string, origin: RecordOrigin): LockEvent | undefined {
  if (NEEDS_GENERAL.test(t)) return undefined;
  const n = t.length;
  let i = 0;
  while (t.charCodeAt(i) === 32) i++;
  if (t.charCodeAt(i) !== 123 /* { */) return undefined;
  i++;
  while (t.charCodeAt(i) === 32) i++;
  if (t.charCodeAt(i) === 125) return undefined; // {}: missing fields, said by the general path

  let seen = 0;
  let tsStart = 0, tsEnd = 0, tsKind = 0;
  let typeStart = 0, typeEnd = 0, typeKind = 0;
  let resStart = 0, resEnd = 0, resKind = 0;
  let ownerStart = 0, ownerEnd = 0, ownerKind = 0;
  let leaseStart = 0, leaseEnd = 0, leaseKind = 0;
  let opStart = 0, opEnd = 0, opKind = 0;
  let tokStart = 0, tokEnd = 0, tokKind = 0;
  let ttlStart = 0, ttlEnd = 0, ttlKind = 0;
  let resultStart = 0, resultEnd = 0, resultKind = 0;
  let obsStart = 0, obsEnd = 0, obsKind = 0;
  let srcStart = 0, srcEnd = 0, srcKind = 0;
  let hostStart = 0, hostEnd = 0, hostKind = 0;

  for (;;) {
    if (t.charCodeAt(i) !== 34 /* " */) return undefined;
    const keyStart = i + 1;
    const keyEnd = t.indexOf('"', keyStart);
    if (keyEnd === -1) return undefined;
    i = keyEnd + 1;
    while (t.charCodeAt(i) === 32) i++;
    if (t.charCodeAt(i) !== 58 /* : */) return undefined;
    i++;
    while (t.charCodeAt(i) === 32) i++;
    const c = t.charCodeAt(i);
    let vs: number;
    let ve: number;
    let kind: number;
    if (c === 34) {
      vs = i + 1;
      ve = t.indexOf('"', vs);
      if (ve === -1) return undefined;
      kind = STRING;
      i = ve + 1;
    } else {
      vs = i;
      ve = scalarEnd(t, i, n);
      if (ve === -1) return undefined; // nested object or array, or not JSON
      kind = c === 116 || c === 102 || c === 110 ? LITERAL : NUMBER;
      i = ve;
    }

    const bit = keyBit(t, keyStart, keyEnd - keyStart);
    if (bit !== 0) {
      if ((seen & bit) !== 0) return undefined; // written twice: the general path says what it means
      seen |= bit;
      switch (bit) {
        case K_TS: tsStart = vs; tsEnd = ve; tsKind = kind; break;
        case K_TYPE: typeStart = vs; typeEnd = ve; typeKind = kind; break;
        case K_RESOURCE: resStart = vs; resEnd = ve; resKind = kind; break;
        case K_OWNER: ownerStart = vs; ownerEnd = ve; ownerKind = kind; break;
        case K_LEASE: leaseStart = vs; leaseEnd = ve; leaseKind = kind; break;
        case K_OPERATION: opStart = vs; opEnd = ve; opKind = kind; break;
        case K_TOKEN: tokStart = vs; tokEnd = ve; tokKind = kind; break;
        case K_TTL: ttlStart = vs; ttlEnd = ve; ttlKind = kind; break;
        case K_RESULT: resultStart = vs; resultEnd = ve; resultKind = kind; break;
        case K_OBSERVER: obsStart = vs; obsEnd = ve; obsKind = kind; break;
        case K_SOURCE: srcStart = vs; srcEnd = ve; srcKind = kind; break;
        default: hostStart = vs; hostEnd = ve; hostKind = kind; break;
      }
    }
    while (t.charCodeAt(i) === 32) i++;
    const d = t.charCodeAt(i);
    if (d === 44 /* , */) {
      i++;
      while (t.charCodeAt(i) === 32) i++;
      continue;
    }
    if (d !== 125 /* } */) return undefined;
    i++;
    break;
  }
  while (t.charCodeAt(i) === 32) i++;
  if (i !== n) return undefined;

  // Kinds and values as the schema accepts them (fast-decisions.ts); anything else goes the general way.
  if (!kindsAccepted(typeKind, resKind, resEnd - resStart, tsKind, resultKind, obsKind, ownerKind, opKind, ttlKind, leaseKind, srcKind, srcEnd - srcStart, hostKind, hostEnd - hostStart)) return undefined;
  const typeIndex = indexIn(t, typeStart, typeEnd, TYPES);
  if (typeIndex === -1) return undefined;
  const type = TYPES[typeIndex]!;

  let ms: number | undefined;
  if (tsKind === STRING) {
    ms = fastTimestampIn(t, tsStart, tsEnd);
    if (ms === undefined) {
      const time = parseTimestamp(t.slice(tsStart, tsEnd));
      if (!time.ok) return undefined;
      ms = time.ms;
    }
  } else {
    ms = timestampOfNumber(Number(t.slice(tsStart, tsEnd)));
    if (ms === undefined) return undefined;
  }

  const result = resultOf(typeIndex, resultKind, resultKind === STRING ? indexIn(t, resultStart, resultEnd, RESULTS_BY_TYPE[typeIndex]!) : -1);
  if (result === undefined) return undefined;
  const observer = observerOf(typeIndex, obsKind, obsKind === STRING ? indexIn(t, obsStart, obsEnd, OBSERVER_NAMES) : -1);
  if (observer === undefined) return undefined;

  let fenceToken: bigint | undefined;
  if (tokKind !== 0) {
    if (!fenceTokenAccepted(tokKind, tokEnd - tokStart, allDigits(t, tokStart, tokEnd))) return undefined;
    fenceToken = BigInt(t.slice(tokStart, tokEnd));
  }

  let leaseId: string | undefined;
  if (leaseKind === STRING) leaseId = lastLease = recent(t, leaseStart, leaseEnd, lastLease);
  else if (leaseKind === NUMBER) {
    const neg = t.charCodeAt(leaseStart) === 45 ? 1 : 0;
    if (!numericLeaseAccepted(leaseEnd - leaseStart, neg, allDigits(t, leaseStart + neg, leaseEnd), t.charCodeAt(leaseEnd - 1))) return undefined;
    leaseId = t.slice(leaseStart, leaseEnd);
  }

  let ttlMs: number | undefined;
  if (ttlKind === NUMBER) {
    ttlMs = Number(t.slice(ttlStart, ttlEnd));
    if (!ttlAccepted(ttlMs)) return undefined;
  }

  return {
    ts: ms,
    type,
    resource: (lastResource = recent(t, resStart, resEnd, lastResource)),
    ownerId: ownerKind === STRING ? (lastOwner = recent(t, ownerStart, ownerEnd, lastOwner)) : undefined,
    leaseId,
    operationId: opKind === STRING ? t.slice(opStart, opEnd) : undefined,
    fenceToken,
    ttlMs,
    result,
    observer,
    source: srcKind === STRING ? (lastSource = recent(t, srcStart, srcEnd, lastSource)) : hostKind === STRING ? (lastSource = recent(t, hostStart, hostEnd, lastSource)) : origin.source,
    file: origin.file,
    line: origin.line,
    record: undefined,
    text: t,
    fields: undefined,
    offset: origin.offset,
    bytes: origin.bytes,
  };
}
