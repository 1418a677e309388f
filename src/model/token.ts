/** Exact fencing-token and identifier handling. Tokens are compared as BigInt, never as doubles. */

const DIGITS = /^[0-9]+$/;

export type TokenParse = { ok: true; value: bigint } | { ok: false; reason: string };

/**
 * Parse a fencing token given as a JSON number or a decimal string.
 * `literal` is the exact digits of the number as written in the source text, when the caller
 * recovered it (numbers above 2^53 lose precision in JSON.parse).
 */
export function parseFenceToken(value: unknown, literal?: string): TokenParse {
  if (typeof value === 'string') {
    if (!DIGITS.test(value)) return { ok: false, reason: `fenceToken ${JSON.stringify(clip(value))} is not a non-negative decimal integer` };
    return { ok: true, value: BigInt(value) };
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || !Number.isInteger(value)) return { ok: false, reason: `fenceToken ${value} is not an integer` };
    if (value < 0) return { ok: false, reason: `fenceToken ${value} is negative` };
    if (Number.isSafeInteger(value)) return { ok: true, value: BigInt(value) };
    if (literal !== undefined && DIGITS.test(literal)) return { ok: true, value: BigInt(literal) };
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
