/** Line parsers for non-JSON logs: logfmt, and klog text (Kubernetes components). */

/**
 * logfmt: `key=value key2="quoted \"value\"" flag`. Values stay strings (the mapping converts
 * them); a bare key is `true`. A line with no pair at all gives an empty record (then ignored).
 */
export function parseLogfmt(text: string): Record<string, unknown> | string {
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && (text[i] === ' ' || text[i] === '\t')) i++;
    if (i >= n) break;
    let k = i;
    while (k < n && text[k] !== '=' && text[k] !== ' ' && text[k] !== '\t') k++;
    const key = text.slice(i, k);
    if (k >= n || text[k] !== '=') {
      if (key !== '') out[key] = true;
      i = k;
      continue;
    }
    i = k + 1;
    if (text[i] === '"') {
      let v = '';
      i++;
      for (;;) {
        if (i >= n) return `logfmt: unterminated quoted value for "${key.slice(0, 40)}"`;
        const c = text[i]!;
        if (c === '\\' && i + 1 < n) {
          const e = text[i + 1]!;
          v += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : e;
          i += 2;
        } else if (c === '"') {
          i++;
          break;
        } else {
          v += c;
          i++;
        }
      }
      out[key] = v;
    } else {
      let e = i;
      while (e < n && text[e] !== ' ' && text[e] !== '\t') e++;
      out[key] = text.slice(i, e);
      i = e;
    }
  }
  return { ...out };
}

const KLOG = /^([IWEF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?\s+(\d+)\s+([^\]\s]+)\] ?(.*)$/;
/**
 * The lease a printf-style client-go message names (`Describe()`: `namespace/name`): after
 * "lease" (`successfully acquired lease ns/name`, `attempting to acquire leader lease ns/name...`),
 * "lock" (`error retrieving resource lock ns/name: …`) or "expired:" (`lock has expired: ns/name`,
 * `lock is held by X and has not yet expired: ns/name`); not after any colon, or `…: i/o timeout`
 * would name a lease. Names end with a letter, digit, `_` or `-`, so the "..." after the attempt
 * is not part of it.
 */
const LEASE_IN_TEXT = /(?:\blease|\block|\bexpired:) +([\w-][\w.-]*\/[\w.-]*[\w-])/;

/** The lease named in a printf-style message, if any. */
export function leaseInText(msg: string): string | undefined {
  const m = LEASE_IN_TEXT.exec(msg.length > 4096 ? msg.slice(0, 4096) : msg);
  return m === null ? undefined : m[1];
}

export interface KlogOptions {
  /**
   * klog text lines have no year. Default: the year of the container log wrapper's time when the
   * line came in one (docker json-file, CRI, kubectl --timestamps), else the current year.
   */
  year?: number;
  /** And no zone: an offset such as `Z` (default) or `+02:00`. */
  zone?: string;
}

/**
 * klog text: `I0115 10:30:46.456789       1 leaderelection.go:258] "Successfully acquired lease" lock="kube-system/kcm"`
 * (structured) or `… leaderelection.go:258] successfully acquired lease kube-system/kcm` (printf style).
 * JSON lines (klog's JSON format) are parsed as JSON. Gives { ts, level, thread, caller, msg, …pairs };
 * a printf-style message that names a lease (and has no `lock` pair) also gives `lock`.
 */
export function klogParser(options: KlogOptions = {}): (text: string, wrapperTime?: string) => Record<string, unknown> | string {
  const thisYear = options.year ?? new Date().getUTCFullYear();
  const zone = options.zone ?? 'Z';
  return (text, wrapperTime) => {
    if (text.startsWith('{')) {
      const rec = jsonObjectLine(text);
      // klog's JSON format (--logging-format=json) keeps printf-style messages whole: read the lease out of them too.
      if (typeof rec !== 'string' && rec.lock === undefined && typeof rec.msg === 'string') {
        const lease = leaseInText(rec.msg);
        if (lease !== undefined) rec.lock = lease;
      }
      return rec;
    }
    const m = KLOG.exec(text);
    if (m === null) return Object.create(null) as Record<string, unknown>; // not a klog line: ignored
    const year = options.year === undefined && wrapperTime !== undefined ? yearFrom(wrapperTime, Number(m[2])) : thisYear;
    const rec: Record<string, unknown> = {
      ts: `${year}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ?? ''}${zone}`,
      level: m[1],
      thread: m[8],
      caller: m[9],
    };
    const rest = m[10]!;
    if (rest.startsWith('"')) {
      const end = closingQuote(rest);
      if (end === -1) return 'klog: unterminated quoted message';
      rec.msg = JSON.parse(rest.slice(0, end + 1)) as string;
      const pairs = parseLogfmt(rest.slice(end + 1));
      if (typeof pairs === 'string') return pairs;
      Object.assign(rec, pairs);
    } else {
      rec.msg = rest;
      const lease = leaseInText(rest);
      if (lease !== undefined) rec.lock = lease;
    }
    return rec;
  };
}

export const parseKlog = klogParser();

/** A JSON line among text lines (klog's and Java loggers' JSON formats): its object, or why not. */
function jsonObjectLine(text: string): Record<string, unknown> | string {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : 'expected a JSON object';
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
}

/**
 * The year of a klog line of month `month`, from the wrapper's time: the wrapper's year, but the
 * one before for a December line wrapped in January (and after, the other way round).
 */
function yearFrom(wrapperTime: string, month: number): number {
  const year = Number(wrapperTime.slice(0, 4));
  const wrapperMonth = Number(wrapperTime.slice(5, 7));
  if (month === 12 && wrapperMonth === 1) return year - 1;
  if (month === 1 && wrapperMonth === 12) return year + 1;
  return year;
}

/** The `]` that closes the `[` at `at` (thread names nest them: `[QuorumPeer[myid=3](…):Follower@131]`), or -1. */
function closingBracket(s: string, at: number): number {
  let depth = 0;
  for (let i = at; i < s.length; i++) {
    if (s[i] === '[') depth++;
    else if (s[i] === ']' && --depth === 0) return i;
  }
  return -1;
}

function closingQuote(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i;
  }
  return -1;
}

export interface Log4jOptions {
  /** The zone of timestamps written without one (log4j's and logback's `%d{ISO8601}`): `Z` (default) or an offset such as `+02:00`. */
  zone?: string;
}

/** `2026-12-01T10:28:53.468+0000`, `2026-12-01 10:28:53,468`, `[2026-12-01 10:28:53,468]`, at the start of a line. */
const JAVA_TS = /^(\[?)(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?(\]?)(?=\s|$)/;
const JAVA_LEVEL = /^(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE)$/;
/** What may stand between the level and the message: a pid, Spring's `---`, a logger (`org.apache.x.Y`, `o.a.c.X`, `Class@123`). */
const JAVA_HEADER_WORD = /^(\d+|---|[\w$]+(\.[\w$]+)+(@\d+)?|[\w$]+@\d+)$/;
/** `key=value` or `key="quoted value"` in a message, after a space, a comma or an opening bracket. */
const JAVA_PAIR = /(^|[\s,([{])([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|[^\s"]?[^\s,;)\]}]*)/g;
const JAVA_OWN_KEYS = new Set(['ts', 'level', 'thread', 'logger', 'msg']);

/**
 * Java logging text lines, as log4j, log4j 2 and logback pattern layouts write them: a timestamp
 * first (ISO 8601 with `T` or a space, `.` or `,` before the fraction, a zone or none), then the
 * header in any of the usual orders — `- LEVEL [thread:Class@line] - msg` (ZooKeeper's
 * `%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n`), `[thread] LEVEL logger - msg`,
 * `LEVEL pid --- [thread] logger : msg` (Spring Boot), `[ts] LEVEL msg (logger)` (Kafka) — then the
 * message. Gives { ts (RFC 3339), level, thread, logger, msg, …key=value pairs of the message }.
 * When the header is not one of those shapes, msg is all that follows the level (or the
 * timestamp): rules that look for a phrase in the message still find it. A line that does not
 * start with a timestamp (a stack trace, a banner) gives an empty record (ignored); a JSON line
 * (logstash-logback-encoder, log4j 2's JsonTemplateLayout) is parsed as JSON.
 */
export function log4jParser(options: Log4jOptions = {}): (text: string) => Record<string, unknown> | string {
  const defaultZone = options.zone ?? 'Z';
  return (text) => {
    if (text.startsWith('{')) return jsonObjectLine(text);
    const m = JAVA_TS.exec(text);
    if (m === null || (m[1] === '[') !== (m[6] === ']')) return Object.create(null) as Record<string, unknown>; // no timestamp first: ignored
    const zone = m[5] === undefined ? defaultZone : m[5] === 'Z' ? 'Z' : m[5].length === 5 ? `${m[5].slice(0, 3)}:${m[5].slice(3)}` : m[5];
    const rec: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    rec.ts = `${m[2]}T${m[3]}${m[4] === undefined ? '' : '.' + m[4]}${zone}`;
    const rest = text.slice(m[0].length);
    let i = 0;
    let level: string | undefined;
    let afterLevel = -1;
    let msg: string | undefined;
    for (let items = 0; items < 10 && msg === undefined; items++) {
      while (rest[i] === ' ' || rest[i] === '\t') i++;
      if (i >= rest.length) break;
      if (rest[i] === '[') {
        const end = closingBracket(rest, i);
        if (end === -1) break;
        const inside = rest.slice(i + 1, end);
        if (rec.thread === undefined && !inside.startsWith('myid:')) rec.thread = inside;
        else if (level !== undefined && rec.logger === undefined && JAVA_HEADER_WORD.test(inside)) rec.logger = inside;
        i = end + 1;
        continue;
      }
      if (rest.startsWith('- ', i) || rest.startsWith(': ', i)) {
        if (level !== undefined) {
          msg = rest.slice(i + 2);
          break;
        }
        if (rest[i] === '-') {
          i += 2;
          continue;
        }
        break;
      }
      let end = i;
      while (end < rest.length && rest[end] !== ' ' && rest[end] !== '\t') end++;
      const word = rest.slice(i, end);
      if (level === undefined && JAVA_LEVEL.test(word)) {
        level = word;
        afterLevel = end;
      } else if (level !== undefined && JAVA_HEADER_WORD.test(word)) {
        if (/[.@]/.test(word)) rec.logger ??= word;
      } else break;
      i = end;
    }
    if (level !== undefined) rec.level = level;
    msg ??= (afterLevel === -1 ? rest : rest.slice(afterLevel)).trim();
    rec.msg = msg;
    // key=value pairs in the message (an application's structured arguments); a key given twice
    // with different values cannot be read either way.
    for (const p of msg.matchAll(JAVA_PAIR)) {
      const key = p[2]!;
      if (JAVA_OWN_KEYS.has(key)) continue;
      const raw = p[3]!;
      let value = raw;
      if (raw.startsWith('"')) {
        try {
          value = JSON.parse(raw) as string;
        } catch {
          value = raw.slice(1, -1);
        }
      }
      if (key in rec && rec[key] !== value) return `log4j: the message gives ${key}= twice with different values`;
      rec[key] = value;
    }
    return { ...rec };
  };
}
