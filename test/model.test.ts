import { describe, expect, it } from 'vitest';
import { compareTokens, parseFenceToken } from '../src/model/token.js';
import { parseDuration, parseTimestamp } from '../src/model/time.js';

describe('fence tokens', () => {
  it('reads numbers and decimal strings exactly', () => {
    expect(parseFenceToken(7)).toEqual({ ok: true, value: 7n });
    expect(parseFenceToken('18446744073709551615')).toEqual({ ok: true, value: 18446744073709551615n });
    expect(parseFenceToken('007')).toEqual({ ok: true, value: 7n });
  });

  it('rejects negative, fractional and non-numeric tokens with a reason', () => {
    for (const bad of [-1, 1.5, '-1', '1.5', '1e3', '', 'abc', null, true, {}]) {
      const r = parseFenceToken(bad);
      expect(r.ok, String(bad)).toBe(false);
    }
  });

  it('never rounds a JSON number above 2^53 silently', () => {
    const parsed = JSON.parse('9007199254740993') as number; // rounds to ...992
    const r = parseFenceToken(parsed);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/decimal string/);
    expect(parseFenceToken(parsed, '9007199254740993')).toEqual({ ok: true, value: 9007199254740993n });
  });

  it('compares beyond double precision', () => {
    expect(compareTokens(9007199254740993n, 9007199254740992n)).toBe(1);
    expect(compareTokens(2n, 2n)).toBe(0);
    expect(compareTokens(1n, 2n)).toBe(-1);
  });
});

describe('timestamps', () => {
  it('parses RFC 3339 with Z, offsets and fractions', () => {
    expect(parseTimestamp('2026-03-01T10:00:00Z')).toEqual({ ok: true, ms: Date.UTC(2026, 2, 1, 10) });
    expect(parseTimestamp('2026-03-01T10:00:00.123Z')).toEqual({ ok: true, ms: Date.UTC(2026, 2, 1, 10, 0, 0, 123) });
    expect(parseTimestamp('2026-03-01T12:30:00+02:30')).toEqual({ ok: true, ms: Date.UTC(2026, 2, 1, 10) });
    expect(parseTimestamp('2026-03-01T07:00:00-03:00')).toEqual({ ok: true, ms: Date.UTC(2026, 2, 1, 10) });
    const ns = parseTimestamp('2026-03-01T10:00:00.123456789Z');
    expect(ns.ok && Math.abs(ns.ms - (Date.UTC(2026, 2, 1, 10) + 123.456789)) < 1e-3).toBe(true);
  });

  it('takes epoch milliseconds as numbers', () => {
    expect(parseTimestamp(1772359200000)).toEqual({ ok: true, ms: 1772359200000 });
  });

  it('rejects timestamps without a zone, out of range or of the wrong type', () => {
    for (const bad of ['2026-03-01T10:00:00', '2026-02-30T10:00:00Z', '2026-13-01T10:00:00Z', '2026-03-01T25:00:00Z', 'yesterday', '', null, true, Number.NaN, 1e300]) {
      expect(parseTimestamp(bad).ok, String(bad)).toBe(false);
    }
    expect(parseTimestamp('2024-02-29T00:00:00Z').ok).toBe(true);
    expect(parseTimestamp('2023-02-29T00:00:00Z').ok).toBe(false);
  });

  it('parses durations', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('2s')).toBe(2000);
    expect(parseDuration('1.5m')).toBe(90000);
    expect(parseDuration('40')).toBe(40);
    expect(parseDuration('soon')).toBeUndefined();
  });
});
