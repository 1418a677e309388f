/**
 * `stalewrite map --suggest`: a mapping file drafted from a sample of the user's own lines.
 *
 * Nothing here knows any particular log: fields are recognised from their names (split into
 * words: `lease_ttl.ms` → lease, ttl, ms; `fencingToken` → fencing, token) and from their values
 * (times that parse, integers that grow with each acquisition, lease ids, result words). Event
 * types come from the values of the type-like and message fields, read as phrases ("lock
 * acquired", "lease-lost", "write refused: stale revision"). Every guess that could not be made is
 * returned as a question, to be printed beside the mapping.
 */
import { EVENT_TYPES, RESULTS, type EventType } from '../model/event.js';
import { parseDuration, parseTimeValue } from '../model/time.js';
import { parseFenceToken } from '../model/token.js';
import { detectProfile } from './index.js';
import type { MappingSpec } from './mapping.js';
import { expandOtlp } from './otlp.js';
import { klogParser, parseLogfmt, type KlogOptions } from './parsers.js';

/** Lines read from each file (the CLI reads no more). */
export const SUGGEST_SAMPLE_LINES = 2000;

export interface SampleFile {
  name: string;
  /** The first lines of the file; null for a line too long to read. */
  lines: readonly (string | null)[];
}

export interface Suggestion {
  mapping: MappingSpec;
  /** What was recognised, and from what: one line each. */
  notes: string[];
  /** Guesses that could not be made: one line each, for the user to answer by editing the mapping. */
  questions: string[];
}

type Shape = 'json' | 'logfmt' | 'klog' | 'otlp';
type Scalar = string | number | boolean;
type Rec = Record<string, unknown>;

interface Sample {
  file: number;
  flat: Map<string, Scalar>;
}

interface PathStats {
  path: string;
  words: string[];
  count: number;
  numbers: number;
  strings: number;
  /** Distinct values as strings, with counts (bounded). */
  values: Map<string, number>;
  withSpace: number;
}

const MAX_DISTINCT = 500;
const MAX_DEPTH = 4;

// ---------------------------------------------------------------------------------------------
// Words

/** `lease_ttl.ms` → [lease, ttl, ms]; `fencingToken` → [fencing, token]; `leaseID` → [lease, id]. */
export function nameWords(path: string): string[] {
  return path
    .split('.')
    .flatMap((seg) =>
      seg
        .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
        .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
        .split(/[^A-Za-z0-9µ]+/),
    )
    .filter((w) => w !== '')
    .map((w) => w.toLowerCase());
}

/** A value read as a phrase: camelCase, dots, dashes, slashes and punctuation become spaces. */
function phraseOf(value: string): string {
  return ` ${value
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .replace(/[^a-z0-9µ]+/g, ' ')
    .trim()} `;
}

const has = (words: readonly string[], ...any: string[]) => any.some((w) => words.includes(w));

// ---------------------------------------------------------------------------------------------
// Phrases → event types

export interface PhraseClass {
  type: EventType;
  /** A result the phrase itself states ("keepalive failed", "write rejected: stale token"). */
  result?: string;
  /** A write "rejected" with no reason in the phrase. */
  plain?: boolean;
}

const W = (alternatives: string) => new RegExp(` (${alternatives}) `);
const FAIL = W('fail|failed|failure|failing|error|errored|timeout|timed out|deadline exceeded|lost');
/** Attempts and intentions are not events: "attempting to acquire leader lease", "waiting for lock". */
const IGNORE = /^ (attempting|attempt|trying|try|waiting|wait|will|about to|requesting|going to|starting to) | (skipped|skipping|dry run) /;
const KEEPALIVE = W('keepalive|keep alive|keepalives|renew|renewed|renewal|renewing|renews|heartbeat|heartbeats|refresh|refreshed|extend|extended|extension|ttl refreshed');
const REVOKE = W('revoke|revoked|revoking');
const RELEASE = W('release|released|releasing|unlock|unlocked|unlocking');
/** "Unable to fully release the lock on resource …" is node-redlock's refusal (the lock was not the caller's any more). */
const RELEASE_REJECTED = W('rejected|refused|denied|failed|not|mismatch|unable|cannot|could not');
const WRITE = W('write|wrote|written|writing|update|updated|updating|put|post|posted|commit|committed|store|stored|save|saved|apply|applied|insert|inserted|upsert|upserted|persist|persisted');
const STALE = W('stale|fenced|fenced off|outdated|superseded|conflict|old token|old revision|old fence|older token');
const REJECTED = W('rejected|refused|denied|declined');
const TIMEOUT = W('timeout|timed out|deadline exceeded');
const ERROR = W('error|errored|failed|failure|exception');
/** A token named beside a refusal: "fencing token 12 is older than stored token 40". */
const TOKEN_WORD = W('fence|fencing|token|revision|epoch|generation|czxid|zxid');
const REFUSED_TOKEN = W('rejected|refused|older|lower|behind|outdated|stale|superseded|below');
const LOCK_WORD = W('lock|lease|session|mutex|leader');
const ACCEPTED = W('accepted|applied|committed|ok|success|succeeded|stored|saved|written|persisted|done|updated|inserted|upserted');
const BUSY = W('busy|contended|contention|already locked|already held|held by|lock held|is held|locked by|not acquired|failed to acquire|could not acquire|cannot acquire|unavailable|already taken|occupied');
const EXPIRE = W('expire|expired|expires|expiry|expiring|lost|session expired|lease timeout|timed out');
const ACQUIRE = W('acquire|acquired|granted|obtained|got lock|got the lock|took lock|took the lock|locked|lock key created|key created|became leader|elected|holding lock');

/** klog's caller field of client-go's leader election: `leaderelection.go:297` (text), `leaderelection/leaderelection.go:297` (JSON). */
const CLIENT_GO = /(^|\/)leaderelection\.go:\d+$/;

/** What a phrase (a type value or a message) says happened, if it names a lock or write step. */
export function classifyPhrase(value: string): PhraseClass | undefined {
  const p = phraseOf(value);
  if (p.trim() === '' || IGNORE.test(p)) return undefined;
  // The canonical vocabulary itself first.
  const bare = p.trim();
  if ((EVENT_TYPES as readonly string[]).includes(bare)) return { type: bare as EventType };
  if (KEEPALIVE.test(p)) return FAIL.test(p) ? { type: 'keepalive', result: 'failed' } : { type: 'keepalive' };
  if (REVOKE.test(p)) return { type: 'revoke' };
  if (RELEASE.test(p)) return RELEASE_REJECTED.test(p) ? { type: 'release', result: 'rejected' } : { type: 'release' };
  if (WRITE.test(p)) {
    if (STALE.test(p)) return { type: 'write', result: 'rejected-stale-fence' };
    if (REJECTED.test(p)) return { type: 'write', result: 'rejected', plain: true };
    if (TIMEOUT.test(p)) return { type: 'write', result: 'timeout' };
    if (ERROR.test(p)) return { type: 'write', result: 'error' };
    if (ACCEPTED.test(p) && !/ (update|put|write|store|save|commit) /.test(p)) return { type: 'write', result: 'accepted' };
    if (/ (write|put|commit|store|save|apply|insert|upsert|persist) (accepted|applied|committed|ok|succeeded|done|stored|saved) /.test(p)) return { type: 'write', result: 'accepted' };
    return { type: 'write' };
  }
  // A refused write that names no write verb: "Stale epoch, snapshot discarded".
  if (!LOCK_WORD.test(p) && (STALE.test(p) || (TOKEN_WORD.test(p) && REFUSED_TOKEN.test(p)))) return { type: 'write', result: 'rejected-stale-fence' };
  // "held by X expired at …; taking over": the other holder's lease ended (past tense wins over "held by"),
  // but not "is held by X and has not yet expired" (client-go's busy line).
  if (W('expired|lost').test(p) && !W('not yet expired|not expired').test(p)) return { type: 'expire' };
  if (BUSY.test(p)) return { type: 'acquire', result: 'busy' };
  if (EXPIRE.test(p)) return { type: 'expire' };
  if (ACQUIRE.test(p)) return { type: 'acquire' };
  return undefined;
}

/** The canonical result a raw result value stands for, for events of this type. */
export function classifyResult(type: EventType, raw: string): string | undefined {
  const p = phraseOf(raw);
  const bare = p.trim();
  if (RESULTS[type].includes(bare.replace(/ /g, '-'))) return bare.replace(/ /g, '-');
  const n = /^\d{3}$/.test(bare) ? Number(bare) : undefined;
  const yes = W('ok|okay|success|succeeded|successful|true|yes|1|done|applied|committed|accepted|stored|saved|written|granted|acquired|renewed|released|deleted|alive');
  const no = W('false|no|0|failed|failure|fail|error|errored|rejected|refused|denied');
  switch (type) {
    case 'acquire':
      if (BUSY.test(p) || W('busy|held|locked|conflict|failed|denied|timeout|timed out|false|no|rejected|refused').test(p)) return 'busy';
      if (yes.test(p)) return 'granted';
      return undefined;
    case 'keepalive':
      if (FAIL.test(p) || no.test(p) || EXPIRE.test(p)) return 'failed';
      if (yes.test(p)) return 'ok';
      return undefined;
    case 'release':
      if (RELEASE_REJECTED.test(p) || no.test(p)) return 'rejected';
      if (yes.test(p)) return 'released';
      return undefined;
    case 'expire':
      return 'expired';
    case 'revoke':
      return 'revoked';
    case 'write':
      if (n !== undefined) return n >= 200 && n < 300 ? 'accepted' : n === 409 || n === 412 ? 'rejected-stale-fence' : n === 408 || n === 504 ? 'timeout' : n >= 500 ? 'error' : n >= 400 ? 'rejected' : undefined;
      if (STALE.test(p) || W('stale token|stale fence|fence rejected|precondition failed').test(p)) return 'rejected-stale-fence';
      if (TIMEOUT.test(p)) return 'timeout';
      if (REJECTED.test(p)) return 'rejected';
      if (W('error|errored|failed|failure|exception').test(p)) return 'error';
      if (yes.test(p) || ACCEPTED.test(p)) return 'accepted';
      return undefined;
  }
}

/** Who logged a record, from a role-like or service-name value. */
export function classifyObserver(raw: string): 'authority' | 'worker' | 'resource' | undefined {
  const p = phraseOf(raw);
  if (W('authority|lockd|lock service|lock server|lockservice|etcd|zookeeper|zk|consul|coordinator|lease server|leases|lock manager|arbiter').test(p)) return 'authority';
  if (W('resource|db|database|postgres|postgresql|pg|mysql|proxy|store|storage|storage node|fence proxy|dynamodb|redis|server side|backend').test(p)) return 'resource';
  if (W('worker|client|app|application|service|consumer|job|agent|caller|writer').test(p)) return 'worker';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Reading the sample

function shapeOf(firstLine: string): Shape {
  switch (detectProfile(firstLine)) {
    case 'k8s-leaderelection':
      // klog text or klog JSON: the klog parser reads both (and the lease name in printf-style messages).
      return 'klog';
    case 'logfmt':
      return 'logfmt';
    case 'otlp-json':
      return 'otlp';
    default:
      return 'json';
  }
}

function flatten(rec: Rec, out: Map<string, Scalar>, prefix: string, depth: number): void {
  for (const key of Object.keys(rec)) {
    if (key === '' || key.startsWith('.') || key.endsWith('.') || key.includes('..')) continue;
    const v = rec[key];
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (v === null || v === undefined || v === '') continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out.set(path, v);
    else if (typeof v === 'object' && !Array.isArray(v) && depth < MAX_DEPTH) flatten(v as Rec, out, path, depth + 1);
  }
}

function readSample(files: readonly SampleFile[], klog: KlogOptions | undefined, notes: string[], questions: string[]): { shape: Shape; samples: Sample[] } {
  const shapes = files.map((f) => {
    const first = f.lines.find((l): l is string => l !== null && l.trim() !== '');
    return first === undefined ? undefined : shapeOf(first);
  });
  const counts = new Map<Shape, number>();
  for (const s of shapes) if (s !== undefined) counts.set(s, (counts.get(s) ?? 0) + 1);
  const shape = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'json';
  files.forEach((f, i) => {
    if (shapes[i] !== undefined && shapes[i] !== shape) {
      questions.push(`${f.name} looks like ${describeShape(shapes[i]!)}, the other files like ${describeShape(shape)}: one mapping reads one shape, so this one is read as ${describeShape(shape)} here; suggest a mapping for it on its own and analyse it separately (or use --profile auto)`);
    }
  });
  const parseKlog = klogParser(klog);
  const samples: Sample[] = [];
  files.forEach((f, file) => {
    for (const line of f.lines) {
      if (line === null || line.trim() === '') continue;
      let rec: unknown;
      if (shape === 'logfmt') rec = parseLogfmt(line);
      else if (shape === 'klog') rec = parseKlog(line);
      else {
        try {
          rec = JSON.parse(line);
        } catch {
          continue;
        }
      }
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) continue;
      const recs = shape === 'otlp' ? expandOtlp(rec as Rec) : [rec as Rec];
      for (const r of recs) {
        const flat = new Map<string, Scalar>();
        flatten(r, flat, '', 0);
        if (flat.size > 0) samples.push({ file, flat });
      }
    }
  });
  notes.push(`read ${samples.length} records from ${files.length} file(s) as ${describeShape(shape)}`);
  return { shape, samples };
}

function describeShape(s: Shape): string {
  return s === 'json' ? 'JSON lines' : s === 'logfmt' ? 'logfmt' : s === 'klog' ? 'klog (text or JSON)' : 'OTLP/JSON';
}

function statsOf(samples: readonly Sample[]): Map<string, PathStats> {
  const stats = new Map<string, PathStats>();
  for (const s of samples) {
    for (const [path, v] of s.flat) {
      let st = stats.get(path);
      if (st === undefined) stats.set(path, (st = { path, words: nameWords(path), count: 0, numbers: 0, strings: 0, values: new Map(), withSpace: 0 }));
      st.count++;
      if (typeof v === 'number') st.numbers++;
      else if (typeof v === 'string') {
        st.strings++;
        if (/\s/.test(v.trim())) st.withSpace++;
      }
      const key = String(v);
      if (st.values.has(key) || st.values.size < MAX_DISTINCT) st.values.set(key, (st.values.get(key) ?? 0) + 1);
    }
  }
  return stats;
}

// ---------------------------------------------------------------------------------------------
// Field scores from names

type Scorer = (w: string[]) => number;

const TIME_SCORE: Scorer = (w) => {
  if (has(w, 'duration', 'dur', 'elapsed', 'latency', 'took', 'ttl', 'timeout', 'ms') && !has(w, 'timestamp')) return 0;
  let s = 0;
  if (has(w, 'timestamp', 'time', 'ts', 'datetime')) s = 10;
  else if (has(w, 'at', 't', 'date', 'when', 'unix', 'clock', 'nano', 'logged')) s = 6;
  if (has(w, 'observed')) s -= 3;
  if (has(w, 'acquire', 'renew', 'expire', 'expiry', 'start', 'end', 'deadline', 'until', 'since')) s -= 5;
  return s;
};

const RESOURCE_SCORE: Scorer = (w) => {
  if (has(w, 'ttl', 'token', 'rev', 'revision', 'owner', 'holder', 'time', 'prefix', 'count', 'ms', 'fence', 'version', 'dir', 'path', 'endpoints', 'type', 'labels', 'kind', 'value', 'seconds')) return 0;
  if (has(w, 'resource')) return 10;
  if (has(w, 'lock', 'mutex', 'lease', 'election') && has(w, 'key', 'name', 'id', 'resource')) return has(w, 'lease') ? 5 : 9;
  if (has(w, 'lock', 'mutex')) return 8;
  if (w.length === 1 && has(w, 'key')) return 6;
  if (has(w, 'key') && has(w, 'object', 'entity', 'item', 'row')) return 5;
  return 0;
};

const PENALTY = ['current', 'other', 'prev', 'previous', 'new', 'next', 'expected', 'highest', 'max', 'last', 'min', 'mod', 'modify', 'modified'];

const OWNER_SCORE: Scorer = (w) => {
  if (has(w, 'rev', 'revision', 'token', 'lease', 'ttl', 'ms', 'count', 'pid', 'port', 'fence', 'epoch', 'key', 'version')) return 0;
  let s = 0;
  if (has(w, 'owner', 'holder', 'worker', 'who', 'identity', 'locker')) s = 9;
  else if (has(w, 'actor', 'client', 'consumer', 'member', 'participant', 'writer', 'requester')) s = 7;
  if (has(w, ...PENALTY)) s -= 5;
  return s;
};

const LEASE_SCORE: Scorer = (w) => {
  if (has(w, 'ttl', 'duration', 'seconds', 'ms', 'time', 'transitions', 'timeout', 'expiry', 'expires', 'renew', 'count', 's', 'sec', 'key', 'name')) return 0;
  let s = 0;
  if (has(w, 'lease', 'session', 'grant')) s = has(w, 'id') ? 9 : 8;
  if (has(w, ...PENALTY)) s -= 4;
  return s;
};

const TOKEN_SCORE: Scorer = (w) => {
  if (has(w, 'ttl', 'ms', 'time', 'count', 'idempotency', 'timestamp', 'rows', 'latency', 'duration')) return 0;
  let s = 0;
  if (has(w, 'fence', 'fencing')) s = 10;
  else if (has(w, 'create') && has(w, 'revision', 'rev')) s = 10;
  else if (has(w, 'token')) s = 8;
  else if (has(w, 'revision', 'rev', 'czxid', 'zxid')) s = 8;
  else if (has(w, 'lock') && has(w, 'index')) s = 8;
  else if (has(w, 'generation', 'epoch', 'term')) s = 7;
  else if (has(w, 'seq', 'sequence')) s = 5;
  if (has(w, 'holder', ...PENALTY)) s -= 5;
  return s;
};

const OP_SCORE: Scorer = (w) => {
  if (has(w, 'ms', 'time', 'count', 'type', 'kind', 'name', 'status', 'code', 'latency')) return 0;
  if (has(w, 'idempotency', 'idempotent', 'dedup', 'dedupe')) return 10;
  if (has(w, 'op', 'operation') && has(w, 'id', 'key', 'ref')) return 9;
  if (has(w, 'op', 'operation')) return 7;
  if (has(w, 'job', 'task', 'txn', 'transaction', 'request', 'req', 'command', 'cmd') && has(w, 'id', 'ref', 'key')) return 5;
  return 0;
};

const TTL_SCORE: Scorer = (w) => {
  if (has(w, 'dial', 'connect', 'connection', 'request', 'http', 'query', 'read', 'write')) return 0;
  if (has(w, 'ttl')) return 10;
  if (has(w, 'lease', 'lock', 'session') && has(w, 'duration', 'timeout', 'expiry', 'length', 'time', 'seconds', 'secs', 'ms', 'millis')) return 9;
  if (has(w, 'session') && has(w, 'timeout')) return 8;
  return 0;
};

const ROWS_SCORE: Scorer = (w) => {
  if (has(w, 'ms', 'time', 'latency', 'bytes')) return 0;
  if (has(w, 'rows', 'rowcount', 'row')) return 9;
  if (has(w, 'affected', 'updated', 'changes', 'changed', 'modified') && !has(w, 'at')) return 8;
  return 0;
};

const RESULT_SCORE: Scorer = (w) => {
  if (has(w, 'level', 'severity', 'ms', 'time', 'message')) return 0;
  if (has(w, 'result', 'outcome', 'verdict', 'decision')) return 10;
  if (has(w, 'status') && !has(w, 'http')) return 7;
  if (has(w, 'state', 'success', 'succeeded', 'ok', 'accepted', 'applied')) return 4;
  return 0;
};

const OBSERVER_SCORE: Scorer = (w) => {
  if (has(w, 'observer')) return 10;
  if (has(w, 'role')) return 8;
  if (has(w, 'tier', 'side')) return 6;
  if (has(w, 'component', 'service', 'app', 'application', 'logger', 'module', 'subsystem', 'system') && !has(w, 'version', 'id', 'instance')) return 4;
  if (w.length === 1 && has(w, 'name')) return 3;
  return 0;
};

const HOST_SCORE: Scorer = (w) => {
  if (has(w, 'port', 'ip', 'addr', 'address')) return 0;
  if (has(w, 'hostname') || (has(w, 'host') && has(w, 'name'))) return 10;
  if (w.length === 1 && has(w, 'host')) return 7;
  if (has(w, 'node', 'nodename', 'pod', 'machine')) return 5;
  if (has(w, 'instance') && has(w, 'id')) return 4;
  return 0;
};

const LEVEL_SCORE: Scorer = (w) => (has(w, 'level', 'lvl', 'severity', 'sev', 'loglevel') && !has(w, 'number') ? 10 : has(w, 'severity') ? 5 : 0);
const MESSAGE_SCORE: Scorer = (w) => (has(w, 'msg', 'message', 'mt') ? 10 : has(w, 'body', 'text', 'log', 'event', 'description', 'template') ? 7 : 0);
const TYPE_SCORE: Scorer = (w) => (has(w, 'event', 'type', 'kind', 'step', 'phase', 'action', 'op', 'operation', 'stage', 'what', 'activity') ? 5 : 0);

// ---------------------------------------------------------------------------------------------
// Value checks

function isTime(v: Scalar): boolean {
  if (typeof v === 'boolean') return false;
  const numeric = typeof v === 'number' || /^-?\d+(\.\d+)?$/.test(v);
  if (!numeric && !/\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}/.test(v)) return false;
  const t = parseTimeValue(v);
  if (!t.ok) return false;
  if (!numeric) return true;
  const year = new Date(t.ms).getUTCFullYear();
  return year >= 2000 && year <= 2100 && Math.abs(Number(v)) >= 1e8;
}

function epochUnit(v: number): 'epoch-s' | 'epoch-ms' | 'epoch-us' | 'epoch-ns' {
  const a = Math.abs(v);
  return a < 1e11 ? 'epoch-s' : a < 1e14 ? 'epoch-ms' : a < 1e17 ? 'epoch-us' : 'epoch-ns';
}

const isToken = (v: Scalar) => typeof v !== 'boolean' && parseFenceToken(typeof v === 'string' ? v.trim() : v).ok;
const isCount = (v: Scalar) => (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v));
const isDuration = (v: Scalar) => (typeof v === 'number' && v >= 0) || (typeof v === 'string' && parseDuration(v) !== undefined);
const isText = (v: Scalar) => typeof v === 'string';
const isId = (v: Scalar) => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));

type LeaseForm = 'hex0x' | 'hex' | 'decimal' | 'other';
function leaseForm(v: string): LeaseForm {
  const s = v.trim().toLowerCase();
  if (/^0x[0-9a-f]+$/.test(s)) return 'hex0x';
  if (/^\d+$/.test(s)) return s.length === 16 ? 'hex' : 'decimal';
  if (/^[0-9a-f]+$/.test(s) && /[a-f]/.test(s)) return 'hex';
  return 'other';
}

// ---------------------------------------------------------------------------------------------
// The suggestion

export function suggestMapping(files: readonly SampleFile[], options: { klog?: KlogOptions } = {}): Suggestion {
  const notes: string[] = [];
  const questions: string[] = [];
  const { shape, samples } = readSample(files, options.klog, notes, questions);
  const all = statsOf(samples);
  const taken = new Set<string>();
  const mapping: MappingSpec = { description: '', match: [] };
  if (shape === 'logfmt') mapping.parse = 'logfmt';
  if (shape === 'klog') mapping.parse = 'klog';
  if (shape === 'otlp') mapping.expand = 'otlp';
  const fields: Record<string, string | string[]> = {};

  const q = (p: string) => `\`${p}\``;
  const list = (ps: readonly string[]) => ps.map(q).join(', ');

  // 1. The envelope: time, level, message.
  const timeCandidates = [...all.values()]
    .map((st) => {
      const vals = [...st.values.keys()];
      const ok = vals.filter((v) => isTime(st.numbers === st.count ? Number(v) : v)).length;
      return { st, score: TIME_SCORE(st.words), good: vals.length > 0 && ok / vals.length >= 0.95 };
    })
    .filter((c) => c.good && (c.score > 0 || c.st.count >= samples.length * 0.9));
  const tsPaths = pickCovering(
    timeCandidates.sort((a, b) => b.score - a.score || b.st.count - a.st.count).map((c) => c.st.path),
    samples,
    samples.map((_, i) => i),
  );
  if (tsPaths.length === 0) questions.push('no time field found (a field whose values are RFC 3339 times or epoch numbers): set fields.ts');
  else {
    fields.ts = one(tsPaths);
    tsPaths.forEach((p) => taken.add(p));
    const values = tsPaths.flatMap((p) => [...all.get(p)!.values.keys()]);
    const numeric = values.every((v) => /^-?\d+(\.\d+)?$/.test(v));
    const units = new Set(values.map((v) => epochUnit(Number(v))));
    if (numeric && units.size === 1) mapping.timestamp = [...units][0]!;
    else if (values.every((v) => !/^-?\d+(\.\d+)?$/.test(v))) mapping.timestamp = 'rfc3339';
    notes.push(`time: ${list(tsPaths)} (${mapping.timestamp ?? 'auto'})`);
  }
  const levelPath = best(all, LEVEL_SCORE, (st) => st.count >= samples.length * 0.5 && st.values.size <= 12, taken);
  if (levelPath !== undefined) {
    taken.add(levelPath);
    notes.push(`level: ${q(levelPath)} (not needed by the mapping)`);
  }
  const messagePath = best(all, MESSAGE_SCORE, (st) => st.strings > 0 && st.strings === st.count && (st.withSpace > 0 || st.values.size > 3), taken);
  if (messagePath !== undefined) fields.message = messagePath;

  // 2. Event types: phrase fields (type-like fields first, then messages), read value by value.
  const resultLike = new Set([...all.values()].filter((st) => RESULT_SCORE(st.words) >= 7).map((st) => st.path));
  const phraseFields = [...all.values()]
    .filter((st) => !taken.has(st.path) && !resultLike.has(st.path) && st.strings === st.count && st.strings > 0 && (st.path === messagePath || OBSERVER_SCORE(st.words) < 4 || TYPE_SCORE(st.words) > 0))
    .map((st) => {
      const classified = [...st.values.keys()].filter((v) => classifyPhrase(v) !== undefined);
      return { st, classified, free: st.withSpace > 0 && st.values.size > 3 };
    })
    // Type-like fields, the message, and fields of a few one-word values several of which read as steps.
    .filter((c) => c.classified.length > 0 && (TYPE_SCORE(c.st.words) > 0 || c.st.path === messagePath || (c.st.withSpace === 0 && c.st.values.size <= 30 && c.classified.length >= 2)))
    .sort((a, b) => Number(a.free) - Number(b.free) || TYPE_SCORE(b.st.words) - TYPE_SCORE(a.st.words) || b.classified.length - a.classified.length);
  const classOf: (PhraseClass & { field: string; value: string })[] = [];
  const eventIdx: number[] = [];
  samples.forEach((s, i) => {
    for (const f of phraseFields) {
      const v = s.flat.get(f.st.path);
      if (typeof v !== 'string') continue;
      let c = classifyPhrase(v);
      // client-go stops leading right after "failed to renew lease" (renew returns, OnStoppedLeading runs): it ends the hold.
      if (c?.type === 'keepalive' && shape === 'klog' && CLIENT_GO.test(String(s.flat.get('caller') ?? '')) && /^failed to renew lease\b/i.test(v)) c = { type: 'expire' };
      if (c !== undefined) {
        classOf[i] = { ...c, field: f.st.path, value: v };
        eventIdx.push(i);
        return;
      }
    }
  });
  if (shape === 'klog' && samples.some((x) => CLIENT_GO.test(String(x.flat.get('caller') ?? '')))) {
    notes.push('client-go leader election lines (leaderelection.go): `--profile k8s-leaderelection` reads them without a mapping');
  }
  if (eventIdx.length === 0) {
    questions.push('no record was recognised as a lock or write event (no field or message value reads like acquire, keepalive, expire, release or write): write the match rules by hand');
  }
  for (const i of eventIdx) taken.add(classOf[i]!.field);
  const ev = statsOf(eventIdx.map((i) => samples[i]!));
  const evCount = eventIdx.length;

  /** Fill a canonical field from the event records: the best-named path whose values pass, plus paths covering records it misses. */
  const choose = (field: string, scorer: Scorer, valueOk: (v: Scalar) => boolean, min = 5, among: readonly number[] = eventIdx): string[] => {
    const cands = [...ev.values()]
      // A well-named field may hold a few bad values (they are reported invalid, as they should be).
      .filter((st) => !taken.has(st.path) && scorer(st.words) >= min && valuesPass(st, valueOk, scorer(st.words) >= 8 ? 0.6 : 1))
      .sort((a, b) => scorer(b.words) - scorer(a.words) || b.count - a.count)
      .map((st) => st.path);
    const chosen = pickCovering(cands, samples, among);
    chosen.forEach((p) => taken.add(p));
    if (chosen.length > 0) fields[field] = one(chosen);
    return chosen;
  };

  const carry = shape === 'klog';
  const resourcePaths = choose('resource', RESOURCE_SCORE, isText);
  if (resourcePaths.length === 0) {
    // The lock is named by a path that embeds the resource (ZooKeeper lock nodes, etcd keys):
    // the resource is the field, present on (nearly) every event, whose value that path contains.
    const lockish = [...ev.values()].filter((st) => has(st.words, 'lock', 'mutex', 'lease') && st.strings === st.count).map((st) => st.path);
    const embedded = [...ev.values()]
      .filter((st) => !taken.has(st.path) && !lockish.includes(st.path) && st.strings === st.count && st.count >= evCount * 0.5)
      .map((st) => {
        let hits = 0;
        for (const i of eventIdx) {
          const v = samples[i]!.flat.get(st.path);
          if (typeof v === 'string' && v.length >= 3 && lockish.some((l) => l !== st.path && String(samples[i]!.flat.get(l) ?? '').includes(v))) hits++;
        }
        return { st, hits };
      })
      .filter((c) => c.hits > 0)
      .sort((a, b) => b.hits - a.hits || b.st.count - a.st.count);
    if (embedded.length > 0) {
      const p = embedded[0]!.st.path;
      fields.resource = p;
      taken.add(p);
      resourcePaths.push(p);
      questions.push(`no field is named like the resource; ${q(p)} was taken for it because the lock's own name (${list(lockish)}) contains its values: check it`);
    }
  }
  if (resourcePaths.length === 0) {
    const guess = [...ev.values()].filter((st) => !taken.has(st.path) && st.strings === st.count && st.count >= evCount * 0.8 && [...st.values.keys()].some((v) => v.includes('/')));
    if (guess.length > 0) {
      fields.resource = guess[0]!.path;
      taken.add(guess[0]!.path);
      resourcePaths.push(guess[0]!.path);
      questions.push(`no field is named like a lock or resource key; ${q(guess[0]!.path)} was taken for the resource from its values: check it`);
    } else questions.push('no resource field found (the lock key / resource name): set fields.resource');
  }
  const hasResource = (i: number) => resourcePaths.some((p) => samples[i]!.flat.has(p));
  // A phrase value none of whose records names a resource is not a lock event ("update check skipped").
  if (!carry && resourcePaths.length > 0) {
    const keep = new Set<string>();
    for (const i of eventIdx) if (hasResource(i)) keep.add(`${classOf[i]!.field}\u0000${classOf[i]!.value}`);
    for (let k = eventIdx.length - 1; k >= 0; k--) {
      const i = eventIdx[k]!;
      if (!keep.has(`${classOf[i]!.field}\u0000${classOf[i]!.value}`)) {
        delete classOf[i];
        eventIdx.splice(k, 1);
      }
    }
  }
  notes.push(`events: ${eventIdx.length} of ${samples.length} records look like lock or write events, by ${list([...new Set(eventIdx.map((i) => classOf[i]!.field))])}`);
  if (resourcePaths.length > 0) notes.push(`resource: ${list(resourcePaths)}`);
  const ofType = (...types: EventType[]) => eventIdx.filter((i) => types.includes(classOf[i]!.type));

  const tokenPaths = choose('fenceToken', TOKEN_SCORE, isToken);
  if (tokenPaths.length === 0) {
    // By values: an integer on grants that differs from one grant to the next and grows.
    const grants = ofType('acquire');
    const byValue = [...ev.values()].filter((st) => {
      if (taken.has(st.path) || !valuesPass(st, isCount) || TTL_SCORE(st.words) > 0 || ROWS_SCORE(st.words) > 0 || has(st.words, 'pid', 'port', 'level', 'ms', 'latency', 'count', 'bytes', 'size', 'duration', 'code', 'status')) return false;
      const seq = grants.map((i) => samples[i]!.flat.get(st.path)).filter((v) => v !== undefined).map((v) => BigInt(String(v)));
      return seq.length >= 2 && seq.length >= grants.length * 0.8 && new Set(seq.map(String)).size === seq.length && seq.every((v, k) => k === 0 || v > seq[k - 1]!);
    });
    if (byValue.length > 0) {
      fields.fenceToken = byValue[0]!.path;
      taken.add(byValue[0]!.path);
      tokenPaths.push(byValue[0]!.path);
      questions.push(`${q(byValue[0]!.path)} was taken for the fencing token because its values grow with each grant, not from its name: check it`);
    } else questions.push('no fencing-token field found (fence, token, revision, epoch, generation, …): events will carry no token; set fields.fenceToken if the writes carry one');
  }
  if (tokenPaths.length > 0) {
    notes.push(`fencing token: ${list(tokenPaths)}`);
    const bad = tokenPaths.flatMap((p) => [...ev.get(p)!.values.keys()].filter((v) => !isToken(ev.get(p)!.numbers === ev.get(p)!.count ? Number(v) : v)));
    if (bad.length > 0) notes.push(`fencing token values ${list(bad.slice(0, 5))} are not non-negative integers: their lines will be reported invalid`);
  }

  const leasePaths = choose('leaseId', LEASE_SCORE, isId);
  if (leasePaths.length > 0) {
    const forms = new Set(leasePaths.flatMap((p) => [...ev.get(p)!.values.keys()].map(leaseForm)));
    if (forms.size > 1 && !forms.has('other')) {
      mapping.normalize = { leaseId: 'etcd-lease' };
      notes.push(`lease id: ${list(leasePaths)}, written in several forms (${[...forms].join(', ')}): normalised as etcd lease ids`);
    } else notes.push(`lease id: ${list(leasePaths)}`);
  }

  const ttlPaths = choose('ttlMs', TTL_SCORE, isDuration, 8);
  let ttlUnit: string | undefined;
  if (ttlPaths.length > 0) {
    // One unit for all candidates: keep the best path, and others only when they agree.
    const unitOf = (p: string) => {
      const w = nameWords(p);
      const named = has(w, 'ms', 'millis', 'milliseconds', 'msec') ? 'ms' : has(w, 's', 'sec', 'secs', 'seconds') ? 's' : has(w, 'us', 'µs', 'micros', 'microseconds') ? 'us' : has(w, 'ns', 'nanos', 'nanoseconds') ? 'ns' : has(w, 'min', 'mins', 'minutes') ? 'min' : has(w, 'h', 'hours') ? 'h' : undefined;
      if (named !== undefined) return { unit: named, why: 'from its name' };
      const nums = [...ev.get(p)!.values.keys()].filter((v) => /^\d+(\.\d+)?$/.test(v)).map(Number);
      if (nums.length === 0) return { unit: 'ms', why: 'its values carry their unit' };
      // A lease TTL is seconds to an hour or so: 2 or 30 are seconds, 2000 is ms, 8000000000 is ns (a Go time.Duration).
      let top = 0;
      let low = Infinity;
      for (const n of nums) {
        top = Math.max(top, n);
        low = Math.min(low, n);
      }
      // Below 100: seconds (a 50 ms TTL is no lease). From 100 to a day, seconds and
      // milliseconds are both plausible (3600 is an hour in seconds, 3.6 s in ms): guess, and ask.
      if (top < 100) return { unit: 's', why: `from its values (${top} at most: seconds)` };
      if (top < 1000) return { unit: 's', why: `from its values (${top} at most: seconds)`, ask: true };
      if (top <= 86_400) return { unit: 'ms', why: `from its values (${low} at least: milliseconds)`, ask: true };
      if (top <= 3.6e6) return { unit: 'ms', why: `from its values (${low} at least: milliseconds)` };
      return { unit: 'ns', why: `from its values (${top}: nanoseconds, as a Go time.Duration is written)` };
    };
    const first = unitOf(ttlPaths[0]!);
    const kept = ttlPaths.filter((p) => unitOf(p).unit === first.unit);
    fields.ttlMs = one(kept);
    ttlUnit = first.unit;
    if (ttlUnit !== 'ms') mapping.units = { ttlMs: ttlUnit as 's' };
    notes.push(`lease TTL: ${list(kept)} in ${ttlUnit}, ${first.why}`);
    if ((first as { ask?: boolean }).ask === true) {
      questions.push(`lease TTL ${list(kept)} has no unit in its name, and its values fit seconds as well as milliseconds: taken as ${ttlUnit === 's' ? 'seconds' : 'milliseconds'}; if it is ${ttlUnit === 's' ? 'milliseconds, remove units.ttlMs' : 'seconds, add "units": { "ttlMs": "s" }'} (a wrong unit moves every inferred lease end)`);
    }
  } else if (ofType('acquire').length > 0) {
    notes.push('no lease TTL field found: lease ends not logged cannot be inferred (set fields.ttlMs and units.ttlMs if the grants log one)');
  }

  const writes = ofType('write');
  const rowPaths = choose('rowCount', ROWS_SCORE, isCount, 8, writes);
  if (rowPaths.length > 0) notes.push(`row count of writes: ${list(rowPaths)} (0 rows = the conditional write refused a stale token)`);
  const opPaths = choose('operationId', OP_SCORE, isId, 5, writes);
  if (opPaths.length > 0) notes.push(`operation id: ${list(opPaths)}`);
  const resultPaths = choose('result', RESULT_SCORE, () => true, 7);
  if (resultPaths.length > 0) notes.push(`result: ${list(resultPaths)}`);

  // Clock domain and owner.
  const hostPath = best(ev, HOST_SCORE, (st) => st.count >= evCount * 0.9 && st.strings === st.count, new Set());
  if (hostPath !== undefined) {
    fields.source = hostPath;
    notes.push(`clock domain (source): ${q(hostPath)}`);
  }
  const ownerPaths = choose('ownerId', OWNER_SCORE, isId, 7);
  // A holder named only on busy lines is the one in the way ("is held by X"), not the one asking.
  const grants = eventIdx.filter((i) => classOf[i]!.type === 'acquire' && classOf[i]!.result === undefined);
  if (ownerPaths.length > 0 && grants.length > 0 && !grants.some((i) => ownerPaths.some((p) => samples[i]!.flat.has(p)))) {
    questions.push(`${list(ownerPaths)} appears on busy answers only, never on a grant: it names the current holder, not the worker asking, so it is not taken as the owner; set fields.ownerId if a field names the worker`);
    delete fields.ownerId;
    ownerPaths.length = 0;
  }
  if (ownerPaths.length > 0) notes.push(`owner: ${list(ownerPaths)}`);
  else if (hostPath !== undefined) {
    const pid = [...ev.values()].find((st) => st.words.length === 1 && st.words[0] === 'pid' && st.count >= evCount * 0.9);
    mapping.defaults = { ...mapping.defaults, ownerId: pid !== undefined ? `{${hostPath}}/{${pid.path}}` : `{${hostPath}}` };
    notes.push(`owner: no owner field; the host${pid !== undefined ? ' and pid' : ''} stand for it`);
  } else if (carry || files.length > 1) {
    mapping.defaults = { ...mapping.defaults, ownerId: '{$file}' };
    notes.push('owner: no owner field; the file name stands for it (one worker per file)');
  }

  // Observer: an observer-like field whose values say who logged, else the application's view.
  const observerCand = [...ev.values()]
    .filter((st) => !taken.has(st.path) && st.path !== hostPath && OBSERVER_SCORE(st.words) > 0 && st.strings === st.count && st.values.size <= 20)
    .map((st) => ({ st, mapped: [...st.values.keys()].map((v) => [v, classifyObserver(v)] as const) }))
    .filter((c) => c.mapped.some(([, o]) => o === 'authority' || o === 'resource') || OBSERVER_SCORE(c.st.words) >= 8)
    .sort((a, b) => OBSERVER_SCORE(b.st.words) - OBSERVER_SCORE(a.st.words));
  const rowCounted = rowPaths.length > 0 && writes.some((i) => rowPaths.some((p) => samples[i]!.flat.has(p)));
  const canonicalShape = shape === 'json' && [...(all.get('type')?.values.keys() ?? [])].every((v) => (EVENT_TYPES as readonly string[]).includes(v)) && all.has('resource');
  if (observerCand.length > 0) {
    const c = observerCand[0]!;
    fields.observer = c.st.path;
    taken.add(c.st.path);
    const map: Record<string, string> = {};
    const unknown: string[] = [];
    for (const [raw, o] of c.mapped) {
      if (o === undefined) unknown.push(raw);
      if (raw !== (o ?? 'worker')) map[raw] = o ?? 'worker';
    }
    if (Object.keys(map).length > 0) mapping.values = { ...mapping.values, observer: map };
    notes.push(`observer: ${q(c.st.path)} (${c.mapped.map(([r, o]) => `${r} → ${o ?? 'worker'}`).join(', ')})`);
    if (unknown.length > 0) questions.push(`observer: values ${list(unknown)} of ${q(c.st.path)} were taken as the worker's view: are they the lock authority or the resource?`);
    if (c.st.count < evCount) mapping.defaults = { ...mapping.defaults, observer: 'worker' };
  } else if (!canonicalShape) {
    mapping.defaults = { ...mapping.defaults, observer: 'worker' };
    notes.push(`observer: worker (application logs are the worker's view${rowCounted ? '; the writes log their row count, as the application sees it' : ''})`);
  }

  // 3. Match rules, one group of phrase values per (field, type, stated result).
  const resultField = resultPaths.length > 0 ? '@result' : undefined;
  const rowField = rowPaths.length > 0 ? '@rowCount' : undefined;
  const groups = new Map<string, { field: string; type: EventType; result?: string; plain?: boolean; values: string[]; records: number[] }>();
  for (const i of eventIdx) {
    const c = classOf[i]!;
    const key = `${c.field}\u0000${c.type}\u0000${c.result ?? ''}\u0000${c.plain === true}`;
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = { field: c.field, type: c.type, result: c.result, plain: c.plain, values: [], records: [] }));
    if (!g.values.includes(c.value)) g.values.push(c.value);
    g.records.push(i);
  }
  const fieldOrder = phraseFields.map((f) => f.st.path);
  const ordered = [...groups.values()].sort((a, b) => fieldOrder.indexOf(a.field) - fieldOrder.indexOf(b.field) || EVENT_TYPES.indexOf(a.type) - EVENT_TYPES.indexOf(b.type) || (a.result === undefined ? 1 : 0) - (b.result === undefined ? 1 : 0));
  const unanswered = new Map<string, Set<string>>();
  for (const g of ordered) {
    // A key starting with "@" in a condition names a canonical field: such a field is reached through one.
    let key = g.field;
    if (key === messagePath) key = '@message';
    else if (key.startsWith('@')) {
      if (fields.type === undefined) fields.type = key;
      key = fields.type === key ? '@type' : key;
    }
    const when = (extra: Record<string, unknown> = {}) => ({ [key]: g.values.length === 1 ? g.values[0]! : { in: g.values }, ...extra }) as MappingSpec['match'][number]['when'];
    const rule = (extra: Record<string, unknown>, result?: string) => mapping.match.push({ when: when(extra), type: g.type, ...(result !== undefined ? { set: { result } } : {}) });
    if (g.type === 'expire' || g.type === 'revoke') {
      rule({}, g.type === 'expire' ? 'expired' : 'revoked');
      continue;
    }
    const raws = new Set<string>();
    if (resultField !== undefined) for (const i of g.records) for (const p of resultPaths) {
      const v = samples[i]!.flat.get(p);
      if (v !== undefined) {
        raws.add(String(v));
        break;
      }
    }
    let passThrough = false;
    for (const raw of raws) {
      const canon = classifyResult(g.type, raw);
      if (canon === undefined) {
        const k = `${g.type}: which canonical result (${RESULTS[g.type].join(', ')})?`;
        if (!unanswered.has(k)) unanswered.set(k, new Set());
        unanswered.get(k)!.add(raw);
      } else if (canon === raw) passThrough = true;
      else rule({ '@result': raw }, canon);
    }
    // Canonical result values pass through; needed only where a later rule would set one.
    if (passThrough && (g.result !== undefined || g.type === 'write')) rule({ '@result': { exists: true } });
    const writeRecords = g.type === 'write' ? g.records : [];
    if (g.type === 'write' && rowField !== undefined && writeRecords.some((i) => rowPaths.some((p) => samples[i]!.flat.has(p)))) {
      rule({ '@rowCount': 0 }, 'rejected-stale-fence');
      rule({ '@rowCount': { exists: true } }, 'accepted');
    }
    if (g.type === 'write' && g.plain === true) {
      // "write rejected": by a token check (the usual reason to log it) unless told otherwise.
      const why = g.records.some((i) => [...samples[i]!.flat].some(([p, v]) => p !== g.field && typeof v === 'string' && /stale|fenc|token|revision|epoch|generation|older|superseded|[<>]/i.test(v)));
      if (!why) questions.push(`writes with ${q(g.field)} ${list(g.values)} give no reason: taken as rejected-stale-fence (refused for a stale token); if they were refused for another reason, set their result to rejected`);
      rule({}, 'rejected-stale-fence');
    } else if (g.type === 'write' && g.result === undefined) {
      // A write line with no result, row count or outcome word is a request, not a decision: not guessed.
      const told = (i: number) => (resultField !== undefined && resultPaths.some((p) => samples[i]!.flat.has(p))) || (rowField !== undefined && rowPaths.some((p) => samples[i]!.flat.has(p)));
      if (!g.records.every(told)) {
        questions.push(`writes with ${q(g.field)} ${list(g.values.slice(0, 6))}${g.values.length > 6 ? ', …' : ''} carry no result or row count, so they are ignored: if they are decisions, which canonical result (${RESULTS.write.join(', ')})? Add a match rule with set.result`);
      }
    } else {
      // Records with no result field whose message states one (node-redlock's "Unable to fully
      // release the lock on resource …" beside `step: release`): a rule of their own, first.
      if (g.result === undefined && messagePath !== undefined && g.field !== messagePath) {
        const stated = new Map<string, string>();
        for (const i of g.records) {
          if (resultField !== undefined && resultPaths.some((p) => samples[i]!.flat.has(p))) continue;
          const m = samples[i]!.flat.get(messagePath);
          const c = typeof m === 'string' ? classifyPhrase(m) : undefined;
          if (c !== undefined && c.type === g.type && c.result !== undefined) stated.set(m as string, c.result);
        }
        for (const [m, result] of stated) rule({ '@message': m }, result);
      }
      rule({}, g.result);
    }
  }
  for (const [k, raws] of unanswered) questions.push(`result values ${list([...raws])} of ${list(resultPaths)} on ${k} Map them with a rule's set.result (these events are reported invalid until then)`);

  // Phrase values that were not taken for any event: listed, so a missed one can be added.
  for (const f of phraseFields.filter((pf) => !pf.free)) {
    const used = new Set(eventIdx.filter((i) => classOf[i]!.field === f.st.path).map((i) => classOf[i]!.value));
    const rest = [...f.st.values.keys()].filter((v) => !used.has(v));
    if (rest.length > 0) notes.push(`${q(f.st.path)}: values ${list(rest.slice(0, 12))}${rest.length > 12 ? ', …' : ''} are not lock or write events and are ignored; add a match rule if one is`);
  }
  if (eventIdx.some((i) => phraseFields.find((pf) => pf.st.path === classOf[i]!.field)?.free === true)) notes.push('message values are matched as they were seen in the sample; a message logged differently later is ignored: widen the rule (e.g. a "regex") if so');

  if (carry) {
    mapping.carry = ['resource', 'ownerId'];
    notes.push('klog lines: a record without a lease name belongs to the lease last named in the same file (carry)');
  }
  mapping.fields = fields;
  mapping.description = `Suggested by \`stalewrite map --suggest\` from ${samples.length} records of ${files.map((f) => f.name.split('/').pop()).join(', ')}. Check the questions it printed.`;
  if (mapping.match.length === 0) mapping.match.push({ when: { '@type': { exists: true } }, type: 'write', set: { result: 'accepted' } });
  return { mapping: order(mapping), notes, questions };
}

/** Keys in the order a person reads a mapping. */
function order(m: MappingSpec): MappingSpec {
  const out: Record<string, unknown> = {};
  for (const k of ['description', 'parse', 'expand', 'timestamp', 'fields', 'units', 'match', 'values', 'normalize', 'defaults', 'carry'] as const) if (m[k] !== undefined) out[k] = m[k];
  return out as unknown as MappingSpec;
}

function one(paths: readonly string[]): string | string[] {
  return paths.length === 1 ? paths[0]! : [...paths];
}

/** Do (at least `share` of) the distinct values pass? */
function valuesPass(st: PathStats, ok: (v: Scalar) => boolean, share = 1): boolean {
  if (st.count === 0) return false;
  let good = 0;
  for (const v of st.values.keys()) if (ok(st.numbers === st.count ? Number(v) : v)) good++;
  return good === st.values.size || (good >= 2 && good >= st.values.size * share);
}

/** The best-scoring path (above 0) whose stats pass. */
function best(stats: Map<string, PathStats>, scorer: Scorer, ok: (st: PathStats) => boolean, taken: Set<string>): string | undefined {
  let top: PathStats | undefined;
  let topScore = 0;
  for (const st of stats.values()) {
    if (taken.has(st.path)) continue;
    const s = scorer(st.words);
    if (s > topScore && ok(st)) {
      top = st;
      topScore = s;
    } else if (s === topScore && s > 0 && top !== undefined && st.count > top.count && ok(st)) top = st;
  }
  return top?.path;
}

/** The first candidate, then each later one that covers records of `among` none before it did. */
function pickCovering(cands: readonly string[], samples: readonly Sample[], among: readonly number[]): string[] {
  const chosen: string[] = [];
  let uncovered = among.filter(() => true);
  for (const p of cands) {
    const covers = uncovered.filter((i) => samples[i]!.flat.has(p));
    if (covers.length === 0) continue;
    chosen.push(p);
    uncovered = uncovered.filter((i) => !samples[i]!.flat.has(p));
    if (uncovered.length === 0) break;
  }
  return chosen;
}
