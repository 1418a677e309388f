/**
 * Compiling a mapping that has passed the schema into a Profile: field candidates and their
 * getters, the match rules, value maps, normalisers, defaults, the unit of ttlMs, carried fields
 * and the guards against repeated keys; then, per record, the canonical event or the reason there
 * is none. The types of the mapping language live here too (mapping.ts re-exports them).
 */
import { defaultObserver, defaultResult, EVENT_TYPES, LEASE_SCOPED, OBSERVERS, RESULTS, type LockEvent, type Observer } from '../model/event.js';
import type { ServiceId } from '../model/services.js';
import { DURATION_UNITS, parseDuration, parseTimeValue, type TimeFormat } from '../model/time.js';
import { parseFenceToken } from '../model/token.js';
import { numberLiteral } from './canonical.js';
import { MappingError } from './names.js';
import type { Profile, RecordOrigin } from './types.js';
import { klogParser, log4jParser, parseLogfmt, type KlogOptions, type Log4jOptions } from './parsers.js';
import { expandOtlp } from './otlp.js';
import { keyGuard, repeatedKey } from './scan.js';
import { DEFAULT_FIELDS, fieldGetters, str, template, type Getter } from './mapping-fields.js';
import { compileRules, type CompiledRule, type MatchRule } from './mapping-conditions.js';
import { compileFastMapping } from './fast-mapping.js';

export interface MappingSpec {
  description?: string;
  /** The lock service the logs come from (see model/services.ts). */
  service?: ServiceId;
  /** Which of its inputs are expected to be mostly lines that are no events (see Profile.sparse). */
  sparse?: 'text' | 'all';
  parse?: 'json' | 'logfmt' | 'klog' | 'log4j';
  expand?: 'otlp';
  timestamp?: TimeFormat;
  fields?: Record<string, string | string[]>;
  match: MatchRule[];
  values?: Record<string, Record<string, string>>;
  normalize?: Record<string, 'etcd-lease' | 'zk-session' | 'hex' | 'decimal' | 'lower' | 'trim'>;
  defaults?: Record<string, string>;
  carry?: ('resource' | 'ownerId' | 'leaseId')[];
  /** The unit each canonical duration field is logged in (bare numbers): `{ "ttlMs": "s" }`. */
  units?: { ttlMs?: DurationUnit };
}

export type DurationUnit = 'ns' | 'us' | 'µs' | 'ms' | 's' | 'min' | 'h';

export interface CompileOptions {
  /** For `parse: "klog"`: the year and zone klog text lines lack. */
  klog?: KlogOptions;
  /** For `parse: "log4j"`: the zone of timestamps written without one. */
  log4j?: Log4jOptions;
}

/** The profile a valid mapping `m` describes (compileMapping has checked it against the schema). */
export function compileSpec(m: MappingSpec, name: string, options: CompileOptions): Profile {
  const where = (p: string) => `mapping ${name}: ${p}`;

  const candidates = new Map<string, string[]>(Object.entries(DEFAULT_FIELDS));
  for (const [field, paths] of Object.entries(m.fields ?? {})) candidates.set(field, typeof paths === 'string' ? [paths] : paths);
  const getters = fieldGetters(candidates);
  const get = (field: string) => getters.get(field)!;

  const rules: CompiledRule[] = compileRules(m.match, getters, where);
  for (const [field, map] of Object.entries(m.values ?? {})) {
    for (const [raw, value] of Object.entries(map)) {
      if (field === 'observer' && !(OBSERVERS as readonly string[]).includes(value)) throw new MappingError(where(`/values/observer/${raw}: "${value}" is not one of ${OBSERVERS.join(', ')}`));
      if (field === 'type' && !(EVENT_TYPES as readonly string[]).includes(value)) throw new MappingError(where(`/values/type/${raw}: "${value}" is not an event type`));
    }
  }
  const valueMap = (field: string) => {
    const map = m.values?.[field];
    return map === undefined ? undefined : new Map(Object.entries(map));
  };
  const results = valueMap('result');
  const observers = valueMap('observer');
  const resources = valueMap('resource');
  const owners = valueMap('ownerId');
  const normalizers = new Map(Object.entries(m.normalize ?? {}).map(([f, how]) => [f, normalizer(how)]));
  const norm = (field: string, v: string | undefined) => (v === undefined ? undefined : (normalizers.get(field)?.(v) ?? v));
  const defaults = new Map(Object.entries(m.defaults ?? {}).map(([f, t]) => [f, template(t, where(`/defaults/${f}`))]));
  if (m.defaults?.observer !== undefined && !(OBSERVERS as readonly string[]).includes(m.defaults.observer)) throw new MappingError(where(`/defaults/observer: "${m.defaults.observer}" is not one of ${OBSERVERS.join(', ')}`));
  const format = m.timestamp ?? 'auto';
  const ttlUnit = m.units?.ttlMs ?? 'ms';
  const ttlFactor = DURATION_UNITS[ttlUnit]!;
  const tokenKeys = lastSegments(m.fields?.fenceToken ?? DEFAULT_FIELDS.fenceToken!);
  const leaseKeys = lastSegments(m.fields?.leaseId ?? DEFAULT_FIELDS.leaseId!);
  const [gTs, gRes, gOwner, gLease, gOp, gToken, gTtl, gResult, gObs, gSource] = ['ts', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source'].map(get) as Getter[];
  const tsPaths = pathsOf(m.fields?.ts ?? DEFAULT_FIELDS.ts!);
  const resourcePaths = pathsOf(m.fields?.resource ?? DEFAULT_FIELDS.resource!);

  // Per input: the last value seen of each carried field.
  const carry = m.carry ?? [];
  const carried = new Map<string, Record<string, string>>();
  const remember = (record: Record<string, unknown>, file: string, captured: Record<string, string> | undefined) => {
    for (const field of carry) {
      const v = captured?.[field] ?? str(get(field)(record));
      if (v === undefined) continue;
      let last = carried.get(file);
      if (last === undefined) carried.set(file, (last = Object.create(null) as Record<string, string>));
      last[field] = v;
    }
  };
  const recall = (field: string, file: string) => carried.get(file)?.[field];

  const parse = m.parse === 'logfmt' ? parseLogfmt : m.parse === 'klog' ? klogParser(options.klog) : m.parse === 'log4j' ? log4jParser(options.log4j) : undefined;
  // Top-level keys the mapping reads, guarded against a second copy with another value (JSON.parse
  // keeps the last silently): those the rules test, for every record (a repeated message could
  // hide an event), and every key read as a canonical field, for the records that become events.
  // Only JSON lines that are one record each: the text is then the record's.
  const topKeys = (paths: readonly string[]) => paths.flatMap((p) => (p.includes('.') ? [p, p.split('.')[0]!] : [p]));
  const fieldKeys = (field: string) => topKeys(candidates.get(field) ?? []);
  const whenKeys = m.match.flatMap((rule) => Object.keys(rule.when).flatMap((p) => (p.startsWith('@') ? fieldKeys(p.slice(1)) : topKeys([p]))));
  const placeholders = Object.values(m.defaults ?? {}).flatMap((t) => [...t.matchAll(/\{([^{}$][^{}]*)\}/g)].map((x) => x[1]!));
  const guarded = parse === undefined && m.expand === undefined;
  // Carried fields are remembered from lines that are no event too: their keys are guarded on every record.
  const whenGuard = guarded ? keyGuard([...whenKeys, ...carry.flatMap(fieldKeys)]) : undefined;
  const fullGuard = guarded ? keyGuard([...whenKeys, ...[...candidates.keys()].flatMap(fieldKeys), ...topKeys(placeholders)]) : undefined;
  // The fast path reads JSON lines whose values are the fields as they are (no value maps,
  // normalisers, carried fields, named groups or lease-scoped rules).
  const plain = rules.every((r) => r.capture === undefined && r.scope === undefined);
  const fastEvent =
    guarded && plain && carry.length === 0 && m.values === undefined && m.normalize === undefined
      ? compileFastMapping({ candidates, whenPaths: m.match.flatMap((rule) => Object.keys(rule.when)), rules, defaults: m.defaults ?? {}, format, ttlFactor, ttlUnit })
      : undefined;
  return {
    name,
    service: m.service,
    sparse: m.sparse,
    recipe: { kind: 'mapping', spec: m, name, options },
    leaseScoped: rules.some((r) => r.scope === 'lease'),
    parseLine: parse,
    fastEvent,
    expand: m.expand === 'otlp' ? expandOtlp : undefined,
    toEvent(record: Record<string, unknown>, origin: RecordOrigin): LockEvent | string | null {
      let rule: CompiledRule | undefined;
      for (let i = 0; i < rules.length && rule === undefined; i++) {
        const r = rules[i]!;
        let ok = true;
        for (let j = 0; j < r.tests.length && ok; j++) ok = r.tests[j]!(record);
        if (ok) rule = r;
      }
      if (origin.text !== undefined && fullGuard !== undefined) {
        const dup = repeatedKey(origin.text, record, rule === undefined ? whenGuard! : fullGuard);
        if (dup !== undefined) return dup; // nothing of it is remembered either
      }
      // What the rule's named groups read out of the text: this line's values of those fields.
      const cap = rule?.capture?.(record);
      if (carry.length > 0) remember(record, origin.file, cap);
      if (rule === undefined) return null;
      const type = rule.type;
      const set = rule.set;

      const rawTs = gTs(record);
      if (rawTs === undefined && origin.wrapperTime === undefined) return `no timestamp (looked in ${tsPaths})`;
      // No time of its own: the container log wrapper's (RFC 3339, whatever `timestamp` says).
      const time = rawTs === undefined ? parseTimeValue(origin.wrapperTime, 'rfc3339') : parseTimeValue(rawTs, format);
      if (!time.ok) return time.reason;


      let result = set.result ?? mapped(results, str(gResult(record))) ?? defaults.get('result')?.(record, origin) ?? defaultResult(type);
      if (result === undefined) return `${type} has no result (map one with fields.result, values.result or a rule's set.result)`;
      if (!RESULTS[type].includes(result)) return `result ${JSON.stringify(clip(result))} is not allowed for ${type} (${RESULTS[type].join(', ')}); map it in values.result`;

      const observerRaw = set.observer ?? mapped(observers, str(gObs(record))) ?? defaults.get('observer')?.(record, origin);
      let observer: Observer = defaultObserver(type);
      if (observerRaw !== undefined) {
        if (!(OBSERVERS as readonly string[]).includes(observerRaw)) return `observer ${JSON.stringify(clip(observerRaw))} is not one of authority, worker, resource; map it in values.observer`;
        observer = observerRaw as Observer;
      }

      let fenceToken: bigint | undefined;
      const rawToken = cap?.fenceToken ?? gToken(record);
      if (rawToken !== undefined) {
        const literal = typeof rawToken === 'number' && !Number.isSafeInteger(rawToken) ? literalOf(origin.text, tokenKeys, rawToken) : undefined;
        const t = parseFenceToken(typeof rawToken === 'string' ? rawToken.trim() : rawToken, literal);
        if (!t.ok) return t.reason;
        fenceToken = t.value;
      }
      let leaseId: string | undefined;
      const rawLease = cap?.leaseId ?? gLease(record) ?? recall('leaseId', origin.file);
      if (rawLease !== undefined) {
        if (typeof rawLease === 'number' && !Number.isSafeInteger(rawLease)) {
          const lit = literalOf(origin.text, leaseKeys, rawLease);
          if (lit === undefined) return `leaseId ${rawLease} is above 2^53 and cannot be read exactly from a JSON number; log it as a string`;
          leaseId = lit;
        } else leaseId = str(rawLease);
        leaseId = norm('leaseId', leaseId);
        if (leaseId === '') return `leaseId ${JSON.stringify(clip(String(rawLease)))} is not a valid ${m.normalize?.leaseId} id`;
      }
      // A lease-scoped rule's event names no resource: it applies wherever its lease is held.
      let resource: string | undefined;
      if (rule.scope === 'lease' && leaseId !== undefined) resource = LEASE_SCOPED;
      else {
        resource = set.resource ?? cap?.resource ?? mapped(resources, str(gRes(record))) ?? defaults.get('resource')?.(record, origin) ?? recall('resource', origin.file);
        if (resource === undefined || resource === '') return `no resource (looked in ${resourcePaths})`;
      }
      let ttlMs: number | undefined;
      const rawTtl = cap?.ttlMs ?? gTtl(record);
      if (rawTtl !== undefined) {
        // A bare number is in units.ttlMs (default ms); a string may carry its own unit ("2s").
        ttlMs = typeof rawTtl === 'number' ? rawTtl * ttlFactor : typeof rawTtl === 'string' ? (parseDuration(rawTtl, ttlUnit) ?? NaN) : NaN;
        if (!(ttlMs >= 0)) return `ttlMs ${JSON.stringify(clip(String(rawTtl)))} is not a non-negative number${ttlUnit === 'ms' ? '' : ` of ${ttlUnit}`} or a duration such as 2s`;
      }
      return {
        ts: time.ms,
        type,
        resource: resource === LEASE_SCOPED ? resource : norm('resource', resource)!,
        // A lease-scoped event's owner is the lease's: only one the line itself names, never the file's default or the last one seen.
        ownerId: norm('ownerId', set.ownerId ?? cap?.ownerId ?? mapped(owners, str(gOwner(record))) ?? (resource === LEASE_SCOPED ? undefined : (recall('ownerId', origin.file) ?? defaults.get('ownerId')?.(record, origin)))),
        leaseId,
        operationId: norm('operationId', cap?.operationId ?? str(gOp(record))),
        fenceToken,
        ttlMs,
        result,
        observer,
        source: set.source ?? str(gSource(record)) ?? defaults.get('source')?.(record, origin) ?? origin.source,
        file: origin.file,
        line: origin.line,
        record,
        text: undefined,
        fields: undefined,
      };
    },
  };
}

function normalizer(how: string): (v: string) => string {
  switch (how) {
    case 'lower':
      return (v) => v.toLowerCase();
    case 'trim':
      return (v) => v.trim();
    case 'hex':
      return (v) => toBig(v, 'hex')?.toString(16) ?? '';
    case 'decimal':
      return (v) => toBig(v, 'decimal')?.toString() ?? '';
    case 'zk-session':
      // ZooKeeper session ids are always hex: the server writes 0x%x (0x10000571c0c0000), clients
      // often the 8 bytes (010000571c0c0000); both become the server's spelling.
      return (v) => {
        const n = toBig(v, 'hex');
        return n === undefined ? '' : '0x' + n.toString(16);
      };
    default:
      // etcd lease ids: "0x…" or 16 hex digits (%016x in server logs) or decimal; all become decimal.
      return (v) => toBig(v, 'etcd')?.toString() ?? '';
  }
}

function toBig(v: string, how: 'hex' | 'decimal' | 'etcd'): bigint | undefined {
  const s = v.trim().toLowerCase();
  try {
    if (s.startsWith('0x') && /^0x[0-9a-f]+$/.test(s)) return BigInt(s);
    if (how === 'hex' || (how === 'etcd' && (/[a-f]/.test(s) || s.length === 16))) return /^[0-9a-f]+$/.test(s) ? BigInt('0x' + s) : undefined;
    return /^\d+$/.test(s) ? BigInt(s) : undefined;
  } catch {
    return undefined;
  }
}

function mapped(map: Map<string, string> | undefined, v: string | undefined): string | undefined {
  if (v === undefined || map === undefined) return v;
  return map.get(v) ?? v;
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}

function pathsOf(p: string | string[]): string {
  return (typeof p === 'string' ? [p] : p).join(', ');
}

function lastSegments(p: string | string[]): string[] {
  return (typeof p === 'string' ? [p] : p).map((x) => x.split('.').pop()!);
}

function literalOf(text: string | undefined, keys: string[], parsed: number): string | undefined {
  for (const k of keys) {
    const lit = numberLiteral(text, k, parsed);
    if (lit !== undefined) return lit;
  }
  return undefined;
}
