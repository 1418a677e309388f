/**
 * A small scanner over the raw text of one JSON object, for the two questions JSON.parse cannot
 * answer: is a top-level key written more than once, escaped or not (it keeps the last
 * silently), and what are
 * the exact digits of a top-level number (it rounds above 2^53)? Only called when a cheap check
 * says it might matter, so the hot path stays JSON.parse alone.
 */

export interface TopLevelKey {
  /** How many times the key appears at the top level of the object. */
  count: number;
  /** The raw text of its last value, when that value is a number. */
  number?: string;
  /** Every copy of the key has the same raw value text. */
  same: boolean;
}

/**
 * Call `visit(name, rawKey, rawValue)` for each top-level member of `text` (one JSON object), the
 * name unescaped (`"res\u0075lt"` is `result`), until it returns true. False when the text is
 * not an object.
 */
function eachTopLevel(text: string, visit: (name: string, rawKey: string, rawValue: string) => boolean): boolean {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 123 /* { */) return false;
  i++;
  for (;;) {
    i = skipSpace(text, i);
    if (text.charCodeAt(i) === 125 /* } */) return true;
    if (text.charCodeAt(i) !== 34 /* " */) return false;
    const keyEnd = stringEnd(text, i);
    if (keyEnd === -1) return false;
    const raw = text.slice(i, keyEnd + 1);
    const name = raw.includes('\\') ? safeParse(raw) : raw.slice(1, -1);
    i = skipSpace(text, keyEnd + 1);
    if (text.charCodeAt(i) !== 58 /* : */) return false;
    i = skipSpace(text, i + 1);
    const valueStart = i;
    i = valueEnd(text, i);
    if (i === -1) return false;
    if (visit(name, raw, text.slice(valueStart, i))) return true;
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === 44 /* , */) i++;
    else if (c === 125) return true;
    else return false;
  }
}

/** Scan `text` (one JSON object) for the top-level key `key`. Undefined when the text is not an object. */
export function scanTopLevelKey(text: string, key: string): TopLevelKey | undefined {
  const out: TopLevelKey = { count: 0, same: true };
  let first: string | undefined;
  const ok = eachTopLevel(text, (name, _raw, v) => {
    if (name !== key) return false;
    out.count++;
    if (first === undefined) first = v;
    else if (v !== first) out.same = false;
    out.number = /^-?\d/.test(v) ? v.trim() : undefined;
    return false;
  });
  return ok ? out : undefined;
}

/** Which keys of a line to guard against repetition: the names, and each quoted as in JSON text. */
export interface KeyGuard {
  readonly keys: ReadonlySet<string>;
  readonly quoted: ReadonlyMap<string, string>;
}

export function keyGuard(keys: Iterable<string>): KeyGuard {
  const set = new Set(keys);
  return { keys: set, quoted: new Map([...set].map((k) => [k, JSON.stringify(k)])) };
}

/**
 * The reason a line is invalid when it writes a guarded top-level key twice with different values
 * (JSON.parse keeps the last copy silently), else undefined. Copies with the same value are
 * harmless (pino's child loggers repeat keys). Cheap on ordinary lines: nothing more is done when
 * the line has as many colons as the record has keys; otherwise the line is scanned only when it
 * holds a backslash (a key may be escaped, `"res\u0075lt"`) or the quoted name of a guarded key
 * that the record has appears in it twice.
 */
export function repeatedKey(text: string, record: Record<string, unknown>, guard: KeyGuard): string | undefined {
  // Each member of the object has its own colon, so as many colons as distinct keys means no
  // member repeats (escaped or not): one native search per key, the common case for flat lines.
  let keys = 0;
  for (const _ in record) keys++;
  let colons = 0;
  for (let at = text.indexOf(':'); at !== -1 && colons <= keys; at = text.indexOf(':', at + 1)) colons++;
  if (colons === keys) return undefined;
  if (!text.includes('\\')) {
    let suspect = false;
    for (const key in record) {
      const q = guard.quoted.get(key);
      if (q === undefined) continue;
      const at = text.indexOf(q);
      if (at !== -1 && text.lastIndexOf(q) !== at) {
        suspect = true;
        break;
      }
    }
    if (!suspect) return undefined;
  }
  const seen = new Map<string, { raw: string; value: string }>();
  let found: { key: string; spelled: string | undefined } | undefined;
  eachTopLevel(text, (name, raw, value) => {
    if (!guard.keys.has(name)) return false;
    const before = seen.get(name);
    if (before === undefined) {
      seen.set(name, { raw, value });
      return false;
    }
    if (sameValue(before.value, value)) return false;
    const escaped = [before.raw, raw].find((r) => r.includes('\\'));
    found = { key: name, spelled: escaped };
    return true;
  });
  if (found === undefined) return undefined;
  const { key, spelled } = found;
  return `key "${key}" appears more than once in the line with different values${spelled === undefined ? '' : ` (once written ${spelled})`}; JSON keeps the last one, which may not be what was meant`;
}

/**
 * Do two raw JSON values mean the same? Numbers beyond 2^53 only when written alike (JSON.parse
 * would make different tokens equal); a string and a number never.
 */
function sameValue(a: string, b: string): boolean {
  if (a === b) return true;
  let x: unknown;
  let y: unknown;
  try {
    x = JSON.parse(a);
    y = JSON.parse(b);
  } catch {
    return false;
  }
  if (typeof x !== typeof y) return false;
  if (typeof x === 'number') return x === y && Math.abs(x) <= Number.MAX_SAFE_INTEGER;
  if (typeof x !== 'object' || x === null) return x === y;
  return JSON.stringify(x) === JSON.stringify(y);
}

function skipSpace(t: string, i: number): number {
  for (;;) {
    const c = t.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) i++;
    else return i;
  }
}

/** Index of the closing quote of the string starting at `i`, or -1. */
function stringEnd(t: string, i: number): number {
  for (let j = i + 1; j < t.length; j++) {
    const c = t.charCodeAt(j);
    if (c === 92 /* \ */) j++;
    else if (c === 34) return j;
  }
  return -1;
}

/** Index just past the value starting at `i` (string, number, literal, object or array), or -1. */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === 34) {
    const e = stringEnd(t, i);
    return e === -1 ? -1 : e + 1;
  }
  if (c === 123 || c === 91) {
    let depth = 0;
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j);
      if (d === 34) {
        j = stringEnd(t, j);
        if (j === -1) return -1;
      } else if (d === 123 || d === 91) depth++;
      else if (d === 125 || d === 93) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < t.length) {
    const d = t.charCodeAt(j);
    if (d === 44 || d === 125 || d === 32 || d === 9 || d === 10 || d === 13) break;
    j++;
  }
  return j === i ? -1 : j;
}

function safeParse(raw: string): string {
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw;
  }
}
