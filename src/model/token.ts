/** Exact fencing-token and identifier handling. Tokens are compared as BigInt, never as doubles. */

const DIGITS = /^[0-9]+$/;

/**
 * Longest token accepted, in significant digits (leading zeros aside). Real tokens (revisions,
 * zxids, counters) are at most 20 digits; a longer "token" is a logging mistake or hostile input,
 * and would cost time and memory in every comparison.
 */
export const MAX_TOKEN_DIGITS = 80;

function tooLong(digits: string): TokenParse | undefined {
  if (digits.length <= MAX_TOKEN_DIGITS) return undefined;
  let i = 0;
  while (i < digits.length - 1 && digits.charCodeAt(i) === 48) i++;
  const n = digits.length - i;
  return n > MAX_TOKEN_DIGITS ? { ok: false, reason: `fenceToken has ${n} digits; tokens of more than ${MAX_TOKEN_DIGITS} digits are refused` } : undefined;
}

export type TokenParse = { ok: true; value: bigint } | { ok: false; reason: string };

/**
 * Parse a fencing token given as a JSON number or a decimal string.
 * `literal` is the exact digits of the number as written in the source text, when the caller
 * recovered it (numbers above 2^53 lose precision in JSON.parse).
 */
export function parseFenceToken(value: unknown, literal?: string): TokenParse {
  if (typeof value === 'string') {
    if (!DIGITS.test(value)) return { ok: false, reason: `fenceToken ${JSON.stringify(clip(value))} is not a non-negative decimal integer` };
    return tooLong(value) ?? { ok: true, value: BigInt(value) };
  }
  if (typeof value === 'number') {
    if (value === Infinity && literal !== undefined && DIGITS.test(literal)) return tooLong(literal) ?? { ok: true, value: BigInt(literal) };
    if (value === Infinity) return { ok: false, reason: `fenceToken is a number of more than 308 digits; tokens of more than ${MAX_TOKEN_DIGITS} digits are refused` };
    if (!Number.isFinite(value) || !Number.isInteger(value)) return { ok: false, reason: `fenceToken ${value} is not an integer` };
    if (value < 0) return { ok: false, reason: `fenceToken ${value} is negative` };
    if (Number.isSafeInteger(value)) return { ok: true, value: BigInt(value) };
    if (literal !== undefined && DIGITS.test(literal)) return tooLong(literal) ?? { ok: true, value: BigInt(literal) };
    return {
      ok: false,
      reason: `fenceToken ${value} is above 2^53 and cannot be read exactly from a JSON number; log it as a decimal string`,
    };
  }
  return { ok: false, reason: `fenceToken must be a non-negative integer or a decimal string, got ${typeof value}` };
}

/** Total order on tokens. */
export function compareTokens(a: bigint, b: bigint): -1 | 0 | 1 {
  return a < b ? -1 : a > b ? 1 : 0;
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}
