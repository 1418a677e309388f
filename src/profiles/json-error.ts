/**
 * Where a JSON text is broken, as `line L, column C` (both from 1), for messages about files a
 * person edits (mapping files). V8's messages give a character offset, or only a quoted excerpt
 * (`Unexpected token 'x', "…" is not valid JSON`), so the offset is found by a small scanner.
 */

/** The offset of the first syntax error in `text`, or undefined when it is valid JSON. */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  class Stop extends Error {}
  const fail = (): never => {
    throw new Stop();
  };
  const literal = (word: string) => {
    for (const c of word) {
      if (text[i] !== c) fail();
      i++;
    }
  };
  const string = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail();
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail();
      } else i++;
    }
  };
  const digits = () => {
    const start = i;
    while (i < text.length && text[i]! >= '0' && text[i]! <= '9') i++;
    if (i === start) fail();
  };
  const number = () => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits();
    if (text[i] === '.') {
      i++;
      digits();
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits();
    }
  };
  // Iterative over nesting, so a deeply nested text cannot exhaust the stack.
  const stack: ('{' | '[')[] = [];
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      ws();
      if (text[i] === (c === '{' ? '}' : ']')) {
        stack.pop();
        i++;
        return;
      }
      if (c === '{') key();
      return 'open';
    }
    if (c === '"') string();
    else if (c === 't') literal('true');
    else if (c === 'f') literal('false');
    else if (c === 'n') literal('null');
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) number();
    else fail();
    return;
  };
  const key = () => {
    if (text[i] !== '"') fail();
    string();
    ws();
    if (text[i] !== ':') fail();
    i++;
  };
  try {
    let opened = value() === 'open';
    for (;;) {
      if (opened) {
        opened = value() === 'open';
        continue;
      }
      if (stack.length === 0) break;
      ws();
      const top = stack[stack.length - 1]!;
      if (text[i] === ',') {
        i++;
        if (top === '{') {
          ws();
          key();
        }
        opened = value() === 'open';
      } else if (text[i] === (top === '{' ? '}' : ']')) {
        stack.pop();
        i++;
      } else fail();
    }
    ws();
    return i < text.length ? i : undefined;
  } catch (err) {
    if (err instanceof Stop) return Math.min(i, text.length);
    throw err;
  }
}

/** 1-based line and column of an offset (a CRLF counts as one line end). */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let k = 0; k < offset && k < text.length; k++) {
    if (text[k] === '\n') {
      line++;
      start = k + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/**
 * `line 3, column 14: Expected ',' or '}' after property value` for the error JSON.parse threw on
 * `text`: V8's reason without its offset or its excerpt of the text.
 */
export function describeJsonError(text: string, err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  const given = /\bat position (\d+)/.exec(raw);
  const offset = given !== null ? Number(given[1]) : jsonErrorOffset(text);
  const reason = raw
    .replace(/ in JSON at position \d+.*$/s, '')
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/ \(line \d+ column \d+\)$/, '')
    // An invisible character: named by its code point (a line end, a tab, a byte order mark).
    .replace(/^Unexpected token '([\u0000-\u001f\u007f\ufeff])'/, (_, c: string) => `Unexpected character U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
  if (offset === undefined) return reason;
  const { line, column } = lineColumn(text, offset);
  return `line ${line}, column ${column}: ${reason}`;
}
