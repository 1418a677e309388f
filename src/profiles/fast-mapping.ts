/**
 * The fast path of JSON mappings (app-json and mapping files of the same kind): one pass over the
 * line's text, without JSON.parse or the record object. Compiled from the mapping: which keys it
 * reads (every candidate of every canonical field, the paths the rules test, the placeholders of
 * `defaults`), and for each canonical field its candidates in order.
 *
 * Like the canonical fast path (fast-canonical.ts) it reads only the common shape: one object
 * whose keys the mapping reads hold plain strings (no escapes), numbers or literals, each written
 * once, with no key escaped; the values of other keys may be anything JSON (nested, escaped), and
 * are only checked to be JSON. Anything else, and any line whose event the general path would
 * refuse (with a reason), gives `undefined`: the general path (JSON.parse, then toEvent) decides. So it changes
 * speed, never results; test/fast-mapping.test.ts checks both paths against each other.
 *
 * The rules are not run per line: which rule matches depends only on the values of the keys the
 * rules read, and app logs repeat a few messages again and again. The first rule matching a set of
 * values is remembered (a bounded cache); a new set of values runs the compiled rules themselves
 * on a record of just those keys.
 */
import { basename } from 'node:path';
import { defaultObserver, defaultResult, OBSERVERS, RESULTS, type EventType, type LockEvent, type Observer } from '../model/event.js';
import { parseDuration, parseTimeValue, type TimeFormat } from '../model/time.js';
import { scalarEnd } from './fast-canonical.js';
import { LITERAL, NUMBER, STRING } from './fast-decisions.js';
import { parseFenceToken } from '../model/token.js';
import type { CompiledRule } from './mapping-conditions.js';
import type { RecordOrigin } from './types.js';

/** Most sets of rule inputs remembered; the cache starts again when full. */
const RULE_CACHE_SIZE = 4096;

export interface FastMappingPlan {
  /** The candidates of each canonical field, in order (dot paths are read as whole keys: lines are flat). */
  candidates: ReadonlyMap<string, readonly string[]>;
  /** The paths the rules test: `@field`, or a path read as it is. */
  whenPaths: readonly string[];
  rules: readonly CompiledRule[];
  defaults: Readonly<Record<string, string>>;
  format: TimeFormat;
  ttlFactor: number;
  ttlUnit: string;
}

type FastEvent = (text: string, origin: RecordOrigin) => LockEvent | null | undefined;

/** A `defaults` template: literal text, the input's base name, or a key's value. */
interface Piece {
  /** 0: `text` as it is; 1: the input's base name; 2: the value of key `slot`. */
  readonly kind: 0 | 1 | 2;
  readonly text: string;
  readonly slot: number;
}
interface Template {
  /** The whole text, when the template has no placeholder. */
  readonly constant: string | undefined;
  readonly pieces: readonly Piece[];
}

/** The fast path of a mapping, or undefined when its shape is not one the fast path reads. */
export function compileFastMapping(plan: FastMappingPlan): FastEvent | undefined {
  // The keys read, each once: its slot.
  const names: string[] = [];
  const slotOf = new Map<string, number>();
  const slot = (name: string): number => {
    let s = slotOf.get(name);
    if (s === undefined) {
      s = names.push(name) - 1;
      slotOf.set(name, s);
    }
    return s;
  };
  const fieldSlots = new Map<string, Int32Array>();
  for (const [field, paths] of plan.candidates) fieldSlots.set(field, Int32Array.from(paths.map(slot)));
  const ruleSlots: number[] = [];
  for (const p of plan.whenPaths) {
    const paths = p.startsWith('@') ? plan.candidates.get(p.slice(1)) : [p];
    if (paths === undefined) return undefined;
    for (const q of paths) if (!ruleSlots.includes(slot(q))) ruleSlots.push(slot(q));
  }
  const templates = new Map<string, Template>();
  for (const [field, t] of Object.entries(plan.defaults)) {
    const pieces: Piece[] = [];
    for (const part of t.split(/(\{[^{}]+\})/)) {
      if (part === '') continue;
      if (!part.startsWith('{')) pieces.push({ kind: 0, text: part, slot: -1 });
      else if (part === '{$file}') pieces.push({ kind: 1, text: '', slot: -1 });
      else pieces.push({ kind: 2, text: '', slot: slot(part.slice(1, -1)) });
    }
    templates.set(field, { constant: pieces.every((p) => p.kind === 0) ? pieces.map((p) => p.text).join('') : undefined, pieces });
  }
  // The first key of a dot path: written twice, the general path says so (a flat value there is no
  // object, so the path itself is read as one whole key only).
  for (const name of [...names]) if (name.includes('.')) slot(name.split('.')[0]!);
  // Keys an object has without owning them are read differently (own properties only): not here.
  if (names.some((n) => n in Object.prototype || n === '__proto__' || n.length === 0)) return undefined;

  // The keys in an open-addressing table by a hash of their characters: found without slicing the
  // key out of the line, and mostly without comparing it to any other.
  const KEY_TABLE = 1 << Math.max(6, Math.ceil(Math.log2(names.length * 4)));
  const keyMask = KEY_TABLE - 1;
  const keySlots = new Int32Array(KEY_TABLE).fill(-1);
  // Each key's characters, one after the other: where each starts and ends.
  const keyCodes = new Uint16Array(names.reduce((sum, name) => sum + name.length, 0));
  const codeStart = new Int32Array(names.length);
  const codeEnd = new Int32Array(names.length);
  const hashKey = (t: string, start: number, end: number): number => {
    let h = 0;
    for (let j = start; j < end; j++) h = (Math.imul(h, 31) + t.charCodeAt(j)) | 0;
    return h;
  };
  let codes = 0;
  names.forEach((name, s) => {
    let at = hashKey(name, 0, name.length) & keyMask;
    while (keySlots[at] !== -1) at = (at + 1) & keyMask;
    keySlots[at] = s;
    codeStart[s] = codes;
    for (let k = 0; k < name.length; k++) keyCodes[codes++] = name.charCodeAt(k);
    codeEnd[s] = codes;
  });
  /** The slot of the key at [start, end) whose hashKey is h, or -1. */
  const slotFor = (t: string, start: number, end: number, h: number): number => {
    for (let at = h & keyMask; ; at = (at + 1) & keyMask) {
      const s = keySlots[at]!;
      if (s === -1) return -1;
      let c = codeStart[s]!;
      const e = codeEnd[s]!;
      if (e - c !== end - start) continue;
      let j = start;
      while (c < e && keyCodes[c] === t.charCodeAt(j)) {
        c++;
        j++;
      }
      if (c === e) return s;
    }
  };


  const n = names.length;
  const starts = new Int32Array(n);
  const ends = new Int32Array(n);
  const kinds = new Uint8Array(n);
  const stamps = new Int32Array(n);
  const hashes = new Int32Array(n);
  const ruleSlot = new Uint8Array(n);
  for (const s of ruleSlots) ruleSlot[s] = 1;
  let stamp = 0;

  const get = (field: string): Int32Array => fieldSlots.get(field) ?? new Int32Array(0);
  const [cTs, cRes, cOwner, cLease, cOp, cToken, cTtl, cResult, cObs, cSource] = ['ts', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source'].map(get) as Int32Array[];
  const tResource = templates.get('resource');
  const tResult = templates.get('result');
  const tObserver = templates.get('observer');
  const tOwner = templates.get('ownerId');
  const tSource = templates.get('source');

  /** Slot s holds a present value (read in this line; not null, not ""). */
  const present = (s: number): boolean => {
    const kind = kinds[s];
    if (kind === STRING) return ends[s] !== starts[s];
    return kind === NUMBER || (kind === LITERAL && text.charCodeAt(starts[s]!) !== 110 /* null */);
  };
  /** The first candidate present in this line (not null, not ""), or -1. */
  const first = (cands: Int32Array): number => {
    for (let k = 0; k < cands.length; k++) {
      const s = cands[k]!;
      if (stamps[s] !== stamp) continue;
      if (present(s)) return s;
    }
    return -1;
  };
  let text = '';
  /** The value of slot s as JSON.parse gives it. */
  const value = (s: number): unknown => {
    const kind = kinds[s];
    const start = starts[s]!;
    const end = ends[s]!;
    if (kind === NUMBER) {
      // A plain integer of up to 15 digits is exact as a double, digit by digit; others as Number() reads them.
      const neg = text.charCodeAt(start) === 45 ? 1 : 0;
      if (end - start - neg <= 15) {
        let v = 0;
        let j = start + neg;
        for (; j < end; j++) {
          const c = text.charCodeAt(j);
          if (c < 48 || c > 57) break;
          v = v * 10 + (c - 48);
        }
        if (j === end) return neg === 1 ? -v : v;
      }
      return Number(text.slice(start, end));
    }
    const raw = text.slice(start, end);
    if (kind === STRING) return raw;
    return raw === 'true' ? true : raw === 'false' ? false : null;
  };
  /** str() of the value of slot s (present). */
  const strOf = (s: number): string => {
    const kind = kinds[s];
    if (kind === STRING) return text.slice(starts[s], ends[s]);
    if (kind === NUMBER) return String(Number(text.slice(starts[s], ends[s])));
    return text.slice(starts[s], ends[s]); // true or false
  };
  const strField = (cands: Int32Array): string | undefined => {
    const s = first(cands);
    return s === -1 ? undefined : strOf(s);
  };
  const fill = (template: Template | undefined, origin: RecordOrigin): string | undefined => {
    if (template === undefined) return undefined;
    if (template.constant !== undefined) return template.constant;
    let out = '';
    const pieces = template.pieces;
    for (let k = 0; k < pieces.length; k++) {
      const p = pieces[k]!;
      if (p.kind === 0) out += p.text;
      else if (p.kind === 1) out += basename(origin.file);
      else {
        const s = p.slot;
        if (stamps[s] !== stamp || !present(s)) return undefined;
        out += strOf(s);
      }
    }
    return out;
  };


  // Which rule a set of rule inputs matches (index, or -1): a table by a hash of the inputs as
  // written, each entry's inputs kept as one string (each slot's code and kind, its raw text, NUL;
  // a line holding no control character, the NUL ends the text).
  const RULE_TABLE = 2 * RULE_CACHE_SIZE;
  const ruleMask = RULE_TABLE - 1;
  let ruleKeys: (Uint16Array | undefined)[] = new Array(RULE_TABLE).fill(undefined);
  const ruleHashes = new Int32Array(RULE_TABLE);
  const ruleFound = new Int32Array(RULE_TABLE);
  let ruleCount = 0;
  const inputsAre = (key: Uint16Array): boolean => {
    let pos = 0;
    for (let k = 0; k < ruleSlots.length; k++) {
      const s = ruleSlots[k]!;
      if (stamps[s] !== stamp) continue;
      if (key[pos++] !== 0x100 + s * 4 + kinds[s]!) return false;
      const start = starts[s]!;
      const end = ends[s]!;
      if (pos + end - start >= key.length) return false;
      for (let j = start; j < end; j++) if (key[pos++] !== text.charCodeAt(j)) return false;
      if (key[pos++] !== 0) return false;
    }
    return pos === key.length;
  };
  /** A hash of text[start, end), as the scan makes it of the strings the rules read. */
  const valueHash = (start: number, end: number): number => {
    let vh = 0;
    for (let j = start; j < end; j++) vh = (Math.imul(vh, 31) + text.charCodeAt(j)) | 0;
    return vh;
  };
  const chooseRule = (): number => {
    let h = 0;
    for (let k = 0; k < ruleSlots.length; k++) {
      const s = ruleSlots[k]!;
      if (stamps[s] !== stamp) continue;
      const kind = kinds[s]!;
      h = Math.imul(h, 0x01000193) ^ (0x100 + s * 4 + kind);
      h = Math.imul(h, 0x01000193) ^ (kind === STRING ? hashes[s]! : valueHash(starts[s]!, ends[s]!));
    }
    let at = h & ruleMask;
    for (;;) {
      const key = ruleKeys[at];
      if (key === undefined) break;
      if (ruleHashes[at] === h && inputsAre(key)) return ruleFound[at]!;
      at = (at + 1) & ruleMask;
    }
    // New inputs: the rules themselves, on a record of just the keys they read, as JSON.parse would make it.
    let key = '';
    const record: Record<string, unknown> = {};
    for (let k = 0; k < ruleSlots.length; k++) {
      const s = ruleSlots[k]!;
      if (stamps[s] !== stamp) continue;
      key += String.fromCharCode(0x100 + s * 4 + kinds[s]!) + text.slice(starts[s], ends[s]) + '\u0000';
      record[names[s]!] = value(s);
    }
    let found = -1;
    for (let i = 0; i < plan.rules.length && found === -1; i++) {
      const r = plan.rules[i]!;
      let ok = true;
      for (let j = 0; j < r.tests.length && ok; j++) ok = r.tests[j]!(record);
      if (ok) found = i;
    }
    if (ruleCount >= RULE_CACHE_SIZE) {
      ruleKeys = new Array(RULE_TABLE).fill(undefined);
      ruleCount = 0;
      at = h & ruleMask;
    }
    const codes = new Uint16Array(key.length);
    for (let k = 0; k < key.length; k++) codes[k] = key.charCodeAt(k);
    ruleKeys[at] = codes;
    ruleHashes[at] = h;
    ruleFound[at] = found;
    ruleCount++;
    return found;
  };

  // The last value of a few fields: consecutive lines often repeat them (one string, one hash).
  let lastResource = '';
  let lastOwner = '';
  let lastLease = '';
  let lastSource = '';
  const recent = (s: number, last: string): string => {
    const start = starts[s]!;
    const len = ends[s]! - start;
    if (kinds[s] !== STRING || last.length !== len) return strOf(s);
    for (let k = 0; k < len; k++) if (text.charCodeAt(start + k) !== last.charCodeAt(k)) return strOf(s);
    return last;
  };

  return (t: string, origin: RecordOrigin): LockEvent | null | undefined => {
    const len = t.length;
    let i = 0;
    while (t.charCodeAt(i) === 32) i++;
    if (t.charCodeAt(i) !== 123 /* { */) return undefined;
    i++;
    while (t.charCodeAt(i) === 32) i++;
    if (t.charCodeAt(i) === 125) return undefined; // {}: the general path says what it is
    stamp++;
    if (stamp === 0x7fffffff) {
      stamps.fill(0);
      stamp = 1;
    }
    for (;;) {
      if (t.charCodeAt(i) !== 34 /* " */) return undefined;
      // The key, hashed on the way (as hashKey does); an escape or a control character: the general path.
      const keyStart = i + 1;
      let keyEnd = keyStart;
      let h = 0;
      for (; keyEnd < len; keyEnd++) {
        const k = t.charCodeAt(keyEnd);
        if (k === 34) break;
        if (k === 92 || k < 32) return undefined;
        h = (Math.imul(h, 31) + k) | 0;
      }
      if (keyEnd === len) return undefined;
      const s = slotFor(t, keyStart, keyEnd, h);
      i = keyEnd + 1;
      while (t.charCodeAt(i) === 32) i++;
      if (t.charCodeAt(i) !== 58 /* : */) return undefined;
      i++;
      while (t.charCodeAt(i) === 32) i++;
      const c = t.charCodeAt(i);
      let vs: number;
      let ve: number;
      let kind: number;
      if (s === -1 && (c === 34 || c === 123 || c === 91)) {
        // A string, object or array the mapping does not read: skipped, but checked to be JSON
        // (escapes and nesting allowed; the general path would refuse the line otherwise).
        i = skipValue(t, i, len, 0);
        if (i === -1) return undefined;
        vs = ve = 0;
        kind = 0;
      } else if (c === 34) {
        vs = i + 1;
        ve = vs;
        if (ruleSlot[s] === 1) {
          // A value the rules read: hashed on the way (as valueHash does), for chooseRule.
          let vh = 0;
          for (; ve < len; ve++) {
            const k = t.charCodeAt(ve);
            if (k === 34) break;
            if (k === 92 || k < 32) return undefined;
            vh = (Math.imul(vh, 31) + k) | 0;
          }
          hashes[s] = vh;
        } else {
          for (; ve < len; ve++) {
            const k = t.charCodeAt(ve);
            if (k === 34) break;
            if (k === 92 || k < 32) return undefined;
          }
        }
        if (ve === len) return undefined;
        kind = STRING;
        i = ve + 1;
      } else {
        vs = i;
        ve = scalarEnd(t, i, len);
        if (ve === -1) return undefined; // a nested value the mapping reads, or not JSON
        kind = c === 116 || c === 102 || c === 110 ? LITERAL : NUMBER;
        i = ve;
      }

      if (s !== -1) {
        if (stamps[s] === stamp) return undefined; // written twice: the general path says what it means
        stamps[s] = stamp;
        starts[s] = vs;
        ends[s] = ve;
        kinds[s] = kind;
      }
      while (t.charCodeAt(i) === 32) i++;
      const d = t.charCodeAt(i);
      if (d === 44 /* , */) {
        i++;
        while (t.charCodeAt(i) === 32) i++;
        continue;
      }
      if (d !== 125 /* } */) return undefined;
      i++;
      break;
    }
    while (t.charCodeAt(i) === 32) i++;
    if (i !== len) return undefined;
    text = t;

    const r = chooseRule();
    if (r === -1) return null; // no lock event: ignored
    const rule = plan.rules[r]!;
    const type: EventType = rule.type;
    const set = rule.set;

    const sTs = first(cTs);
    if (sTs === -1) return undefined; // no time, or the wrapper's: the general path
    const time = parseTimeValue(value(sTs), plan.format);
    if (!time.ok) return undefined;

    let resource: string | undefined = set.resource;
    if (resource === undefined) {
      const s = first(cRes);
      resource = s !== -1 ? (lastResource = recent(s, lastResource)) : fill(tResource, origin);
    }
    if (resource === undefined || resource === '') return undefined;

    const result = set.result ?? strField(cResult) ?? fill(tResult, origin) ?? defaultResult(type);
    if (result === undefined || !RESULTS[type].includes(result)) return undefined;

    const observerRaw = set.observer ?? strField(cObs) ?? fill(tObserver, origin);
    let observer: Observer = defaultObserver(type);
    if (observerRaw !== undefined) {
      if (!(OBSERVERS as readonly string[]).includes(observerRaw)) return undefined;
      observer = observerRaw as Observer;
    }

    let fenceToken: bigint | undefined;
    const sToken = first(cToken);
    if (sToken !== -1) {
      const digits = kinds[sToken] === STRING ? smallDigits(t, starts[sToken]!, ends[sToken]!) : -1;
      if (digits !== -1) fenceToken = BigInt(digits); // what parseFenceToken makes of a string of up to 15 digits
      else {
        const raw = value(sToken);
        if (typeof raw === 'number' && !Number.isSafeInteger(raw)) return undefined; // its digits: the general path
        const tk = parseFenceToken(typeof raw === 'string' ? raw.trim() : raw);
        if (!tk.ok) return undefined;
        fenceToken = tk.value;
      }
    }
    let leaseId: string | undefined;
    const sLease = first(cLease);
    if (sLease !== -1) {
      if (kinds[sLease] === NUMBER && !Number.isSafeInteger(Number(t.slice(starts[sLease], ends[sLease])))) return undefined;
      leaseId = lastLease = recent(sLease, lastLease);
    }
    let ttlMs: number | undefined;
    const sTtl = first(cTtl);
    if (sTtl !== -1) {
      const raw = value(sTtl);
      ttlMs = typeof raw === 'number' ? raw * plan.ttlFactor : typeof raw === 'string' ? (parseDuration(raw, plan.ttlUnit as never) ?? NaN) : NaN;
      if (!(ttlMs >= 0)) return undefined;
    }
    let ownerId: string | undefined = set.ownerId;
    if (ownerId === undefined) {
      const s = first(cOwner);
      ownerId = s !== -1 ? (lastOwner = recent(s, lastOwner)) : fill(tOwner, origin);
    }
    let source: string | undefined = set.source;
    if (source === undefined) {
      const s = first(cSource);
      source = s !== -1 ? (lastSource = recent(s, lastSource)) : (fill(tSource, origin) ?? origin.source);
    }
    return {
      ts: time.ms,
      type,
      resource,
      ownerId,
      leaseId,
      operationId: strField(cOp),
      fenceToken,
      ttlMs,
      result,
      observer,
      source,
      file: origin.file,
      line: origin.line,
      record: undefined,
      text: t,
      fields: undefined,
      offset: origin.offset,
      bytes: origin.bytes,
    };
  };
}

/** Deepest nesting skipped; deeper lines go the general way. */
const MAX_DEPTH = 32;

/**
 * Index just past the JSON value (string, number, literal, object or array) at i, or -1 when it
 * is not one as JSON.parse reads it (or is nested deeper than MAX_DEPTH, or has whitespace other
 * than spaces between its tokens).
 */
function skipValue(t: string, i: number, n: number, depth: number): number {
  const c = t.charCodeAt(i);
  if (c === 34) return skipString(t, i, n);
  if (c !== 123 && c !== 91) return scalarEnd(t, i, n);
  if (depth >= MAX_DEPTH) return -1;
  const close = c === 123 ? 125 : 93;
  i++;
  while (t.charCodeAt(i) === 32) i++;
  if (t.charCodeAt(i) === close) return i + 1;
  for (;;) {
    if (c === 123) {
      if (t.charCodeAt(i) !== 34) return -1;
      i = skipString(t, i, n);
      if (i === -1) return -1;
      while (t.charCodeAt(i) === 32) i++;
      if (t.charCodeAt(i) !== 58 /* : */) return -1;
      i++;
      while (t.charCodeAt(i) === 32) i++;
    }
    i = skipValue(t, i, n, depth + 1);
    if (i === -1) return -1;
    while (t.charCodeAt(i) === 32) i++;
    const d = t.charCodeAt(i);
    if (d === close) return i + 1;
    if (d !== 44 /* , */) return -1;
    i++;
    while (t.charCodeAt(i) === 32) i++;
  }
}

/** Index just past the JSON string at i (its quote), or -1: a raw control character, a bad escape, no end. */
function skipString(t: string, i: number, n: number): number {
  for (let j = i + 1; j < n; j++) {
    const k = t.charCodeAt(j);
    if (k === 34) return j + 1;
    if (k < 32) return -1;
    if (k === 92) {
      const e = t.charCodeAt(++j);
      if (e === 117 /* u */) {
        for (let h = 0; h < 4; h++) {
          const x = t.charCodeAt(++j);
          if (!((x >= 48 && x <= 57) || (x >= 65 && x <= 70) || (x >= 97 && x <= 102))) return -1;
        }
      } else if (e !== 34 && e !== 92 && e !== 47 && e !== 98 && e !== 102 && e !== 110 && e !== 114 && e !== 116) return -1;
    }
  }
  return -1;
}

/** The value of t[start, end) when it is 1 to 15 ASCII digits, else -1. */
function smallDigits(t: string, start: number, end: number): number {
  if (end <= start || end - start > 15) return -1;
  let v = 0;
  for (let j = start; j < end; j++) {
    const c = t.charCodeAt(j);
    if (c < 48 || c > 57) return -1;
    v = v * 10 + (c - 48);
  }
  return v;
}

