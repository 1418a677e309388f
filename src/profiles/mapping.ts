/**
 * Mapping files (`--mapping FILE`) and the built-in profiles written in the same language: which
 * records are which event type (match rules), where each canonical field lives (dot paths, first
 * present wins), value maps, timestamp formats, identifier normalisation and defaults. Compiled
 * once, when loaded; every mistake is reported then, with its path in the file, not per line.
 */
import { basename } from 'node:path';
import type { ErrorObject } from 'ajv';
import { readFileSync } from 'node:fs';
import { MappingError } from './names.js';
import { describeJsonError } from './json-error.js';

export { MappingError };
import validateMappingSpec from '../generated/mapping-validator.js';
import { defaultObserver, defaultResult, EVENT_TYPES, OBSERVERS, RESULTS, type EventType, type LockEvent, type Observer } from '../model/event.js';
import { DURATION_UNIT_NAMES, DURATION_UNITS, parseDuration, parseTimeValue, type TimeFormat } from '../model/time.js';
import { parseFenceToken } from '../model/token.js';
import { numberLiteral } from './canonical.js';
import type { Profile, RecordOrigin } from './types.js';
import { klogParser, parseLogfmt, type KlogOptions } from './parsers.js';
import { expandOtlp } from './otlp.js';
import { compileRegex, type SafeRegex } from './regex.js';
import { keyGuard, repeatedKey } from './scan.js';


type Scalar = string | number | boolean | null;
type Condition = Scalar | { equals?: Scalar; in?: Scalar[]; regex?: string; flags?: string; exists?: boolean };

export interface MappingSpec {
  description?: string;
  parse?: 'json' | 'logfmt' | 'klog';
  expand?: 'otlp';
  timestamp?: TimeFormat;
  fields?: Record<string, string | string[]>;
  match: { when: Record<string, Condition>; type: EventType; set?: Record<string, string> }[];
  values?: Record<string, Record<string, string>>;
  normalize?: Record<string, 'etcd-lease' | 'hex' | 'decimal' | 'lower' | 'trim'>;
  defaults?: Record<string, string>;
  carry?: ('resource' | 'ownerId' | 'leaseId')[];
  /** The unit each canonical duration field is logged in (bare numbers): `{ "ttlMs": "s" }`. */
  units?: { ttlMs?: DurationUnit };
}

export type DurationUnit = 'ns' | 'us' | 'µs' | 'ms' | 's' | 'min' | 'h';


export { MAX_REGEX_INPUT } from './regex.js';

/** Where canonical fields are looked up when a mapping does not say. */
const DEFAULT_FIELDS: Record<string, string[]> = {
  ts: ['ts'],
  type: ['type'],
  message: ['msg', 'message'],
  resource: ['resource'],
  ownerId: ['ownerId'],
  leaseId: ['leaseId'],
  operationId: ['operationId'],
  fenceToken: ['fenceToken'],
  ttlMs: ['ttlMs'],
  result: ['result'],
  observer: ['observer'],
  // The clock domain: pino/bunyan `hostname`, OpenTelemetry `host.name` (never a bare `host`).
  source: ['source', 'hostname', 'host.name'],
  rowCount: ['rowCount'],
};

type Getter = (record: Record<string, unknown>) => unknown;
type Test = (record: Record<string, unknown>) => boolean;

interface CompiledRule {
  tests: Test[];
  type: EventType;
  set: Record<string, string>;
}


export function loadMapping(path: string, options: CompileOptions = {}): Profile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new MappingError(`cannot read mapping ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  let spec: unknown;
  try {
    spec = JSON.parse(text);
  } catch (err) {
    throw new MappingError(`mapping ${path} is not valid JSON: ${describeJsonError(text, err)}`);
  }
  return compileMapping(spec, path, options);
}

export interface CompileOptions {
  /** For `parse: "klog"`: the year and zone klog text lines lack. */
  klog?: KlogOptions;
}

export function compileMapping(spec: unknown, name: string, options: CompileOptions = {}): Profile {
  checkUnits(spec, name);
  if (!validateMappingSpec(spec)) throw new MappingError(`mapping ${name}: ${explain(validateMappingSpec.errors ?? [])}`);
  const m = spec as MappingSpec;
  const where = (p: string) => `mapping ${name}: ${p}`;

  const candidates = new Map<string, string[]>(Object.entries(DEFAULT_FIELDS));
  for (const [field, paths] of Object.entries(m.fields ?? {})) candidates.set(field, typeof paths === 'string' ? [paths] : paths);
  const getters = fieldGetters(candidates);
  const get = (field: string) => getters.get(field)!;

  const rules: CompiledRule[] = m.match.map((rule, i) => {
    const tests = Object.entries(rule.when).map(([path, cond]) => {
      const getter = path.startsWith('@') ? getters.get(path.slice(1)) : pathGetter(path);
      if (getter === undefined) throw new MappingError(where(`/match/${i}/when: "${path}" is not a canonical field (use one of ${[...getters.keys()].map((k) => '@' + k).join(', ')})`));
      return condition(getter, cond, where(`/match/${i}/when/${path}`));
    });
    for (const [field, value] of Object.entries(rule.set ?? {})) {
      if (field === 'result' && !RESULTS[rule.type].includes(value)) throw new MappingError(where(`/match/${i}/set/result: "${value}" is not a result of ${rule.type} (${RESULTS[rule.type].join(', ')})`));
      if (field === 'observer' && !(OBSERVERS as readonly string[]).includes(value)) throw new MappingError(where(`/match/${i}/set/observer: "${value}" is not one of ${OBSERVERS.join(', ')}`));
    }
    return { tests, type: rule.type, set: rule.set ?? {} };
  });
  // A rule can never match when an earlier rule matches every record it would: each of the
  // earlier rule's conditions is implied by one of its own on the same path.
  m.match.forEach((rule, i) => {
    const j = m.match.findIndex((earlier, at) => at < i && subsumes(earlier.when, rule.when));
    if (j !== -1) {
      const all = Object.keys(m.match[j]!.when).length === 0;
      throw new MappingError(where(`/match/${i} can never match: /match/${j} before it matches ${all ? 'every record' : 'every record it would'}; put the more specific rule first`));
    }
  });
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
  const remember = (record: Record<string, unknown>, file: string) => {
    for (const field of carry) {
      const v = str(get(field)(record));
      if (v === undefined) continue;
      let last = carried.get(file);
      if (last === undefined) carried.set(file, (last = Object.create(null) as Record<string, string>));
      last[field] = v;
    }
  };
  const recall = (field: string, file: string) => carried.get(file)?.[field];

  const parse = m.parse === 'logfmt' ? parseLogfmt : m.parse === 'klog' ? klogParser(options.klog) : undefined;
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
  return {
    name,
    recipe: { kind: 'mapping', spec, name, options },
    parseLine: parse,
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
      if (carry.length > 0) remember(record, origin.file);
      if (rule === undefined) return null;
      const type = rule.type;
      const set = rule.set;

      const rawTs = gTs(record);
      if (rawTs === undefined && origin.wrapperTime === undefined) return `no timestamp (looked in ${tsPaths})`;
      // No time of its own: the container log wrapper's (RFC 3339, whatever `timestamp` says).
      const time = rawTs === undefined ? parseTimeValue(origin.wrapperTime, 'rfc3339') : parseTimeValue(rawTs, format);
      if (!time.ok) return time.reason;

      const resource = set.resource ?? mapped(resources, str(gRes(record))) ?? defaults.get('resource')?.(record, origin) ?? recall('resource', origin.file);
      if (resource === undefined || resource === '') return `no resource (looked in ${resourcePaths})`;

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
      const rawToken = gToken(record);
      if (rawToken !== undefined) {
        const literal = typeof rawToken === 'number' && !Number.isSafeInteger(rawToken) ? literalOf(origin.text, tokenKeys, rawToken) : undefined;
        const t = parseFenceToken(typeof rawToken === 'string' ? rawToken.trim() : rawToken, literal);
        if (!t.ok) return t.reason;
        fenceToken = t.value;
      }
      let leaseId: string | undefined;
      const rawLease = gLease(record);
      if (rawLease !== undefined) {
        if (typeof rawLease === 'number' && !Number.isSafeInteger(rawLease)) {
          const lit = literalOf(origin.text, leaseKeys, rawLease);
          if (lit === undefined) return `leaseId ${rawLease} is above 2^53 and cannot be read exactly from a JSON number; log it as a string`;
          leaseId = lit;
        } else leaseId = str(rawLease);
        leaseId = norm('leaseId', leaseId);
        if (leaseId === '') return `leaseId ${JSON.stringify(clip(String(rawLease)))} is not a valid ${m.normalize?.leaseId} id`;
      }
      let ttlMs: number | undefined;
      const rawTtl = gTtl(record);
      if (rawTtl !== undefined) {
        // A bare number is in units.ttlMs (default ms); a string may carry its own unit ("2s").
        ttlMs = typeof rawTtl === 'number' ? rawTtl * ttlFactor : typeof rawTtl === 'string' ? (parseDuration(rawTtl, ttlUnit) ?? NaN) : NaN;
        if (!(ttlMs >= 0)) return `ttlMs ${JSON.stringify(clip(String(rawTtl)))} is not a non-negative number${ttlUnit === 'ms' ? '' : ` of ${ttlUnit}`} or a duration such as 2s`;
      }
      return {
        ts: time.ms,
        type,
        resource: norm('resource', resource)!,
        ownerId: norm('ownerId', set.ownerId ?? mapped(owners, str(gOwner(record))) ?? recall('ownerId', origin.file) ?? defaults.get('ownerId')?.(record, origin)),
        leaseId,
        operationId: norm('operationId', str(gOp(record))),
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

/** The value at a dot path, through own properties only; a key that itself holds dots is tried whole first. */
export function pathGetter(path: string): Getter {
  if (!path.includes('.')) {
    // A key Object.prototype lacks is own or absent on a parsed record: read it directly.
    if (!(path in Object.prototype)) return (r) => r[path];
    return (r) => own(r, path);
  }
  const parts = path.split('.');
  return (r) => {
    const whole = own(r, path);
    if (whole !== undefined) return whole;
    let v: unknown = r;
    for (const p of parts) {
      if (v === null || typeof v !== 'object') return undefined;
      v = own(v as Record<string, unknown>, p);
    }
    return v;
  };
}

function own(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

/**
 * Getters of the canonical fields, each giving its first present candidate. The fields whose
 * candidates are all top-level keys are resolved together, once per record, in one pass over the
 * record's keys (a record has about ten; the candidates of all fields are some sixty, and probing
 * each of them is slow on records of many shapes). Rules test '@type' or '@message' again and
 * again on the same record, and toEvent reads the fields once more: all of that reads the result.
 */
function fieldGetters(candidates: Map<string, string[]>): Map<string, Getter> {
  const getters = new Map<string, Getter>();
  const indexed: string[] = [];
  const byKey = new Map<string, { field: number; rank: number }[]>();
  for (const [field, paths] of candidates) {
    if (paths.some((p) => p.includes('.'))) {
      getters.set(field, memo(firstOf(paths)));
      continue;
    }
    const f = indexed.push(field) - 1;
    paths.forEach((key, rank) => {
      let hits = byKey.get(key);
      if (hits === undefined) byKey.set(key, (hits = []));
      hits.push({ field: f, rank });
    });
  }
  const values: unknown[] = new Array(indexed.length).fill(undefined);
  const ranks = new Int32Array(indexed.length);
  let last: Record<string, unknown> | undefined;
  const resolve = (r: Record<string, unknown>): void => {
    values.fill(undefined);
    ranks.fill(0x7fffffff);
    for (const key in r) {
      const hits = byKey.get(key);
      if (hits === undefined) continue;
      const v = r[key];
      if (v === undefined || v === null || v === '') continue;
      for (let i = 0; i < hits.length; i++) {
        const h = hits[i]!;
        if (h.rank < ranks[h.field]!) {
          ranks[h.field] = h.rank;
          values[h.field] = v;
        }
      }
    }
    last = r;
  };
  indexed.forEach((field, f) =>
    getters.set(field, (r) => {
      if (r !== last) resolve(r);
      return values[f];
    }),
  );
  return getters;
}

/** A getter that remembers its last record. */
function memo(get: Getter): Getter {
  let last: Record<string, unknown> | undefined;
  let value: unknown;
  return (r) => {
    if (r !== last) {
      value = get(r);
      last = r;
    }
    return value;
  };
}

/** The first candidate path whose value is present (not undefined, null or ""). */
function firstOf(paths: string[]): Getter {
  const getters = paths.map(pathGetter);
  if (getters.length === 1) {
    const g = getters[0]!;
    return (r) => present(g(r));
  }
  return (r) => {
    for (const g of getters) {
      const v = present(g(r));
      if (v !== undefined) return v;
    }
    return undefined;
  };
}

function present(v: unknown): unknown {
  return v === null || v === '' ? undefined : v;
}

function condition(get: Getter, cond: Condition, where: string): Test {
  if (cond === null || typeof cond !== 'object') return (r) => same(get(r), cond);
  const tests: Test[] = [];
  if (cond.exists !== undefined) {
    const want = cond.exists;
    tests.push((r) => (get(r) !== undefined) === want);
  }
  if (cond.equals !== undefined) {
    const want = cond.equals;
    tests.push((r) => same(get(r), want));
  }
  if (cond.in !== undefined) {
    const set = cond.in;
    tests.push((r) => {
      const v = get(r);
      return set.some((w) => same(v, w));
    });
  }
  if (cond.regex !== undefined) {
    const re = safeRegex(cond.regex, cond.flags ?? '', where);
    tests.push((r) => {
      const v = get(r);
      if (v === undefined || v === null || typeof v === 'object') return false;
      return re.test(String(v)); // on its first MAX_REGEX_INPUT characters
    });
  } else if (cond.flags !== undefined) throw new MappingError(`${where}: "flags" needs "regex"`);
  if (tests.length === 1) return tests[0]!;
  return (r) => tests.every((t) => t(r));
}

/** Does `general` match every record `specific` matches? (Only sure implications count.) */
export function subsumes(general: Record<string, Condition>, specific: Record<string, Condition>): boolean {
  for (const [path, g] of Object.entries(general)) {
    if (!Object.prototype.hasOwnProperty.call(specific, path)) return false;
    if (!implies(specific[path]!, g)) return false;
  }
  return true;
}

/** Does condition `a` on a value imply condition `b` on the same value? */
function implies(a: Condition, b: Condition): boolean {
  const A = normalizeCondition(a);
  const B = normalizeCondition(b);
  // Values `a` lets through, when it lists them.
  const allowed = A.equals !== undefined ? [A.equals] : A.in;
  if (B.exists === false) return A.exists === false;
  if (B.exists === true && !(A.exists === true || allowed !== undefined || A.regex !== undefined)) return false;
  if (B.equals !== undefined && !(allowed !== undefined && allowed.every((v) => same(v, B.equals!)))) return false;
  if (B.in !== undefined && !(allowed !== undefined && allowed.every((v) => B.in!.some((w) => same(v, w))))) return false;
  if (B.regex !== undefined) {
    const sameRegex = A.regex === B.regex && (A.flags ?? '') === (B.flags ?? '');
    let viaValues = false;
    if (!sameRegex && allowed !== undefined) {
      try {
        const re = compileRegex(B.regex, B.flags ?? '', '');
        viaValues = allowed.every((v) => v !== null && re.test(String(v)));
      } catch {
        viaValues = false;
      }
    }
    if (!sameRegex && !viaValues) return false;
  }
  return true;
}

function normalizeCondition(c: Condition): { equals?: Scalar; in?: Scalar[]; regex?: string; flags?: string; exists?: boolean } {
  return c === null || typeof c !== 'object' ? { equals: c } : c;
}

/** Loose scalar equality: 0 matches "0", true matches "true". */
function same(v: unknown, want: Scalar): boolean {
  if (v === want) return true;
  if (v === undefined || v === null || want === null || typeof v === 'object') return false;
  return String(v) === String(want);
}

/**
 * Compile a user regular expression for bounded time (see regex.ts): V8 when the pattern provably
 * cannot backtrack super-linearly, else the linear-time re2js; refused when too long or when it
 * uses lookaround or backreferences.
 */
export function safeRegex(source: string, flags: string, where: string): SafeRegex {
  return compileRegex(source, flags, where);
}

/** A group followed by a quantifier whose body has a quantifier or |. Character classes and escapes are skipped. */
export function hasNestedQuantifier(source: string): boolean {
  const stack: { quantified: boolean; alternation: boolean }[] = [];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') stack.push({ quantified: false, alternation: false });
    else if (c === ')') {
      const g = stack.pop();
      const next = source[i + 1];
      const quantifiedAfter = next === '*' || next === '+' || next === '{' || (next === '?' && false);
      if (g !== undefined && quantifiedAfter && (g.quantified || g.alternation)) return true;
      if (g !== undefined && stack.length > 0 && (g.quantified || quantifiedAfter)) stack[stack.length - 1]!.quantified = true;
    } else if (c === '*' || c === '+' || c === '{') {
      if (stack.length > 0) stack[stack.length - 1]!.quantified = true;
    } else if (c === '|') {
      if (stack.length > 0) stack[stack.length - 1]!.alternation = true;
    }
  }
  return false;
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

type Template = (record: Record<string, unknown>, origin: RecordOrigin) => string | undefined;

/** `{path}` placeholders from the record, `{$file}` for the input's base name. */
function template(t: string, where: string): Template {
  const parts = t.split(/(\{[^{}]+\})/).filter((p) => p !== '');
  const pieces = parts.map((p) => {
    if (!p.startsWith('{')) return () => p;
    const name = p.slice(1, -1);
    if (name === '$file') return (_r: Record<string, unknown>, o: RecordOrigin) => basename(o.file);
    if (name.startsWith('$')) throw new MappingError(`${where}: unknown placeholder ${p} (use {$file} or a field path)`);
    const g = pathGetter(name);
    return (r: Record<string, unknown>) => str(present(g(r)));
  });
  return (record, origin) => {
    let out = '';
    for (const piece of pieces) {
      const v = piece(record, origin);
      if (v === undefined) return undefined;
      out += v;
    }
    return out;
  };
}

function mapped(map: Map<string, string> | undefined, v: string | undefined): string | undefined {
  if (v === undefined || map === undefined) return v;
  return map.get(v) ?? v;
}

function str(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return undefined;
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

/**
 * `units` is checked before the schema so that a wrong unit gets a message naming the units:
 * `mapping X: /units/ttlMs: "sec" is not a unit (ns, us, ms, s, min, h)`.
 */
function checkUnits(spec: unknown, name: string): void {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return;
  const units = (spec as { units?: unknown }).units;
  if (units === undefined || units === null || typeof units !== 'object' || Array.isArray(units)) return; // the schema says what is wrong
  for (const [field, unit] of Object.entries(units as Record<string, unknown>)) {
    if (field !== 'ttlMs') throw new MappingError(`mapping ${name}: /units/${field}: not a canonical duration field (units can be given for ttlMs)`);
    if (typeof unit !== 'string' || DURATION_UNITS[unit] === undefined) {
      throw new MappingError(`mapping ${name}: /units/${field}: ${JSON.stringify(unit)} is not a unit (${DURATION_UNIT_NAMES.join(', ')})`);
    }
  }
}

function explain(errors: ErrorObject[]): string {
  const e = errors[0];
  if (e === undefined) return 'does not match the mapping schema';
  const at = e.instancePath === '' ? '/' : e.instancePath;
  const badName = (e as ErrorObject & { propertyName?: string }).propertyName;
  if (badName !== undefined) {
    const allowed = e.keyword === 'enum' ? ` (one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})` : '';
    return `${at}: "${badName}" is not allowed here${allowed}`;
  }
  if (e.keyword === 'additionalProperties') return `${at}: unknown key "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === 'propertyNames') return `${at}: ${e.message} (${JSON.stringify((e.params as { propertyName: string }).propertyName)})`;
  if (e.keyword === 'enum') return `${at}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${at}: ${e.message}`;
}
