/**
 * The partition key reader of canonical lines (README "Scaling out"): the cheapest look at a
 * line that still gives exactly what the engine would use. One pass over the line's top-level
 * keys, straight from the read chunk: it reads `resource` (which decides the partition), `ts` and
 * the clock domain (`source`, else `hostname`, else `host.name`), and skips every other value
 * (nested or escaped ones too) without building anything. It does not check the rest of the line:
 * a line it reads may still turn out invalid for its own partition, which counts it.
 *
 * It declines (false) whenever the full parse must decide, and the line is then parsed in every
 * partition: a key with a backslash (an escaped key could spell `resource`), one of its keys
 * written twice, `resource` or `source` that is not a string, `host` holding an object (ECS's
 * `host.name`), a `ts` it cannot read, anything that is not one flat-or-nested JSON object.
 *
 * So when the line is an event, the key, the time and the source read here are the event's:
 * test/partition.test.ts checks that differentially against full parsing, on every fixture line
 * and on generated lines with escapes (`\/`, `\u…`), non-ASCII keys, repeated and nested keys.
 */
import { parseTimestamp } from '../model/time.js';
import { intern, numberEnd, timestampAt } from './fast-canonical-bytes.js';

/** What the key reader read from a line (one object, reused: read it before the next line). */
export interface KeyLook {
  /** The resource key: bytes [keyStart, keyEnd) of the line's chunk, or `key` when it was escaped. */
  keyStart: number;
  keyEnd: number;
  key: string | undefined;
  /** The event's time, epoch ms. */
  ts: number;
  /** The event's source (clock domain), or undefined for the input's default. */
  source: string | undefined;
}

// The keys read, by slot.
const K_RESOURCE = 1;
const K_TS = 2;
const K_SOURCE = 3;
const K_HOSTNAME = 4;
const K_HOST_NAME = 5;
const K_HOST = 6;

const STRING = 1;
const SCALAR = 2;

/**
 * Per slot: the value's start and end in the line, its kind, and whether it is plain ASCII without
 * escapes (reused, line after line). Slot k (K_RESOURCE…K_HOST) is at 4 * (k - 1): the layout the
 * WebAssembly pass (key-scan.c) writes too, so finishLook reads either.
 */
const AT = new Int32Array(4 * 6);
/** Ints per slot in AT, and where slot k starts. */
const at = (k: number) => 4 * (k - 1);

/** The key whose bytes are [s, e) (after the opening quote, before the closing one): its slot, or 0. */
function keyOf(b: Uint8Array, s: number, e: number): number {
  switch (e - s) {
    case 2:
      return b[s] === 116 && b[s + 1] === 115 ? K_TS : 0; // ts
    case 4:
      return b[s] === 104 && b[s + 1] === 111 && b[s + 2] === 115 && b[s + 3] === 116 ? K_HOST : 0; // host
    case 6:
      return b[s] === 115 && b[s + 1] === 111 && b[s + 2] === 117 && b[s + 3] === 114 && b[s + 4] === 99 && b[s + 5] === 101 ? K_SOURCE : 0; // source
    case 8:
      if (b[s] === 114) return b[s + 1] === 101 && b[s + 2] === 115 && b[s + 3] === 111 && b[s + 4] === 117 && b[s + 5] === 114 && b[s + 6] === 99 && b[s + 7] === 101 ? K_RESOURCE : 0; // resource
      return b[s] === 104 && b[s + 1] === 111 && b[s + 2] === 115 && b[s + 3] === 116 && b[s + 4] === 110 && b[s + 5] === 97 && b[s + 6] === 109 && b[s + 7] === 101 ? K_HOSTNAME : 0; // hostname
    case 9:
      return b[s] === 104 && b[s + 1] === 111 && b[s + 2] === 115 && b[s + 3] === 116 && b[s + 4] === 46 && b[s + 5] === 110 && b[s + 6] === 97 && b[s + 7] === 109 && b[s + 8] === 101 ? K_HOST_NAME : 0; // host.name
    default:
      return 0;
  }
}

/** End (exclusive) of the nested object or array starting at i (strings inside skipped), or -1. */
function nestedEnd(b: Uint8Array, i: number, n: number): number {
  let depth = 0;
  while (i < n) {
    const c = b[i]!;
    if (c === 34) {
      i++;
      while (i < n && b[i] !== 34) i += b[i] === 92 ? 2 : 1;
      if (i >= n) return -1;
    } else if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) {
      if (--depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}

/** Bytes in a key or a skipped string: 0 plain, 1 the closing quote, 2 a backslash. */
const SKIP = new Uint8Array(256);
SKIP[34] = 1;
SKIP[92] = 2;
/** Bytes in a string that is read: 0 plain ASCII, 1 the closing quote, 2 a backslash, 3 a byte of 0x80 or above. */
const READ = new Uint8Array(256);
READ[34] = 1;
READ[92] = 2;
for (let c = 0x80; c < 256; c++) READ[c] = 3;
/** Bytes that end a number or literal: a comma, a closing brace, a space. */
const SCALAR_END = new Uint8Array(256);
SCALAR_END[44] = 1;
SCALAR_END[125] = 1;
SCALAR_END[32] = 1;
SCALAR_END[93] = 1;

const decoder = new TextDecoder();

/** The JSON string whose quotes are at s - 1 and e, unescaped, or undefined when it is not one. */
function decodeString(b: Uint8Array, s: number, e: number): string | undefined {
  try {
    const v: unknown = JSON.parse(decoder.decode(b.subarray(s - 1, e + 1)));
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Read the resource key, the time and the source of the canonical line at bytes [start, end)
 * into `out`. False when the line must be parsed in full to tell.
 */
export function readKey(b: Uint8Array, start: number, end: number, out: KeyLook): boolean {
  const seen = scanLine(b, start, end);
  return seen !== -1 && finishLook(b, seen, AT, 0, out);
}

/**
 * The structural pass over the line at bytes [start, end): its top-level keys, the values of the
 * keys read into AT. The bits of the slots seen, or -1 when the line must be parsed in full.
 * key-scan.c is the same pass in WebAssembly, over a whole chunk at once (key-scan.ts).
 */
function scanLine(b: Uint8Array, start: number, end: number): number {
  const n = end;
  let i = start;
  while (i < n && b[i] === 32) i++;
  if (i >= n || b[i] !== 123) return -1;
  i++;
  while (i < n && b[i] === 32) i++;
  let seen = 0;
  for (;;) {
    if (i >= n || b[i] !== 34) return -1;
    const ks = ++i;
    // The byte after the line (a newline or CR in the chunk, or past its end) stops the scan too.
    let k = SKIP[b[i]!]!;
    while (k === 0 && i < n) k = SKIP[b[++i]!]!;
    if (k !== 1 || i >= n) return -1; // an escaped key (the full parse says what it is), or the line ends
    const bit = keyOf(b, ks, i);
    i++;
    while (i < n && b[i] === 32) i++;
    if (i >= n || b[i] !== 58) return -1;
    i++;
    while (i < n && b[i] === 32) i++;
    if (i >= n) return -1;
    const c = b[i]!;
    let vs: number;
    let ve: number;
    let kind: number;
    let plain = true;
    if (c === 34) {
      vs = ++i;
      const table = bit === 0 ? SKIP : READ;
      for (;;) {
        let d = table[b[i]!]!;
        while (d === 0 && i < n) d = table[b[++i]!]!;
        if (i >= n) return -1;
        if (d === 1) break;
        plain = false;
        i += d === 2 ? 2 : 1;
      }
      ve = i;
      i++;
      kind = STRING;
    } else if (c === 123 || c === 91) {
      if (bit !== 0) return -1; // a nested resource, ts or source: invalid, or ECS's host object
      const e = nestedEnd(b, i, n);
      if (e === -1) return -1;
      vs = i;
      ve = i = e;
      kind = 0;
    } else {
      vs = i;
      while (i < n && SCALAR_END[b[i]!] === 0) i++;
      ve = i;
      kind = SCALAR;
    }
    if (bit !== 0) {
      if ((seen & (1 << bit)) !== 0) return -1; // written twice: the full parse decides
      seen |= 1 << bit;
      const a = at(bit);
      AT[a] = vs;
      AT[a + 1] = ve;
      AT[a + 2] = kind;
      AT[a + 3] = plain ? 1 : 0;
    }
    while (i < n && b[i] === 32) i++;
    if (i >= n) return -1;
    if (b[i] === 44) {
      i++;
      while (i < n && b[i] === 32) i++;
      continue;
    }
    if (b[i] !== 125) return -1;
    i++;
    break;
  }
  while (i < n && b[i] === 32) i++;
  if (i !== n || (seen & (1 << K_RESOURCE)) === 0 || (seen & (1 << K_TS)) === 0 || AT[at(K_RESOURCE) + 2] !== STRING) return -1;
  return seen;
}

/**
 * The rest of readKey once the structure is read: the slots seen (`seen`), their values at `base`
 * of `slots` (AT's layout, in AT or in the WebAssembly pass's output) over the line's bytes `b`.
 * `known`: the `ts` in epoch ms when the caller read it already (NaN when not). Into `out`; false
 * when the line must be parsed in full.
 */
export function finishLook(b: Uint8Array, seen: number, slots: Int32Array, base: number, out: KeyLook, known = Number.NaN): boolean {
  const hasSource = (seen & (1 << K_SOURCE)) !== 0;
  // A source that is not a non-empty string: invalid, the parse says so.
  if (hasSource && (slots[base + at(K_SOURCE) + 2] !== STRING || slots[base + at(K_SOURCE) + 1] === slots[base + at(K_SOURCE)])) return false;

  let ts: number | undefined;
  const tsS = slots[base + at(K_TS)]!;
  const tsE = slots[base + at(K_TS) + 1]!;
  const tsKind = slots[base + at(K_TS) + 2];
  if (known === known) ts = known; // read already (the WebAssembly pass: a plain UTC timestamp, as timestampAt reads it)
  else if (tsKind === STRING) {
    if (slots[base + at(K_TS) + 3] === 1) ts = timestampAt(b, tsS, tsE);
    else {
      const text = decodeString(b, tsS, tsE);
      if (text === undefined) return false;
      const t = parseTimestamp(text);
      ts = t.ok ? t.ms : undefined;
    }
  } else if (tsKind === SCALAR && numberEnd(b, tsS, tsE) === tsE) {
    const t = parseTimestamp(Number(latin1(b, tsS, tsE)));
    ts = t.ok ? t.ms : undefined;
  }
  if (ts === undefined) return false;

  let source: string | undefined;
  if (hasSource) {
    source = value(b, slots, base, K_SOURCE);
    if (source === undefined) return false; // an escaped source the parse must read
  } else {
    // The logger's host, as hostOf() takes it: a non-empty string, `hostname` before `host.name`.
    if ((seen & (1 << K_HOSTNAME)) !== 0) source = value(b, slots, base, K_HOSTNAME);
    if ((source === undefined || source === '') && (seen & (1 << K_HOST_NAME)) !== 0) source = value(b, slots, base, K_HOST_NAME);
    if (source === '') source = undefined;
  }

  const resS = slots[base + at(K_RESOURCE)]!;
  const resE = slots[base + at(K_RESOURCE) + 1]!;
  if (slots[base + at(K_RESOURCE) + 3] === 1) {
    out.keyStart = resS;
    out.keyEnd = resE;
    out.key = undefined;
  } else {
    const key = decodeString(b, resS, resE);
    if (key === undefined) return false;
    out.key = key;
  }
  out.ts = ts;
  out.source = source;
  return true;
}

/** The string in `slot` (undefined unless it is a non-empty string, or one whose escapes do not decode). */
function value(b: Uint8Array, slots: Int32Array, base: number, slot: number): string | undefined {
  const a = base + at(slot);
  const s = slots[a]!;
  const e = slots[a + 1]!;
  if (slots[a + 2] !== STRING || e === s) return undefined;
  return slots[a + 3] === 1 ? intern(b, s, e) : decodeString(b, s, e);
}

function latin1(b: Uint8Array, s: number, e: number): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1', s, e);
}
