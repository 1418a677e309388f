/** Timestamp parsing in our own code (RFC 3339 with a zone, or epoch milliseconds). */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** ECMAScript's Date range, in ms. */
const MAX_MS = 8.64e15;

export type TimeParse = { ok: true; ms: number } | { ok: false; reason: string };

// Fast path: consecutive log lines share their date, hour and minute. The epoch of the
// "YYYY-MM-DDTHH:MM" prefix is cached; seconds, fraction and zone are read by hand.
let cachedPrefix = '';
let cachedPrefixMs = 0;

function fastRfc3339(s: string): number | undefined {
  return fastRfc3339In(s, 0, s.length);
}

/**
 * The fast path on the text t[start, end), without slicing it (the canonical fast path reads
 * timestamps in place). Undefined when the general parse must decide.
 */
function fastRfc3339In(s: string, start: number, end: number): number | undefined {
  // YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)
  if (end - start < 20 || s.charCodeAt(start + 10) !== 84 /* T */ || s.charCodeAt(start + 16) !== 58 || s.charCodeAt(start + 13) !== 58) return undefined;
  if (cachedPrefix.length !== 16 || !s.startsWith(cachedPrefix, start)) return undefined;
  const s1 = s.charCodeAt(start + 17) - 48;
  const s2 = s.charCodeAt(start + 18) - 48;
  if (s1 < 0 || s1 > 5 || s2 < 0 || s2 > 9) return undefined;
  let i = start + 19;
  let frac = 0;
  if (s.charCodeAt(i) === 46 /* . */) {
    let scale = 100;
    i++;
    const first = i;
    while (i < end) {
      const d = s.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      frac += d * scale;
      scale /= 10;
      i++;
    }
    if (i === first) return undefined;
  }
  if (i !== end - 1 || (s.charCodeAt(i) !== 90 /* Z */ && s.charCodeAt(i) !== 122)) return undefined;
  return cachedPrefixMs + (s1 * 10 + s2) * 1000 + frac;
}

/**
 * Epoch ms of the RFC 3339 timestamp at t[start, end) when the cached fast path reads it and it
 * is within range; undefined otherwise (then slice it and call parseTimestamp, which explains).
 */
export function fastTimestampIn(t: string, start: number, end: number): number | undefined {
  const ms = fastRfc3339In(t, start, end);
  return ms !== undefined && ms >= MIN_TS_MS && ms < MAX_TS_MS ? ms : undefined;
}

/** Timestamps outside 1970–2200 are taken as damage (a zeroed clock, a unit mix-up), not as times. */
export const MIN_TS_MS = 0;
export const MAX_TS_MS = Date.UTC(2200, 0, 1);

/** Epoch seconds of 2000-01-01 and 2200-01-01: a number in this range read as milliseconds falls in January–March 1970. */
const SECONDS_2000 = Date.UTC(2000, 0, 1) / 1000;
const SECONDS_2200 = MAX_TS_MS / 1000;

/**
 * The reason for refusing an epoch-milliseconds number that reads as a date before 2000 but as a
 * plausible date (2000–2200) in seconds: a unit mix-up, not a 1970 time. Undefined otherwise.
 */
export function secondsHint(ms: number): string | undefined {
  if (ms < SECONDS_2000 || ms >= SECONDS_2200) return undefined;
  return `ts ${ms} reads as ${isoOf(ms).slice(0, 10)} in milliseconds; as seconds it is ${isoOf(ms * 1000).replace('.000Z', 'Z')}: log epoch milliseconds, or map it with a mapping's timestamp: epoch-s`;
}

export function parseTimestamp(value: unknown): TimeParse {
  if (typeof value === 'number') {
    const hint = secondsHint(value);
    if (hint !== undefined) return { ok: false, reason: hint };
  }
  return inRange(value);
}

/** parseTimestamp without the seconds hint (for numbers converted from another unit). */
function inRange(value: unknown): TimeParse {
  const r = parseTimestampAnyYear(value);
  if (r.ok && (r.ms < MIN_TS_MS || r.ms >= MAX_TS_MS)) {
    return { ok: false, reason: `ts ${JSON.stringify(value)} is outside 1970–2200 (a broken clock or an epoch-unit mix-up?)` };
  }
  return r;
}

function parseTimestampAnyYear(value: unknown): TimeParse {
  if (typeof value === 'string') {
    const fast = fastRfc3339(value);
    if (fast !== undefined) return { ok: true, ms: fast };
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Math.abs(value) > MAX_MS) return { ok: false, reason: `ts ${value} is not a valid epoch-milliseconds number` };
    return { ok: true, ms: value };
  }
  if (typeof value !== 'string') return { ok: false, reason: `ts must be an RFC 3339 string or epoch milliseconds, got ${value === null ? 'null' : typeof value}` };
  const m = RFC3339.exec(value);
  if (m === null) {
    const shown = value.length > 40 ? value.slice(0, 40) + '…' : value;
    return { ok: false, reason: `ts ${JSON.stringify(shown)} is not RFC 3339 with a zone (e.g. 2026-03-01T10:00:00.000Z)` };
  }
  const year = +m[1]!, month = +m[2]!, day = +m[3]!, hour = +m[4]!, min = +m[5]!, sec = +m[6]!;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && !leap ? 28 : DAYS[month - 1]!) || hour > 23 || min > 59 || sec > 60) {
    return { ok: false, reason: `ts ${JSON.stringify(value)} has a field out of range` };
  }
  // Date.UTC reads the years 0–99 as 1900–1999: those are taken 400 years on (146 097 days, the
  // Gregorian cycle) and brought back, so "0070-01-01" is the year 70, outside the range, not 1970.
  const minuteMs = year < 100 ? Date.UTC(year + 400, month - 1, day, hour, min) - 146_097 * 86_400_000 : Date.UTC(year, month - 1, day, hour, min);
  if (value.length >= 16 && value.charCodeAt(10) === 84 && (m[8] === 'Z' || m[8] === 'z')) {
    cachedPrefix = value.slice(0, 16);
    cachedPrefixMs = minuteMs;
  }
  // A leap second (:60) reads as the last millisecond of :59, whatever its fraction: after every
  // other time of that second, before the next minute, and in one piece with the clock domain's order.
  let ms = minuteMs + (sec === 60 ? 59_999 : sec * 1000);
  if (m[7] !== undefined && sec !== 60) ms += Number(m[7]) * 1000;
  if (m[8] !== 'Z' && m[8] !== 'z') {
    const oh = +m[10]!, om = +m[11]!;
    if (oh > 23 || om > 59) return { ok: false, reason: `ts ${JSON.stringify(value)} has an invalid zone offset` };
    const off = (oh * 60 + om) * 60000;
    ms += m[9] === '+' ? -off : off;
  }
  return { ok: true, ms };
}

/** ISO form of epoch ms, keeping sub-millisecond digits out (display only). */
export function isoOf(ms: number): string {
  const d = new Date(Math.floor(ms));
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

/** Units a duration can be written in, as milliseconds each (`µs` is another spelling of `us`). */
export const DURATION_UNITS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, min: 60000, h: 3600000 };
/** The units a mapping's `units` may name, as listed in messages. */
export const DURATION_UNIT_NAMES = ['ns', 'us', 'ms', 's', 'min', 'h'] as const;

/**
 * Parse a duration such as `250ms`, `2s`, `1.5m`, `10min`, `500us`, or a bare number, which is
 * in `bareUnit` (default milliseconds). Returns milliseconds.
 */
export function parseDuration(text: string, bareUnit = 'ms'): number | undefined {
  // [d.]hh:mm:ss[.fff], as .NET writes a TimeSpan ("00:00:10").
  const span = /^\s*(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)\s*$/.exec(text);
  if (span !== null) return ((Number(span[1] ?? 0) * 24 + Number(span[2])) * 60 + Number(span[3])) * 60000 + Number(span[4]) * 1000;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|min|s|m|h)?\s*$/.exec(text);
  if (m === null) return undefined;
  const n = Number(m[1]);
  const unit = m[2] === 'm' ? 'min' : (m[2] ?? bareUnit);
  const factor = DURATION_UNITS[unit];
  return factor === undefined ? undefined : n * factor;
}

/** Short human form of a duration in ms. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${round(ms)}ms`;
  if (ms < 60000) return `${round(ms / 1000)}s`;
  return `${round(ms / 60000)}m`;
}

function round(n: number): string {
  return String(Math.round(n * 100) / 100);
}

export const TIME_FORMATS = ['auto', 'rfc3339', 'epoch-s', 'epoch-ms', 'epoch-us', 'epoch-ns'] as const;
export type TimeFormat = (typeof TIME_FORMATS)[number];

const NUMERIC = /^-?\d+(\.\d+)?$/;
const SQL_UTC = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?) ?(UTC|GMT|Z|[+-]\d{2}:?\d{2})$/;

/**
 * Timestamps as application loggers write them: RFC 3339 / ISO strings (also
 * `2024-01-15 10:30:46.456 UTC` and `+0000` offsets), and epoch seconds (zap's float seconds),
 * milliseconds (pino), microseconds or nanoseconds (OTLP), as numbers or numeric strings.
 * `auto` tells epoch units apart by magnitude.
 */
export function parseTimeValue(value: unknown, format: TimeFormat = 'auto'): TimeParse {
  if (typeof value === 'number' || (typeof value === 'string' && NUMERIC.test(value))) {
    const n = Number(value);
    if (!Number.isFinite(n)) return { ok: false, reason: `timestamp ${String(value)} is not a number` };
    let unit = format;
    if (unit === 'auto') {
      const a = Math.abs(n);
      unit = a < 1e11 ? 'epoch-s' : a < 1e14 ? 'epoch-ms' : a < 1e17 ? 'epoch-us' : 'epoch-ns';
    }
    if (unit === 'rfc3339') return { ok: false, reason: `timestamp ${String(value)} is a number, not RFC 3339` };
    const ms = unit === 'epoch-s' ? n * 1000 : unit === 'epoch-ms' ? n : unit === 'epoch-us' ? n / 1000 : n / 1e6;
    // Only a number read as milliseconds as written gets the seconds hint; other units are checked for range.
    if (unit !== 'epoch-ms') return inRange(ms);
    const hint = secondsHint(ms);
    return hint !== undefined ? { ok: false, reason: hint.replace(/^ts /, 'timestamp ') } : inRange(ms);
  }
  if (typeof value === 'string') {
    if (format !== 'auto' && format !== 'rfc3339') return { ok: false, reason: `timestamp ${JSON.stringify(value.slice(0, 40))} is not a number (${format})` };
    const direct = parseTimestamp(value);
    if (direct.ok) return direct;
    const m = SQL_UTC.exec(value);
    if (m !== null) {
      const zone = m[3] === 'UTC' || m[3] === 'GMT' || m[3] === 'Z' ? 'Z' : m[3]!.length === 5 ? `${m[3]!.slice(0, 3)}:${m[3]!.slice(3)}` : m[3]!;
      return parseTimestamp(`${m[1]}T${m[2]}${zone}`);
    }
    return direct;
  }
  return parseTimestamp(value);
}
