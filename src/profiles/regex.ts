/**
 * Regular expressions from mapping files, run in bounded time. A pattern is checked when the
 * mapping is loaded: one that V8's backtracking engine provably runs in linear time (per start
 * position, a bounded number of ways to match: no unbounded quantifier, or one in a pattern
 * anchored with `^`) runs on V8, the fastest; any other runs on re2js, a port of RE2 whose
 * matching time is linear in the input whatever the pattern. Lookaround and backreferences have
 * no linear-time implementation and are refused, as are patterns longer than MAX_REGEX_LENGTH.
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { MappingError } from './names.js';

type RE2Module = typeof import('re2js');
let re2js: RE2Module | undefined;
/** re2js, loaded when a pattern first needs it (it adds about 50 ms to start-up). */
function RE2(): typeof RE2JS {
  re2js ??= createRequire(import.meta.url)('re2js') as RE2Module;
  return re2js.RE2JS;
}

/** Longest text a regular expression is run on (bounds the cost of any pattern). */
export const MAX_REGEX_INPUT = 4096;
/** Longest pattern a mapping may hold. */
export const MAX_REGEX_LENGTH = 1000;
/** Most ways a V8-run pattern may have to match at one start position. */
const MAX_PATHS = 1000;

export interface SafeRegex {
  /** Does the pattern match somewhere in `s` (only its first MAX_REGEX_INPUT characters are read)? */
  test(s: string): boolean;
  /**
   * The named groups of the first match in `s` (same bound), each group that took part in it;
   * undefined when the pattern does not match.
   */
  groups(s: string): Record<string, string> | undefined;
  /** The names of the pattern's named groups (`(?<name>…)`), in order. */
  readonly names: readonly string[];
  /** Which engine runs it. */
  readonly engine: 'v8' | 're2';
}

/**
 * The ways a (sub)pattern can match at one position, about `k * n^d` for an input of n characters
 * (Infinity: exponential).
 */
interface Cost {
  k: number;
  d: number;
  /**
   * Its one unbounded quantifier is guarded: it follows a character the quantified set cannot
   * match (`token (\d+)`), so the runs it scans from different start positions never overlap.
   */
  g?: boolean;
  /** The quantified atom, when the (sub)pattern starts with an unbounded quantifier of one character. */
  lead?: string;
}

class Unsupported extends Error {}

/** Compile a mapping's pattern for the engine that runs it in linear time; MappingError naming `where` if it cannot. */
export function compileRegex(source: string, flags: string, where: string): SafeRegex {
  if (source.length > MAX_REGEX_LENGTH) {
    throw new MappingError(`${where}: regular expression is ${source.length} characters long; at most ${MAX_REGEX_LENGTH} are allowed`);
  }
  let v8: RegExp;
  try {
    v8 = new RegExp(source, flags);
  } catch (err) {
    throw new MappingError(`${where}: bad regular expression: ${(err as Error).message}`);
  }
  const ambiguous = ambiguousEscape(source);
  if (ambiguous !== undefined) {
    throw new MappingError(
      `${where}: regular expression ${JSON.stringify(source)} uses the escape \\${ambiguous}, which JavaScript and RE2 (the linear-time engine some patterns run on) read differently; write the character itself, or a class such as [0-9A-F] (see "Mapping files" in the README)`,
    );
  }
  let linear: boolean;
  try {
    linear = linearOnV8(source, flags);
  } catch (err) {
    if (!(err instanceof Unsupported)) throw err;
    throw new MappingError(
      `${where}: regular expression ${JSON.stringify(source)} uses ${err.message}, which cannot be matched in linear time; rewrite it without (see "Mapping files" in the README)`,
    );
  }
  const names = groupNames(source);
  if (linear) {
    return {
      engine: 'v8',
      names,
      test: (s) => v8.test(clipped(s)),
      groups: (s) => {
        const m = v8.exec(clipped(s));
        if (m === null) return undefined;
        return present(names, (n) => m.groups?.[n]);
      },
    };
  }
  let re2: RE2JS;
  try {
    re2 = RE2().compile(RE2().translateRegExp(source), re2Flags(flags));
  } catch (err) {
    throw new MappingError(
      `${where}: regular expression ${JSON.stringify(source)} could backtrack for a long time, so it runs on the linear-time engine (RE2), which cannot read it: ${(err as Error).message}`,
    );
  }
  return {
    engine: 're2',
    names,
    test: (s) => re2.test(clipped(s)),
    groups: (s) => {
      const m = re2.matcher(clipped(s));
      if (!m.find()) return undefined;
      return present(names, (n) => m.group(n) ?? undefined);
    },
  };
}

/** The names of `(?<name>…)` groups in a pattern (escapes and classes skipped). */
function groupNames(source: string): string[] {
  const out: string[] = [];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(' && source[i + 1] === '?' && source[i + 2] === '<' && source[i + 3] !== '=' && source[i + 3] !== '!') {
      const end = source.indexOf('>', i + 3);
      if (end !== -1) out.push(source.slice(i + 3, end));
    }
  }
  return out;
}

/** The groups that took part in a match (a group of an alternative not taken has no value). */
function present(names: readonly string[], get: (name: string) => string | undefined): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const n of names) {
    const v = get(n);
    if (v !== undefined) out[n] = v;
  }
  return out;
}

/**
 * Escapes whose meaning differs between JavaScript without the `u` flag (Annex B: `\u{0,}` is
 * `u*`, `\x41` is `A`, `\pL` is `pL`) and RE2, inside or outside a class: refused, so that the
 * checker reads a pattern as V8 runs it and a pattern means the same on either engine.
 */
const AMBIGUOUS_ESCAPES = new Set(['u', 'x', 'c', 'p', 'P', 'a', 'z', 'A', 'Q', 'E', 'C']);

function ambiguousEscape(source: string): string | undefined {
  for (let i = 0; i < source.length; i++) {
    if (source.charCodeAt(i) !== 92 /* \ */) continue;
    const e = source[i + 1];
    if (e !== undefined && AMBIGUOUS_ESCAPES.has(e)) return e;
    i++; // the escaped character, whatever it is
  }
  return undefined;
}

function clipped(s: string): string {
  return s.length > MAX_REGEX_INPUT ? s.slice(0, MAX_REGEX_INPUT) : s;
}

function re2Flags(flags: string): number {
  const R = RE2();
  let f = 0;
  if (flags.includes('i')) f |= R.CASE_INSENSITIVE;
  if (flags.includes('s')) f |= R.DOTALL;
  if (flags.includes('m')) f |= R.MULTILINE;
  return f;
}

/**
 * Does V8 run `source` in linear time? True when, at each start position, the pattern has a
 * bounded number of ways to match (at most MAX_PATHS): no `*`, `+` or `{n,}`, or one of them in a
 * pattern every alternative of which starts with `^` (without the `m` flag: one start position).
 * Throws Unsupported for lookaround and backreferences.
 */
export function linearOnV8(source: string, flags = ''): boolean {
  const p = new PatternCost(source, flags);
  const { cost, anchored } = p.top();
  if (cost.k > MAX_PATHS) return false;
  if (cost.d === 0) return true;
  return cost.d === 1 && ((anchored && !flags.includes('m')) || cost.g === true);
}

class PatternCost {
  private i = 0;
  /** The last atom read, when it consumes exactly one character and is not quantified. */
  private char: string | undefined;
  constructor(
    private readonly s: string,
    private readonly flags: string,
  ) {}

  top(): { cost: Cost; anchored: boolean } {
    const alts: { cost: Cost; anchored: boolean }[] = [];
    for (;;) {
      const anchored = this.s[this.i] === '^';
      alts.push({ cost: this.seq(), anchored });
      if (this.s[this.i] === '|') {
        this.i++;
        continue;
      }
      if (this.i < this.s.length) this.i++; // a stray ')' (V8 has already refused it)
      else break;
    }
    return { cost: alternation(alts.map((a) => a.cost)), anchored: alts.every((a) => a.anchored) };
  }

  private alt(): Cost {
    const alts: Cost[] = [this.seq()];
    while (this.s[this.i] === '|') {
      this.i++;
      alts.push(this.seq());
    }
    return alternation(alts);
  }

  private seq(): Cost {
    let k = 1;
    let d = 0;
    let g = true;
    let lead: string | undefined;
    let first = true;
    let prev: string | undefined;
    while (this.i < this.s.length && this.s[this.i] !== '|' && this.s[this.i] !== ')') {
      this.char = undefined;
      const t = this.term();
      if (first) lead = t.lead;
      first = false;
      const guarded = t.d === 0 || t.g === true || (t.d === 1 && t.lead !== undefined && prev !== undefined && disjoint(prev, t.lead, this.flags));
      k *= t.k;
      d += t.d;
      g &&= guarded;
      prev = this.char;
    }
    return { k, d, g: d > 0 && g, lead };
  }

  private term(): Cost {
    const body = this.atom();
    const single = this.char;
    const q = this.quantifier();
    if (q === undefined) return body;
    this.char = undefined;
    const { min, max } = q;
    if (max === Infinity) return body.k === 1 && body.d === 0 ? { k: 1, d: 1, lead: single } : { k: Infinity, d: Infinity };
    if (min === max) return { k: body.k ** max, d: body.d * max };
    let k = 0;
    for (let j = min; j <= max && k < Infinity; j++) k += body.k ** j;
    return { k, d: body.d * max };
  }

  private quantifier(): { min: number; max: number } | undefined {
    const c = this.s[this.i];
    let q: { min: number; max: number } | undefined;
    if (c === '*') q = { min: 0, max: Infinity };
    else if (c === '+') q = { min: 1, max: Infinity };
    else if (c === '?') q = { min: 0, max: 1 };
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.s.slice(this.i, this.i + 24));
      if (m === null) return undefined; // a literal brace
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.i += m[0].length - 1;
      q = { min, max };
    } else return undefined;
    this.i++;
    if (this.s[this.i] === '?') this.i++; // lazy: the same ways to match, tried in another order
    return q;
  }

  private atom(): Cost {
    const s = this.s;
    const start = this.i;
    const c = s[this.i]!;
    if (c === '(') {
      this.i++;
      if (s.startsWith('?=', this.i) || s.startsWith('?!', this.i)) throw new Unsupported('a lookahead');
      if (s.startsWith('?<=', this.i) || s.startsWith('?<!', this.i)) throw new Unsupported('a lookbehind');
      if (s.startsWith('?:', this.i)) this.i += 2;
      else if (s.startsWith('?<', this.i)) this.i = after(s, '>', this.i);
      else if (s[this.i] === '?') this.i = after(s, ':', this.i); // modifiers, (?i:…)
      const inner = this.alt();
      this.i++; // ')'
      this.char = undefined;
      return inner;
    }
    if (c === '[') {
      this.i++;
      if (s[this.i] === '^') this.i++;
      while (this.i < s.length && s[this.i] !== ']') this.i += s[this.i] === '\\' ? 2 : 1;
      this.i++;
      this.char = s.slice(start, this.i);
      return { k: 1, d: 0 };
    }
    if (c === '\\') {
      const e = s[this.i + 1] ?? '';
      if (e >= '1' && e <= '9') throw new Unsupported('a backreference');
      if (e === 'k' && s[this.i + 2] === '<') throw new Unsupported('a backreference');
      this.i += 2;
      if ((e === 'p' || e === 'P' || e === 'u') && s[this.i] === '{') this.i = after(s, '}', this.i);
      this.char = e === 'b' || e === 'B' ? undefined : s.slice(start, this.i);
      return { k: 1, d: 0 };
    }
    this.i++;
    this.char = c === '^' || c === '$' ? undefined : c;
    return { k: 1, d: 0 };
  }
}

function alternation(alts: Cost[]): Cost {
  let k = 0;
  let d = 0;
  let g = true;
  for (const a of alts) {
    k += a.k;
    d = Math.max(d, a.d);
    if (a.d > 0) g &&= a.g === true;
  }
  return { k, d, g: d > 0 && g, lead: alts.length === 1 ? alts[0]!.lead : undefined };
}

const disjointCache = new Map<string, boolean>();

/** Can no single character match both one-character atoms `a` and `b`? (Tried on every UTF-16 code unit.) */
function disjoint(a: string, b: string, flags: string): boolean {
  if (flags.includes('u')) return false;
  const key = `${flags}\0${a}\0${b}`;
  let out = disjointCache.get(key);
  if (out === undefined) {
    const f = flags.replace(/[gym]/g, '');
    const ra = new RegExp(`^(?:${a})$`, f);
    const rb = new RegExp(`^(?:${b})$`, f);
    out = true;
    for (let c = 0; c <= 0xffff && out; c++) {
      const ch = String.fromCharCode(c);
      if (ra.test(ch) && rb.test(ch)) out = false;
    }
    disjointCache.set(key, out);
  }
  return out;
}

/** Just past the next `c` from `i` (the end of `s` if there is none). */
function after(s: string, c: string, i: number): number {
  const at = s.indexOf(c, i);
  return at === -1 ? s.length : at + 1;
}

/**
 * Compile a user regular expression for bounded time (compileRegex above): V8 when the pattern provably
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
