/**
 * A line's content as the duplicate check compares it (duplicates.ts), in 32 bytes: the SHA-256
 * of a canonical serialization of its parsed record, so that remembering a long line costs the
 * same as remembering a short one. Two contents have the same digest exactly when the duplicate
 * check's comparison calls them the same record: values compared as parsed (a key written twice
 * counts once, with its last value, as JSON.parse reads it), key order aside, and each top-level
 * value that is a timestamp by its instant (`…00.000Z` and the same epoch ms are one value). Two
 * different records with one digest would take a SHA-256 collision, which no one can make: the
 * digest is as safe as the comparison of the texts it replaces, also against hostile input.
 *
 * The digest is made from a parsed value (digestOfValue: a record, or a line's text parsed), or
 * straight from the bytes of a line the canonical byte path read (digestOfBytes: one flat object
 * of ASCII keys and values without escapes), without decoding the line; both give the same
 * digest for the same record (test/long-lines.test.ts).
 *
 * The serialization: a string is `s<length in UTF-16 units>:` and its UTF-8 bytes (a string that
 * is not well-formed UTF-16, a lone surrogate, is `w<length>:` and its UTF-16 units, so that two
 * such strings never meet in U+FFFD); a number `n<String(n)>;`; a timestamp at the top level
 * `T<ms>;`; `t` `f` `z` `u` for true, false, null and undefined; an object `o<count>{` and an
 * array `a<count>[` followed by their keys in sorted order, each key a string and its value; the
 * record itself `r<count>{` and its keys likewise, and a line that is not JSON `x` and its text.
 * Every piece says where it ends, so the serialization of two different records always differs.
 */
import { createHash, type Hash } from 'node:crypto';
import { parseTimestamp } from '../model/time.js';

/** A remembered line's content, as its digest. */
export class LineDigest {
  constructor(readonly value: string) {}
}

/** What a digest of a remembered line costs, in characters of the duplicate check's budget. */
export const DIGEST_CHARS = 64;

/** The digest of a line's text: of its record when it is JSON, else of the text itself. */
export function digestOfText(text: string): LineDigest {
  let x: unknown;
  try {
    x = JSON.parse(text);
  } catch {
    const h = createHash('sha256');
    h.update('x');
    str(h, text);
    return done(h);
  }
  return digestOfValue(x);
}

/** The digest of a parsed record (or of any value a line parsed to). */
export function digestOfValue(x: unknown): LineDigest {
  const h = createHash('sha256');
  if (isRecord(x)) {
    const keys = Object.keys(x).sort();
    h.update(`r${keys.length}{`);
    for (const k of keys) {
      str(h, k);
      top(h, x[k]);
    }
  } else {
    h.update('v');
    value(h, x);
  }
  return done(h);
}

/**
 * The digest of the line at bytes [start, end) of `b`, which the canonical byte path read: one
 * flat JSON object whose keys and string values are ASCII without escapes or control characters,
 * its other values numbers, true, false or null, and only spaces between them. The same digest
 * as digestOfText of the line's text.
 */
export function digestOfBytes(b: Buffer, start: number, end: number): LineDigest {
  const fields = flatFields(b, start, end);
  // Sorted by key (ASCII: byte order is the order of sort()); of a key written twice, the last.
  const order = Array.from({ length: fields.length / 5 }, (_, i) => i * 5);
  order.sort((p, q) => b.compare(b, fields[q]!, fields[q + 1]!, fields[p]!, fields[p + 1]!) || p - q);
  const kept: number[] = [];
  for (let j = 0; j < order.length; j++) {
    const p = order[j]!;
    const next = order[j + 1];
    if (next !== undefined && b.compare(b, fields[next]!, fields[next + 1]!, fields[p]!, fields[p + 1]!) === 0) continue; // a later one follows
    kept.push(p);
  }
  const h = createHash('sha256');
  h.update(`r${kept.length}{`);
  for (const p of kept) {
    const [ks, ke, vs, ve, kind] = [fields[p]!, fields[p + 1]!, fields[p + 2]!, fields[p + 3]!, fields[p + 4]!];
    h.update(`s${ke - ks}:`);
    h.update(b.subarray(ks, ke));
    if (kind === STRING) {
      // A timestamp needs at least `YYYY-` and 20 characters (see model/time.ts): only those are parsed.
      if (ve - vs >= 20 && b[vs + 4] === 45 && digits4(b, vs)) {
        const t = parseTimestamp(b.toString('latin1', vs, ve));
        if (t.ok) {
          h.update(`T${t.ms};`);
          continue;
        }
      }
      h.update(`s${ve - vs}:`);
      h.update(b.subarray(vs, ve));
    } else if (kind === NUMBER) top(h, Number(b.toString('latin1', vs, ve)));
    else h.update(b[vs] === 116 ? 't' : b[vs] === 102 ? 'f' : 'z');
  }
  return done(h);
}

const STRING = 1;
const NUMBER = 2;
const LITERAL = 3;

/**
 * The fields of a flat object (see digestOfBytes), five numbers each: key start and end, value
 * start and end (a string's without its quotes), and the value's kind.
 */
function flatFields(b: Buffer, start: number, end: number): number[] {
  const out: number[] = [];
  let i = b.indexOf(123, start); // {
  i++;
  for (;;) {
    while (i < end && b[i] === 32) i++;
    if (b[i] !== 34) break; // } (the byte path read it as one object)
    const ks = i + 1;
    const ke = b.indexOf(34, ks);
    i = b.indexOf(58, ke) + 1; // :
    while (b[i] === 32) i++;
    let vs = i;
    let ve: number;
    let kind: number;
    if (b[i] === 34) {
      vs = i + 1;
      ve = b.indexOf(34, vs);
      i = ve + 1;
      kind = STRING;
    } else {
      while (i < end && b[i] !== 44 && b[i] !== 125 && b[i] !== 32) i++;
      ve = i;
      const c = b[vs]!;
      kind = c === 116 || c === 102 || c === 110 ? LITERAL : NUMBER;
    }
    out.push(ks, ke, vs, ve, kind);
    while (i < end && b[i] === 32) i++;
    if (b[i] === 44) i++; // ,
    else break;
  }
  return out;
}

function digits4(b: Buffer, i: number): boolean {
  for (let k = i; k < i + 4; k++) if (b[k]! < 48 || b[k]! > 57) return false;
  return true;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/** A top-level value: a timestamp by its instant, anything else as it is. */
function top(h: Hash, v: unknown): void {
  const t = parseTimestamp(v);
  if (t.ok) h.update(`T${t.ms};`);
  else value(h, v);
}

/** A value never the same as any other: NaN (which the comparison finds equal to nothing), a function… */
let unique = 0;

function value(h: Hash, v: unknown): void {
  switch (typeof v) {
    case 'string':
      str(h, v);
      return;
    case 'number':
      if (Number.isNaN(v)) h.update(`N${unique++};`);
      else h.update(`n${String(v)};`);
      return;
    case 'boolean':
      h.update(v ? 't' : 'f');
      return;
    case 'undefined':
      h.update('u');
      return;
    case 'bigint':
      h.update(`b${String(v)};`);
      return;
    case 'object': {
      if (v === null) {
        h.update('z');
        return;
      }
      const keys = Object.keys(v).sort();
      h.update(`${Array.isArray(v) ? 'a' : 'o'}${keys.length}${Array.isArray(v) ? '[' : '{'}`);
      for (const k of keys) {
        str(h, k);
        value(h, (v as Record<string, unknown>)[k]);
      }
      return;
    }
    default:
      h.update(`N${unique++};`);
  }
}

function str(h: Hash, s: string): void {
  if ((s as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    h.update(`s${s.length}:`);
    h.update(s, 'utf8');
  } else {
    h.update(`w${s.length}:`);
    h.update(s, 'utf16le');
  }
}

function done(h: Hash): LineDigest {
  return new LineDigest(h.digest('base64'));
}

/** Keys of a shortened line are kept whole: a line with a longer key is not shortened. */
const MAX_SHORTENED_KEY = 1024;

/**
 * The line at bytes [start, end) of `b` (read by the canonical byte path, see digestOfBytes) with
 * every string value longer than `keep` characters cut to its first `keep`: a copy of the line
 * that is small however long its values are, and shows the same display fields when `keep` is
 * more than the display clip (model/event.ts). Undefined when a key is too long to keep whole.
 */
export function shortenedLine(b: Buffer, start: number, end: number, keep: number): string | undefined {
  const fields = flatFields(b, start, end);
  const pieces: Buffer[] = [];
  let at = start;
  for (let p = 0; p < fields.length; p += 5) {
    if (fields[p + 1]! - fields[p]! > MAX_SHORTENED_KEY) return undefined;
    const vs = fields[p + 2]!;
    const ve = fields[p + 3]!;
    if (fields[p + 4] !== STRING || ve - vs <= keep) continue;
    pieces.push(b.subarray(at, vs + keep));
    at = ve;
  }
  pieces.push(b.subarray(at, end));
  return Buffer.concat(pieces).toString('latin1');
}
