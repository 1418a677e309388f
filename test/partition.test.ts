/**
 * `--partition I/N` (README "Scaling out"): the hash is the documented one, the key reader gives
 * exactly the key, time and source the engine would use (differentially against full parsing), and
 * the partitions of a run account for every line exactly once.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { Engine } from '../src/engine.js';
import { rules as allRules } from '../src/rules/index.js';
import type { LockEvent } from '../src/model/event.js';
import type { Report } from '../src/model/report.js';
import { fnv1a64Hex, partitionOf, partitionOfBytes } from '../src/partition/hash.js';
import { canonical } from '../src/profiles/canonical.js';
import { readKey, type KeyLook } from '../src/profiles/canonical-key.js';
import { fastCanonicalBytes } from '../src/profiles/fast-canonical-bytes.js';
import { fastCanonicalEvent } from '../src/profiles/fast-canonical.js';
import { findCases, analysisOptions, readExpectation } from '../src/check/cases.js';
import { mergeReports } from '../src/partition/merge.js';
import { renderJson } from '../src/report/json.js';
import { historyArb } from './helpers/histories.js';
import { existsSync } from 'node:fs';
import { filesUnder, generalEvent } from './helpers/paths.js';
import { FIXTURES } from './helpers/run.js';
import { KEY_DECLINED, KEY_READABLE } from './helpers/key-lines.js';

const origin = { file: 'f.ndjson', line: 3, source: 'f.ndjson', offset: 10, bytes: 20 };

/** The event the line becomes on the general path, and on the fast paths when they take it (all must agree). */
function eventOf(text: string): LockEvent | undefined {
  const slow = generalEvent(canonical, text, origin);
  if (slow === null || typeof slow !== 'object') return undefined;
  return slow;
}

/** Lines the key reader read that were events (so their key, time and source were compared). */
let compared = 0;

/** Checks the key reader on one line's bytes; returns whether it read the line. */
function checkLine(bytes: Buffer): boolean {
  const buf = Buffer.concat([Buffer.from('{"x":1}\n'), bytes, Buffer.from('\n')]);
  const look: KeyLook = { keyStart: 0, keyEnd: 0, key: undefined, ts: 0, source: undefined };
  const read = readKey(buf, 8, 8 + bytes.length, look);
  const text = bytes.toString('utf8');
  const ev = eventOf(text);
  // Also whatever the fast paths make of it (they must agree with the general path, tested elsewhere).
  const fast = fastCanonicalBytes(buf, 8, 8 + bytes.length, origin) ?? fastCanonicalEvent(text, origin);
  if (fast !== undefined && ev !== undefined) expect(fast.resource).toBe(ev.resource);
  if (!read) return false;
  if (ev === undefined) return true; // no event: the line belongs to the key's partition, whatever it is
  compared++;
  const key = look.key ?? buf.subarray(look.keyStart, look.keyEnd).toString('utf8');
  expect(key, text).toBe(ev.resource);
  expect(look.ts, text).toBe(ev.ts);
  expect(look.source ?? origin.source, text).toBe(ev.source);
  for (const n of [2, 3, 7, 64]) {
    const p = look.key === undefined ? partitionOfBytes(buf, look.keyStart, look.keyEnd, n) : partitionOf(look.key, n);
    expect(p, text).toBe(partitionOf(ev.resource, n));
  }
  return true;
}

describe('partition hash', () => {
  it('is FNV-1a 64 over the UTF-8 bytes, modulo N (the README vectors)', () => {
    // Computed independently (Python: h ^= byte; h = h * 0x100000001b3 mod 2^64).
    const vectors: [string, string, number[]][] = [
      ['', 'cbf29ce484222325', [1, 2, 1, 2]],
      ['a', 'af63dc4c8601ec8c', [0, 1, 0, 5]],
      ['orders/42', 'a62399f64f6961df', [1, 0, 3, 5]],
      ['resource-7', 'c031f2775a472e4d', [1, 1, 1, 2]],
      ['ключ', '296130de6f5b7a81', [1, 0, 1, 6]],
      ['res-6', '0e1ec1f2bfb6d73e', [0, 1, 2, 5]],
    ];
    for (const [key, hex, parts] of vectors) {
      expect(fnv1a64Hex(key)).toBe(hex);
      expect([2, 3, 4, 7].map((n) => partitionOf(key, n))).toEqual(parts);
      const b = Buffer.from(key, 'utf8');
      expect([2, 3, 4, 7].map((n) => partitionOfBytes(b, 0, b.length, n))).toEqual(parts);
      expect(partitionOf(key, 1)).toBe(0);
    }
  });

  it('agrees with BigInt arithmetic on random keys and N up to 4096', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.integer({ min: 1, max: 4096 }), (key, n) => {
        let h = 0xcbf29ce484222325n;
        for (const byte of Buffer.from(key, 'utf8')) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
        expect(fnv1a64Hex(key)).toBe(h.toString(16).padStart(16, '0'));
        expect(partitionOf(key, n)).toBe(Number(h % BigInt(n)));
      }),
      { seed: 16, numRuns: 3000 },
    );
  });
});

describe('partition key reader', () => {
  it('gives the event\'s key, time and source on every fixture line it reads', () => {
    let read = 0;
    let lines = 0;
    for (const file of filesUnder(FIXTURES, (p) => /\.(ndjson|jsonl|log|json)$/.test(p) && !p.endsWith('expect.json'))) {
      for (const line of readFileSync(file).toString('latin1').split('\n')) {
        const bytes = Buffer.from(line.endsWith('\r') ? line.slice(0, -1) : line, 'latin1');
        if (bytes.length === 0) continue;
        lines++;
        if (checkLine(bytes)) read++;
      }
    }
    expect(lines).toBeGreaterThan(800);
    expect(read).toBeGreaterThan(400);
  });

  it('reads escapes, non-ASCII and nested values exactly, and declines what only the parse can tell', () => {
    const readable = KEY_READABLE;
    for (const line of readable) expect(checkLine(Buffer.from(line)), line).toBe(true);
    const declined = KEY_DECLINED;
    for (const line of declined) expect(checkLine(Buffer.from(line)), line).toBe(false);
  });

  it('agrees with the full parse on generated lines: keys in any order, escaped, nested, non-ASCII', () => {
    const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
    const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.constantFrom('resource', 'a', 'ts', 'b'), scalar, { maxKeys: 2 }));
    const key = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.constantFrom('ts', 'resource', 'source', 'hostname', 'host.name', 'host', 'type', 'result'));
    const res = fc.oneof(fc.constantFrom('orders/42', 'a/b', 'r', 'ключ', 'x y'), fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }));
    const arb = fc.record({
      resource: res,
      ts: fc.oneof(fc.constant('2026-03-01T10:00:00.250Z'), fc.constant(1772359200250), fc.constant('2026-03-01T11:00:00.25+01:00')),
      type: fc.constantFrom('acquire', 'write', 'keepalive', 'nope'),
      result: fc.constantFrom(undefined, 'accepted', 'granted', 'ok'),
      source: fc.option(fc.oneof(fc.constantFrom('db', 'app-1', ''), fc.string({ maxLength: 4 })), { nil: undefined }),
      hostname: fc.option(fc.constantFrom('h1', ''), { nil: undefined }),
      hostName: fc.option(fc.constantFrom('h2', ''), { nil: undefined }),
      extra: fc.array(fc.tuple(key, value), { maxLength: 4 }),
      order: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
      escapes: fc.array(fc.nat(), { maxLength: 6 }),
      slash: fc.boolean(),
    });
    let readCount = 0;
    const before = compared;
    fc.assert(
      fc.property(arb, (g) => {
        const pairs: [string, unknown][] = [['resource', g.resource], ['ts', g.ts], ['type', g.type]];
        if (g.result !== undefined) pairs.push(['result', g.result]);
        if (g.source !== undefined) pairs.push(['source', g.source]);
        if (g.hostname !== undefined) pairs.push(['hostname', g.hostname]);
        if (g.hostName !== undefined) pairs.push(['host.name', g.hostName]);
        pairs.push(...g.extra);
        // Any order; keys written twice are possible (from `extra`).
        const ordered = pairs.map((p, i) => [g.order[i % g.order.length]! * 16 + i, p] as const).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
        let text = `{${ordered.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
        // Escape some characters (\u00XX) and slashes (\/), where JSON allows it: inside strings.
        text = escapeSome(text, g.escapes, g.slash);
        if (checkLine(Buffer.from(text, 'utf8'))) readCount++;
      }),
      { seed: 1616, numRuns: 4000 },
    );
    // Many generated lines escape a key or repeat one (declined); enough are read, and events.
    expect(readCount).toBeGreaterThan(400);
    expect(compared - before).toBeGreaterThan(100);
  });
});

/** Replace some characters inside JSON strings with \uXXXX escapes, and `/` with `\/`. */
function escapeSome(text: string, picks: readonly number[], slash: boolean): string {
  const inString: number[] = [];
  let inside = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inside && c === '\\') {
      i++;
      continue;
    }
    if (c === '"') inside = !inside;
    else if (inside) inString.push(i);
  }
  const chosen = new Set(picks.map((p) => inString[p % Math.max(1, inString.length)]).filter((x) => x !== undefined));
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (chosen.has(i) && c.charCodeAt(0) < 0xd800) out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    else if (slash && c === '/' && inString.includes(i)) out += '\\/';
    else out += c;
  }
  return out;
}

/** The partitions of a run over `files` with `options`, N of them. */
async function partitions(files: string[], n: number, options: Record<string, unknown> = {}): Promise<Report[]> {
  const out: Report[] = [];
  for (let i = 0; i < n; i++) out.push(await analyze({ files, ...options, partition: { index: i, count: n } }));
  return out;
}

const COUNTS = ['events', 'duplicates', 'blank', 'ignored', 'invalid'] as const;

describe('partition accounting', () => {
  const cases = findCases([FIXTURES]);
  it.each(cases.map((c) => [c.name.slice(FIXTURES.length + 1), c] as const))('%s: every line in exactly one partition, the union of findings is the single run\'s', async (_name, c) => {
    const options = analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined);
    const single = await analyze({ files: c.files, ...options });
    for (const n of [2, 3, 7]) {
      const parts = await partitions(c.files, n, options);
      for (const p of parts) {
        const i = p.input;
        expect(i.lines).toBe(single.input.lines);
        expect(i.expanded).toBe(single.input.expanded);
        expect(i.joined).toBe(single.input.joined);
        expect(i.lines + i.expanded).toBe(i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined + i.otherPartitions!);
        p.input.files.forEach((f, k) => {
          expect(f.lines + f.expanded).toBe(f.events + f.duplicates + f.blank + f.ignored + f.invalid + f.joined + f.otherPartitions!);
          expect(f.lines).toBe(single.input.files[k]!.lines);
        });
        expect(p.partition!.inexact).toEqual([]);
      }
      for (const k of COUNTS) expect(parts.reduce((a, p) => a + p.input[k], 0), `${k}, N=${n}`).toBe(single.input[k]);
      const resources = parts.flatMap((p) => p.resources.map((r) => r.resource)).sort();
      expect(resources).toEqual(single.resources.map((r) => r.resource).sort());
      // Each resource in the partition its key hashes to.
      parts.forEach((p, k) => p.resources.forEach((r) => expect(partitionOf(r.resource, n)).toBe(k)));
      const byId = (r: Report) => JSON.stringify(r.findings.map((f) => f).sort((a, b) => (a.id < b.id ? -1 : 1)));
      expect(byId({ ...single, findings: parts.flatMap((p) => p.findings) })).toBe(byId(single));
      expect(parts.flatMap((p) => p.resources).sort((a, b) => (a.resource < b.resource ? -1 : 1))).toEqual(single.resources);
    }
  }, 60_000);
});


describe('partition engine', () => {
  // The operation index of a single run holds the operations of every partition: an operation seen
  // again after more lines than it holds may have been forgotten there, and the partition says so.
  const write = (ts: number, operationId: string, observer: 'resource' | 'worker'): LockEvent => ({
    ts, type: 'write', resource: 'r', ownerId: 'w', leaseId: 'L', fenceToken: 1n, operationId, result: 'accepted', observer, source: 's', file: 'f', line: ts,
  });
  const foreign = (ts: number): LockEvent => ({ ts, type: 'keepalive', resource: 'other', result: 'ok', observer: 'worker', source: 's', file: 'f', line: ts });
  function notes(between: number, ops: number): string[] {
    const engine = new Engine({ rules: allRules, partition: true, maxOperations: 3 });
    engine.push(write(1, 'op-1', 'resource'));
    for (let k = 0; k < ops; k++) engine.push(write(2 + k, `op-x${k}`, 'resource'));
    for (let k = 0; k < between; k++) engine.pushForeign(foreign(10 + k));
    engine.push(write(100, 'op-1', 'worker'));
    return [...engine.inexact.keys()].filter((r) => r.includes('operation was seen again'));
  }
  it('notes an operation seen again after more lines than the operation index holds, and not one seen again sooner', () => {
    expect(notes(0, 0)).toEqual([]);
    expect(notes(1, 0)).toEqual([]);
    expect(notes(2, 0)).toHaveLength(1);
    expect(notes(1, 1)).toHaveLength(1);
    // Forgotten here too (three newer operations): made anew, nothing to note.
    expect(notes(0, 3)).toEqual([]);
  });
});

/**
 * Lines as a container runtime logs them (`docker` json-file or `cri`), some split in two pieces
 * with a line of the other stream between them, so that a line is joined, and judged, after the
 * line below it.
 */
function wrapLines(lines: readonly string[], kind: 'docker' | 'cri', picks: readonly number[]): string[] {
  const out: string[] = [];
  const at = (k: number) => `2026-03-01T09:00:${String(k % 60).padStart(2, '0')}.000000000Z`;
  const piece = (text: string, stream: string, last: boolean, k: number) =>
    kind === 'docker' ? JSON.stringify({ log: last ? `${text}\n` : text, stream, time: at(k) }) : `${at(k)} ${stream} ${last ? 'F' : 'P'} ${text}`;
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k]!;
    const pick = picks[k % picks.length]!;
    if (pick < 3 && line.length > 10 && k + 1 < lines.length) {
      const cut = Math.floor((line.length * (pick + 1)) / 4);
      out.push(piece(line.slice(0, cut), 'stdout', false, k), piece(lines[k + 1]!, 'stderr', true, k), piece(line.slice(cut), 'stdout', true, k));
      k++;
    } else out.push(piece(line, 'stdout', true, k));
  }
  return out;
}

describe('partitions of container logs', () => {
  it('docker and CRI logs with lines split across streams: the merge of N partitions is the single run, or says where it may differ', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-part-wrapped-'));
    const seen = { runs: 0, exact: 0, joined: 0 };
    try {
      await fc.assert(
        fc.asyncProperty(
          historyArb({ inputs: 1 }),
          fc.constantFrom<'docker' | 'cri'>('docker', 'cri'),
          fc.array(fc.nat({ max: 9 }), { minLength: 7, maxLength: 7 }),
          fc.constantFrom(undefined, 1, 3),
          fc.integer({ min: 2, max: 5 }),
          async (h, kind, picks, maxProblems, n) => {
            const file = join(dir, `${seen.runs++}.log`);
            writeFileSync(file, wrapLines(h.files[0]!.lines, kind, picks).join('\n') + '\n');
            const options = { files: [file], maxProblems, busyWindowMs: 4000 };
            const single = await analyze(options);
            expect(single.input.files[0]!.wrapper).toBe(kind);
            seen.joined += single.input.joined;
            const parts: Report[] = [];
            for (let i = 0; i < n; i++) parts.push(JSON.parse(renderJson(await analyze({ ...options, partition: { index: i, count: n } }))) as Report);
            const merged = mergeReports(parts);
            if (merged.partitions !== undefined) return;
            seen.exact++;
            expect(renderJson(merged)).toBe(renderJson(single));
          },
        ),
        { seed: 6161, numRuns: 60 },
      );
      expect(seen.exact).toBeGreaterThan(30);
      expect(seen.joined).toBeGreaterThan(50);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
