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
      try {
        const v = JSON.parse(text) as unknown;
        if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'expected a JSON object';
        const rec = v as Record<string, unknown>;
        // klog's JSON format (--logging-format=json) keeps printf-style messages whole: read the lease out of them too.
        if (rec.lock === undefined && typeof rec.msg === 'string') {
          const lease = leaseInText(rec.msg);
          if (lease !== undefined) rec.lock = lease;
        }
        return rec;
      } catch (err) {
        return `not valid JSON: ${(err as Error).message}`;
      }
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

function closingQuote(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i;
  }
  return -1;
}
