/**
 * The byte path of the canonical profile: one pass over a line's bytes, straight from the read
 * chunk, without decoding the line into a string. It is the string fast path (fast-canonical.ts)
 * over bytes, and it declines (undefined) in every case that one does, and in more:
 *
 * - any byte of 0x80 or above anywhere in the line (non-ASCII text, or bytes that are not UTF-8:
 *   the caller decodes the line, checks its UTF-8, and takes the string paths);
 * - an escape, a control character, a tab, a nested value, a canonical key written twice, a
 *   value the schema would reject, a token above 2^53 written as a number, a timestamp that is
 *   not plain RFC 3339 or epoch milliseconds…
 *
 * So the byte path changes speed, never results: test/fast-bytes.test.ts checks it against the
 * general path on every fixture line, edge cases and generated lines, and whole reports.
 *
 * Values the engine only compares are not cut out of the line: `type`, `result` and `observer`
 * are the known constants; `resource`, `ownerId`, `leaseId` and `source` are interned by a hash
 * of their bytes in a small table of recent values (bounded: a slot is overwritten on a miss),
 * so a value that repeats creates no new string; tokens and numbers are read from the digits.
 *
 * The event holds no `text`: it comes from a plain file and holds where its line is (`offset`,
 * `bytes`), which is read back when a report shows the event's other fields, and by the duplicate
 * check when it must compare two lines (duplicates.ts). The one exception is a line with a
 * `latencyMs` key, which busy-rate-rising reads from the event's text: such a line keeps it.
 */
import type { LockEvent } from '../model/event.js';
import { MAX_TS_MS, MIN_TS_MS, parseTimestamp } from '../model/time.js';
import { fenceTokenAccepted, K_HOST, K_LEASE, K_OBSERVER, K_OPERATION, K_OWNER, K_RESOURCE, K_RESULT, K_SOURCE, K_TOKEN, K_TS, K_TTL, K_TYPE, kindsAccepted, LITERAL, MAX_EXACT_DIGITS, NUMBER, numericLeaseAccepted, OBSERVER_NAMES, observerOf, resultOf, RESULTS_BY_TYPE, STRING, timestampOfNumber, ttlAccepted, TYPES } from './fast-decisions.js';
import type { RecordOrigin } from './types.js';

/** Not canonical (a bit above fast-decisions.ts's K_*): `latencyMs`, which busy-rate-rising reads from the line. */
const K_LATENCY = 4096;

type Bytes = Uint8Array;

/**
 * Bytes inside a JSON string: 0 for a plain ASCII character, 1 for the closing quote, 2 for what
 * the byte path leaves to the others (a control character, a backslash, a byte of 0x80 or above).
 * The byte after a line in its chunk is a newline or a CR (2), so a scan stops there.
 */
const IN_STRING = new Uint8Array(256).fill(2);
for (let c = 32; c < 128; c++) IN_STRING[c] = 0;
IN_STRING[34] = 1;
IN_STRING[92] = 2;

/** Index of the closing quote of the string whose first byte is at i, or -1 (see IN_STRING). */
function stringEnd(b: Bytes, i: number, n: number): number {
  let k = IN_STRING[b[i]!];
  const far = i + LONG_STRING;
  while (k === 0 && i < far) k = IN_STRING[b[++i]!];
  if (k === 0) {
    // A long string (a 900 KB message): skipped four bytes at a time, then byte by byte again.
    i = plainRun(b, i, n);
    k = IN_STRING[b[i]!];
    while (k === 0) k = IN_STRING[b[++i]!];
  }
  return k === 1 && i < n ? i : -1;
}

/** Bytes of a string read one by one before plainRun takes over. */
const LONG_STRING = 256;

/**
 * The first index from i on (before n) of a byte that is not a plain string character (IN_STRING
 * 0), or a little before it: words of four bytes are tested at once.
 */
function plainRun(b: Bytes, i: number, n: number): number {
  const base = b.byteOffset;
  while (i < n && ((base + i) & 3) !== 0) {
    if (IN_STRING[b[i]!] !== 0) return i;
    i++;
  }
  const words = new Uint32Array(b.buffer, base + i, (n - i) >>> 2);
  let w = 0;
  for (; w < words.length; w++) {
    const x = words[w]!;
    const q = x ^ 0x22222222; // a quote
    const s = x ^ 0x5c5c5c5c; // a backslash
    // A byte below 0x20, a quote or a backslash (a zero byte in q or s), or one of 0x80 or above.
    if ((((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((s - 0x01010101) & ~s) | x) & 0x80808080) break;
  }
  return i + w * 4;
}

/** Buffer's latin1 decoder (for ASCII bytes, the same text as UTF-8), without the encoding switch of toString. */
const latin1 = (Buffer.prototype as unknown as { latin1Slice?: (this: Bytes, s: number, e: number) => string }).latin1Slice ?? function (this: Bytes, s: number, e: number): string {
  return Buffer.from(this.buffer, this.byteOffset, this.byteLength).toString('latin1', s, e);
};

function str(b: Bytes, s: number, e: number): string {
  return latin1.call(b, s, e);
}

/** The bytes of an ASCII name. */
function ascii(name: string): Uint8Array {
  return Uint8Array.from(name, (c) => c.charCodeAt(0));
}

/** b[s, s + name.length) are the bytes `name`. */
function is(b: Bytes, s: number, name: Uint8Array): boolean {
  for (let k = 0; k < name.length; k++) if (b[s + k] !== name[k]) return false;
  return true;
}

// Canonical keys with their closing quote, as bytes.
const Q_TYPE = ascii('type"');
const Q_TTL = ascii('ttlMs"');
const Q_RESULT = ascii('result"');
const Q_RESOURCE = ascii('resource"');
const Q_SOURCE = ascii('source"');
const Q_OWNER = ascii('ownerId"');
const Q_OBSERVER = ascii('observer"');
const Q_OPERATION = ascii('operationId"');
const Q_LEASE = ascii('leaseId"');
const Q_LATENCY = ascii('latencyMs"');
const Q_TOKEN = ascii('fenceToken"');
const Q_HOSTNAME = ascii('hostname"');
const Q_HOST_NAME = ascii('host.name"');

/**
 * The canonical key whose name starts at s (after the opening quote), with its closing quote:
 * its bit, and the name's length above bit 16; 0 for any other key (then scanned as a string).
 */
function keyAt(b: Bytes, s: number): number {
  switch (b[s]) {
    case 116: // t
      if (b[s + 1] === 115 && b[s + 2] === 34) return K_TS | (2 << 16);
      if (is(b, s, Q_TYPE)) return K_TYPE | (4 << 16);
      return is(b, s, Q_TTL) ? K_TTL | (5 << 16) : 0;
    case 114: // r
      if (is(b, s, Q_RESOURCE)) return K_RESOURCE | (8 << 16);
      return is(b, s, Q_RESULT) ? K_RESULT | (6 << 16) : 0;
    case 111: // o
      if (is(b, s, Q_OWNER)) return K_OWNER | (7 << 16);
      if (is(b, s, Q_OPERATION)) return K_OPERATION | (11 << 16);
      return is(b, s, Q_OBSERVER) ? K_OBSERVER | (8 << 16) : 0;
    case 108: // l
      if (is(b, s, Q_LEASE)) return K_LEASE | (7 << 16);
      return is(b, s, Q_LATENCY) ? K_LATENCY | (9 << 16) : 0;
    case 102: // f
      return is(b, s, Q_TOKEN) ? K_TOKEN | (10 << 16) : 0;
    case 115: // s
      return is(b, s, Q_SOURCE) ? K_SOURCE | (6 << 16) : 0;
    case 104: // h
      if (is(b, s, Q_HOSTNAME)) return K_HOST | (8 << 16);
      return is(b, s, Q_HOST_NAME) ? K_HOST | (9 << 16) : 0;
    default:
      return 0;
  }
}

/** End (exclusive) of a JSON number starting at i, or -1 when it is not one (bounded by n). Also the partition key reader's (partition/key.ts). */
export function numberEnd(b: Bytes, i: number, n: number): number {
  let c = b[i];
  if (c === 45 /* - */) c = b[++i];
  if (c === 48 /* 0 */) c = b[++i];
  else if (c !== undefined && c >= 49 && c <= 57) {
    do c = b[++i];
    while (i < n && c! >= 48 && c! <= 57);
  } else return -1;
  if (i < n && c === 46 /* . */) {
    c = b[++i];
    if (!(i < n && c! >= 48 && c! <= 57)) return -1;
    do c = b[++i];
    while (i < n && c! >= 48 && c! <= 57);
  }
  if (i < n && (c === 101 || c === 69) /* e E */) {
    c = b[++i];
    if (i < n && (c === 43 || c === 45)) c = b[++i];
    if (!(i < n && c! >= 48 && c! <= 57)) return -1;
    do c = b[++i];
    while (i < n && c! >= 48 && c! <= 57);
  }
  return i > n ? -1 : i;
}

/** [s, e) holds only ASCII digits, at least one. */
function allDigits(b: Bytes, s: number, e: number): boolean {
  if (e <= s) return false;
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The value of at most 15 digits at [s, e) (exact as a double). */
function digitsValue(b: Bytes, s: number, e: number): number {
  let v = 0;
  for (let i = s; i < e; i++) v = v * 10 + (b[i]! - 48);
  return v;
}

/** The value of the JSON number at [s, e), as Number() reads its text: a plain integer of up to 15 digits digit by digit. */
function numberAt(b: Bytes, s: number, e: number): number {
  return b[s] !== 45 && e - s <= MAX_EXACT_DIGITS && allDigits(b, s, e) ? digitsValue(b, s, e) : Number(str(b, s, e));
}

/** Names and their bytes, for indexIn. */
interface Names<T extends string> {
  readonly names: readonly T[];
  readonly bytes: readonly Uint8Array[];
}

function names<T extends string>(list: readonly T[]): Names<T> {
  return { names: list, bytes: list.map(ascii) };
}

/** The index of the entry of `names` equal to the bytes [s, e), or -1. */
function indexIn<T extends string>(b: Bytes, s: number, e: number, set: Names<T>): number {
  const len = e - s;
  const bytes = set.bytes;
  for (let k = 0; k < bytes.length; k++) {
    const name = bytes[k]!;
    if (name.length === len && is(b, s, name)) return k;
  }
  return -1;
}

const TYPE_NAMES = names(TYPES);
const OBSERVERS_BY_NAME = names(OBSERVER_NAMES);
/** The results of each type, by type index (as RESULTS_BY_TYPE). */
const RESULT_NAMES: readonly Names<string>[] = RESULTS_BY_TYPE.map(names);

// --- Interned values -------------------------------------------------------------------------

/** Slots of the intern table (a power of two); a value longer than MAX_INTERN bytes is not interned. */
const INTERN_SLOTS = 1 << 14;
const MAX_INTERN = 64;
const interned: (string | undefined)[] = new Array<string | undefined>(INTERN_SLOTS).fill(undefined);

/** The string of the ASCII bytes [s, e): the one already made for the same bytes when it is still in the table. */
export function intern(b: Bytes, s: number, e: number): string {
  const len = e - s;
  if (len > MAX_INTERN) return str(b, s, e);
  let h = 0x811c9dc5 ^ len;
  for (let i = s; i < e; i++) h = Math.imul(h ^ b[i]!, 16777619);
  const slot = (h ^ (h >>> 15)) & (INTERN_SLOTS - 1);
  const hit = interned[slot];
  if (hit !== undefined && hit.length === len) {
    let k = 0;
    while (k < len && hit.charCodeAt(k) === b[s + k]) k++;
    if (k === len) return hit;
  }
  const made = str(b, s, e);
  interned[slot] = made;
  return made;
}

/** Empties the intern table (tests; a run does not need it: the table is bounded). */
export function clearInterned(): void {
  interned.fill(undefined);
}

// --- Tokens ------------------------------------------------------------------------------------

const SMALL_TOKENS = 4096;
const smallTokens: bigint[] = Array.from({ length: SMALL_TOKENS }, (_, i) => BigInt(i));

// --- Timestamps --------------------------------------------------------------------------------

// Consecutive lines share their date, hour and minute: the bytes of the last "YYYY-MM-DDTHH:MM"
// prefix read (of a UTC timestamp) and its epoch ms are cached; the rest is read from the digits.
const tsPrefix = new Uint8Array(16);
let tsPrefixOk = false;
let tsPrefixMs = 0;

/** Epoch ms of the RFC 3339 timestamp at bytes [s, e), as parseTimestamp reads it, or undefined when it is not valid. */
export function timestampAt(b: Bytes, s: number, e: number): number | undefined {
  if (tsPrefixOk && e - s >= 20 && e - s <= 24 && b[s + 16] === 58) {
    let k = 0;
    while (k < 16 && b[s + k] === tsPrefix[k]) k++;
    if (k === 16) {
      const s1 = b[s + 17]! - 48;
      const s2 = b[s + 18]! - 48;
      if (s1 >= 0 && s1 <= 5 && s2 >= 0 && s2 <= 9) {
        let i = s + 19;
        let frac = 0;
        let ok = true;
        if (b[i] === 46 /* . */) {
          // At most three digits: exact in integers, as the general parse gives them.
          i++;
          let scale = 100;
          const first = i;
          while (i < e - 1) {
            const d = b[i]! - 48;
            if (d < 0 || d > 9) break;
            frac += d * scale;
            scale /= 10;
            i++;
          }
          if (i === first) ok = false;
        }
        if (ok && i === e - 1 && (b[i] === 90 || b[i] === 122)) {
          const ms = tsPrefixMs + (s1 * 10 + s2) * 1000 + frac;
          if (ms >= MIN_TS_MS && ms < MAX_TS_MS) return ms;
        }
      }
    }
  }
  // The general parse, on the value's text; its minute is cached when it is a UTC timestamp.
  const text = str(b, s, e);
  const time = parseTimestamp(text);
  if (!time.ok) return undefined;
  const last = b[e - 1];
  if (e - s >= 20 && b[s + 10] === 84 && b[s + 13] === 58 && b[s + 16] === 58 && (last === 90 || last === 122)) {
    const minute = parseTimestamp(`${text.slice(0, 16)}:00Z`);
    if (minute.ok) {
      tsPrefix.set(b.subarray(s, s + 16));
      tsPrefixMs = minute.ms;
      tsPrefixOk = true;
    }
  }
  return time.ms;
}

// --- The line ----------------------------------------------------------------------------------

/**
 * The canonical event of the line at bytes [start, end) of `b` (without its newline, CR or BOM),
 * or undefined when the string or general path must decide (see above). Never a reason.
 */
export function fastCanonicalBytes(b: Bytes, start: number, end: number, origin: RecordOrigin): LockEvent | undefined {
  const n = end;
  let i = start;
  while (i < n && b[i] === 32) i++;
  if (b[i] !== 123 /* { */ || i >= n) return undefined;
  i++;
  while (i < n && b[i] === 32) i++;
  if (b[i] === 125) return undefined; // {}: missing fields, said by the general path

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
    if (i >= n || b[i] !== 34 /* " */) return undefined;
    const key = keyAt(b, ++i);
    const bit = key & 0xffff;
    if (key !== 0) i += (key >>> 16) + 1;
    else {
      const keyEnd = stringEnd(b, i, n);
      if (keyEnd === -1) return undefined;
      i = keyEnd + 1;
    }
    while (i < n && b[i] === 32) i++;
    if (i >= n || b[i] !== 58 /* : */) return undefined;
    i++;
    while (i < n && b[i] === 32) i++;
    if (i >= n) return undefined;
    const c = b[i]!;
    let vs: number;
    let ve: number;
    let kind: number;
    if (c === 34) {
      vs = ++i;
      ve = stringEnd(b, i, n);
      if (ve === -1) return undefined;
      i = ve + 1;
      kind = STRING;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      vs = i;
      ve = numberEnd(b, i, n);
      if (ve === -1) return undefined;
      kind = NUMBER;
      i = ve;
    } else if (c === 116 /* t */ && i + 4 <= n && b[i + 1] === 114 && b[i + 2] === 117 && b[i + 3] === 101) {
      vs = i;
      ve = i += 4;
      kind = LITERAL;
    } else if (c === 102 /* f */ && i + 5 <= n && b[i + 1] === 97 && b[i + 2] === 108 && b[i + 3] === 115 && b[i + 4] === 101) {
      vs = i;
      ve = i += 5;
      kind = LITERAL;
    } else if (c === 110 /* n */ && i + 4 <= n && b[i + 1] === 117 && b[i + 2] === 108 && b[i + 3] === 108) {
      vs = i;
      ve = i += 4;
      kind = LITERAL;
    } else return undefined; // nested object or array, or not JSON

    if (bit !== 0) {
      if ((seen & bit) !== 0 && bit !== K_LATENCY) return undefined; // written twice: the general path says what it means
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
        case K_HOST: hostStart = vs; hostEnd = ve; hostKind = kind; break;
        default: break; // latencyMs: only noted
      }
    }
    while (i < n && b[i] === 32) i++;
    if (i >= n) return undefined;
    const d = b[i];
    if (d === 44 /* , */) {
      i++;
      while (i < n && b[i] === 32) i++;
      continue;
    }
    if (d !== 125 /* } */) return undefined;
    i++;
    break;
  }
  while (i < n && b[i] === 32) i++;
  if (i !== n) return undefined;

  // Kinds and values as the schema accepts them (fast-decisions.ts); anything else goes the general way.
  if (!kindsAccepted(typeKind, resKind, resEnd - resStart, tsKind, resultKind, obsKind, ownerKind, opKind, ttlKind, leaseKind, srcKind, srcEnd - srcStart, hostKind, hostEnd - hostStart)) return undefined;
  const typeIndex = indexIn(b, typeStart, typeEnd, TYPE_NAMES);
  if (typeIndex === -1) return undefined;
  const type = TYPES[typeIndex]!;

  const ms = tsKind === STRING ? timestampAt(b, tsStart, tsEnd) : timestampOfNumber(numberAt(b, tsStart, tsEnd));
  if (ms === undefined) return undefined;

  const result = resultOf(typeIndex, resultKind, resultKind === STRING ? indexIn(b, resultStart, resultEnd, RESULT_NAMES[typeIndex]!) : -1);
  if (result === undefined) return undefined;
  const observer = observerOf(typeIndex, obsKind, obsKind === STRING ? indexIn(b, obsStart, obsEnd, OBSERVERS_BY_NAME) : -1);
  if (observer === undefined) return undefined;

  let fenceToken: bigint | undefined;
  if (tokKind !== 0) {
    if (!fenceTokenAccepted(tokKind, tokEnd - tokStart, allDigits(b, tokStart, tokEnd))) return undefined;
    if (tokEnd - tokStart <= MAX_EXACT_DIGITS) {
      const v = digitsValue(b, tokStart, tokEnd);
      fenceToken = v < SMALL_TOKENS ? smallTokens[v]! : BigInt(v);
    } else fenceToken = BigInt(str(b, tokStart, tokEnd));
  }

  let leaseId: string | undefined;
  if (leaseKind === STRING) leaseId = intern(b, leaseStart, leaseEnd);
  else if (leaseKind === NUMBER) {
    const neg = b[leaseStart] === 45 ? 1 : 0;
    if (!numericLeaseAccepted(leaseEnd - leaseStart, neg, allDigits(b, leaseStart + neg, leaseEnd), b[leaseEnd - 1]!)) return undefined;
    leaseId = intern(b, leaseStart, leaseEnd);
  }

  let ttlMs: number | undefined;
  if (ttlKind === NUMBER) {
    ttlMs = numberAt(b, ttlStart, ttlEnd);
    if (!ttlAccepted(ttlMs)) return undefined;
  }

  return {
    ts: ms,
    type,
    resource: intern(b, resStart, resEnd),
    ownerId: ownerKind === STRING ? intern(b, ownerStart, ownerEnd) : undefined,
    leaseId,
    operationId: opKind === STRING ? str(b, opStart, opEnd) : undefined,
    fenceToken,
    ttlMs,
    result,
    observer,
    source: srcKind === STRING ? intern(b, srcStart, srcEnd) : hostKind === STRING ? intern(b, hostStart, hostEnd) : origin.source,
    file: origin.file,
    line: origin.line,
    record: undefined,
    // busy-rate-rising reads latencyMs from the line (the only reader of a line's text as it is read).
    text: (seen & K_LATENCY) !== 0 ? str(b, start, end) : undefined,
    fields: undefined,
    offset: origin.offset,
    bytes: origin.bytes,
  };
}
