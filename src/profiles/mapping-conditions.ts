/**
 * The match rules of a mapping: each rule's `when` conditions (a scalar, or equals / in / regex /
 * exists on a dot path or an @canonical field) compiled to tests, its `set` checked against the
 * event type, and a rule refused when an earlier one already matches every record it would.
 */
import { OBSERVERS, RESULTS, type EventType } from '../model/event.js';
import { MappingError } from './names.js';
import { pathGetter, type Getter } from './mapping-fields.js';
import { compileRegex, safeRegex, type SafeRegex } from './regex.js';

type Scalar = string | number | boolean | null;
export type Condition = Scalar | { equals?: Scalar; in?: Scalar[]; regex?: string; flags?: string; exists?: boolean };

/** One entry of a mapping's `match`. */
export interface MatchRule {
  when: Record<string, Condition>;
  type: EventType;
  set?: Record<string, string>;
  /**
   * `lease`: the event is about a lease (a session), not one resource: it names no resource, and
   * ends (or renews) its leaseId's lease on every resource that lease holds. Only for keepalive,
   * expire and revoke; a record without a leaseId is read as an ordinary event.
   */
  scope?: 'lease';
}

/** Event types a lease-scoped rule may give. */
export const LEASE_SCOPED_TYPES: readonly EventType[] = ['keepalive', 'expire', 'revoke'];

/** Canonical fields a named group of a rule's regular expression may give (`(?<leaseId>…)`). */
export const CAPTURE_FIELDS = ['resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs'] as const;

type Test = (record: Record<string, unknown>) => boolean;

export interface CompiledRule {
  tests: Test[];
  type: EventType;
  set: Record<string, string>;
  /** The values of the named groups of its regular expressions, on a record it matched (none: undefined). */
  capture?: (record: Record<string, unknown>) => Record<string, string>;
  scope?: 'lease';
}

/** The rules of `match`, in order; MappingError (through `where`) for a bad condition or `set`, or a rule that can never match. */
export function compileRules(match: MatchRule[], getters: Map<string, Getter>, where: (p: string) => string): CompiledRule[] {
  const rules: CompiledRule[] = match.map((rule, i) => {
    const captures: ((record: Record<string, unknown>) => Record<string, string> | undefined)[] = [];
    const named = new Set<string>();
    const tests = Object.entries(rule.when).map(([path, cond]) => {
      const getter = path.startsWith('@') ? getters.get(path.slice(1)) : pathGetter(path);
      if (getter === undefined) throw new MappingError(where(`/match/${i}/when: "${path}" is not a canonical field (use one of ${[...getters.keys()].map((k) => '@' + k).join(', ')})`));
      const at = where(`/match/${i}/when/${path}`);
      const c = condition(getter, cond, at);
      if (c.re !== undefined && c.re.names.length > 0) {
        for (const name of c.re.names) {
          if (!(CAPTURE_FIELDS as readonly string[]).includes(name)) throw new MappingError(`${at}: the named group "${name}" is not a field a group can give (${CAPTURE_FIELDS.join(', ')})`);
          if (named.has(name)) throw new MappingError(`${at}: the named group "${name}" appears twice in this rule`);
          named.add(name);
        }
        const re = c.re;
        captures.push((r) => {
          const v = getter(r);
          return v === undefined || v === null || typeof v === 'object' ? undefined : re.groups(String(v));
        });
      }
      return c.test;
    });
    if (rule.scope !== undefined && !LEASE_SCOPED_TYPES.includes(rule.type)) {
      throw new MappingError(where(`/match/${i}/scope: a ${rule.type} is about one resource; "scope": "lease" is for ${LEASE_SCOPED_TYPES.join(', ')}`));
    }
    for (const [field, value] of Object.entries(rule.set ?? {})) {
      if (field === 'result' && !RESULTS[rule.type].includes(value)) throw new MappingError(where(`/match/${i}/set/result: "${value}" is not a result of ${rule.type} (${RESULTS[rule.type].join(', ')})`));
      if (field === 'observer' && !(OBSERVERS as readonly string[]).includes(value)) throw new MappingError(where(`/match/${i}/set/observer: "${value}" is not one of ${OBSERVERS.join(', ')}`));
    }
    const compiled: CompiledRule = { tests, type: rule.type, set: rule.set ?? {} };
    if (captures.length > 0) {
      compiled.capture = (r) => {
        const out = Object.create(null) as Record<string, string>;
        for (const c of captures) Object.assign(out, c(r));
        return out;
      };
    }
    if (rule.scope !== undefined) compiled.scope = rule.scope;
    return compiled;
  });
  // A rule can never match when an earlier rule matches every record it would: each of the
  // earlier rule's conditions is implied by one of its own on the same path.
  match.forEach((rule, i) => {
    const j = match.findIndex((earlier, at) => at < i && subsumes(earlier.when, rule.when));
    if (j !== -1) {
      const all = Object.keys(match[j]!.when).length === 0;
      throw new MappingError(where(`/match/${i} can never match: /match/${j} before it matches ${all ? 'every record' : 'every record it would'}; put the more specific rule first`));
    }
  });
  return rules;
}

function condition(get: Getter, cond: Condition, where: string): { test: Test; re?: SafeRegex } {
  if (cond === null || typeof cond !== 'object') return { test: (r) => same(get(r), cond) };
  const tests: Test[] = [];
  let compiled: SafeRegex | undefined;
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
    const re = (compiled = safeRegex(cond.regex, cond.flags ?? '', where));
    tests.push((r) => {
      const v = get(r);
      if (v === undefined || v === null || typeof v === 'object') return false;
      return re.test(String(v)); // on its first MAX_REGEX_INPUT characters
    });
  } else if (cond.flags !== undefined) throw new MappingError(`${where}: "flags" needs "regex"`);
  if (tests.length === 1) return { test: tests[0]!, re: compiled };
  return { test: (r) => tests.every((t) => t(r)), re: compiled };
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
