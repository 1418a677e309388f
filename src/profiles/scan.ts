/**
 * A small scanner over the raw text of one JSON object, for the two questions JSON.parse cannot
 * answer: is a top-level key written more than once (it keeps the last silently), and what are
 * the exact digits of a top-level number (it rounds above 2^53)? Only called when a cheap check
 * says it might matter, so the hot path stays JSON.parse alone.
 */

export interface TopLevelKey {
  /** How many times the key appears at the top level of the object. */
  count: number;
  /** The raw text of its last value, when that value is a number. */
  number?: string;
}

/** Scan `text` (one JSON object) for the top-level key `key`. Undefined when the text is not an object. */
export function scanTopLevelKey(text: string, key: string): TopLevelKey | undefined {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 123 /* { */) return undefined;
  i++;
  const out: TopLevelKey = { count: 0 };
  for (;;) {
    i = skipSpace(text, i);
    if (text.charCodeAt(i) === 125 /* } */) return out;
    if (text.charCodeAt(i) !== 34 /* " */) return undefined;
    const keyEnd = stringEnd(text, i);
    if (keyEnd === -1) return undefined;
    const raw = text.slice(i, keyEnd + 1);
    const name = raw.includes('\\') ? safeParse(raw) : raw.slice(1, -1);
    i = skipSpace(text, keyEnd + 1);
    if (text.charCodeAt(i) !== 58 /* : */) return undefined;
    i = skipSpace(text, i + 1);
    const valueStart = i;
    i = valueEnd(text, i);
    if (i === -1) return undefined;
    if (name === key) {
      out.count++;
      const v = text.slice(valueStart, i);
      out.number = /^-?\d/.test(v) ? v.trim() : undefined;
    }
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === 44 /* , */) i++;
    else if (c === 125) return out;
    else return undefined;
  }
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
