/**
 * The canonical key reader over a whole chunk (src/profiles/key-scan.ts, its structural pass in
 * WebAssembly from key-scan.c) gives exactly what readKey() gives line by line: on every fixture
 * line, on hostile lines and on random ones, wherever the line sits in its chunk. The committed
 * module is key-scan.c compiled; a partition run that cannot run WebAssembly (`--jitless`) reads
 * line by line and writes the same report.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { readKey, type KeyLook } from '../src/profiles/canonical-key.js';
import { BLOCK, KeyScan, MAX_CHUNK } from '../src/profiles/key-scan.js';
import { KEY_SCAN_COMPILER, KEY_SCAN_WASM } from '../src/profiles/key-scan-wasm.js';
import { canonical } from '../src/profiles/canonical.js';
import type { Profile } from '../src/profiles/types.js';
import { lookLines, PartitionFilter } from '../src/ingest/partition.js';
import type { ByteLineBatch } from '../src/ingest/lines.js';
import { partitionOf, partitionOfBytes } from '../src/partition/hash.js';
import { filesUnder } from './helpers/paths.js';
import { KEY_DECLINED, KEY_READABLE } from './helpers/key-lines.js';
import { BIN, FIXTURES, ROOT } from './helpers/run.js';

const blank = (): KeyLook => ({ keyStart: -1, keyEnd: -1, key: undefined, ts: Number.NaN, source: undefined });

/**
 * Pack `lines` into one chunk (each followed by `sep`), scan it at once, and compare every line
 * (or those of `order`, in that order) with readKey. The bounds go in as an Int32Array, or with
 * `plain` as arrays.
 */
function compareChunk(lines: Buffer[], sep = '\n', scanner = new KeyScan(), order?: readonly number[], plain = false, partitions = 7): { read: number; quick: number } {
  const parts: Buffer[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let at = 0;
  lines.forEach((l, k) => {
    starts.push(at);
    ends.push(at + l.length);
    parts.push(l);
    at += l.length;
    // The last line ends the chunk (no separator after it): the pass must not read past it.
    if (k < lines.length - 1) {
      parts.push(Buffer.from(sep));
      at += sep.length;
    }
  });
  const chunk = Buffer.concat(parts);
  expect(scanner.scan(chunk, plain ? starts : Int32Array.from(starts), plain ? ends : Int32Array.from(ends), lines.length, partitions)).toBe(true);
  let read = 0;
  let quick = 0;
  for (const k of order ?? lines.keys()) {
    const a = blank();
    const b = blank();
    const c = blank();
    // The module's own answer, where it has one: the line reader's look, and the key's partition.
    const p = scanner.quick(k, c);
    const batch = scanner.read(k, a);
    const one = readKey(chunk, starts[k]!, ends[k]!, b);
    const text = lines[k]!.toString('latin1');
    expect(batch, text).toBe(one);
    if (one) {
      read++;
      expect(a, text).toEqual(b);
    }
    if (p !== -1) {
      quick++;
      expect(one, text).toBe(true);
      expect(c, text).toEqual(b);
      expect(b.key, text).toBeUndefined();
      expect(p, text).toBe(partitionOfBytes(chunk, b.keyStart, b.keyEnd, partitions));
      expect(p, text).toBe(partitionOf(chunk.toString('utf8', b.keyStart, b.keyEnd), partitions));
    } else if (one && partitions > 0 && b.key === undefined && scanner.timeRead(k) && !/source|hostname|host\.name/.test(text)) {
      // Every line of the plain kind has it (one that names a source key may not).
      expect.fail(`no quick answer for ${text}`);
    }
  }
  return { read, quick };
}

const T = '"ts":"2026-03-01T10:00:00.000Z","type":"write","result":"accepted"';
/** Lines readKey reads and lines it declines, one of each way: test/partition.test.ts's, and more. */
const HOSTILE = [
  ...KEY_READABLE,
  ...KEY_DECLINED,
  `{${T},"resource":"r","msg":"say \\"hi\\" \\/ \\u00e9 ✓ \\"resource\\":\\"x\\""}`,
  `{${T},"resource":"r","host":{"name":"web"}}`,
  `{${T},"resource":"r","resource":"s"}`,
  `{${T},"ts":"2026-03-01T10:00:01Z","resource":"r"}`,
  `{${T},"r\\u0065source":"s","resource":"r"}`,
  `{${T},"resource":["r"]}`,
  `{${T},"resource":7}`,
  `{${T},"resource":null}`,
  `{"ts":"2026-03-01T10:00:00Z",\t"resource":"r"}`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r"`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r"}x`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r",}`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r\\`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r","x":"\\`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r","x":{"y":"\\"}`,
  `{"ts":"2026-03-01T10:00:00Z","resource":"r","x":[[[`,
  `{"resource":"${'long-'.repeat(40)}","ts":"2026-03-01T10:00:00Z","msg":"${'m'.repeat(3000)}"}`,
  `{"resource":"r","ts":"2026-03-01T10:00:00Z","msg":"${'é'.repeat(100)}\\"${'q'.repeat(40)}"}`,
  `[1,2]`,
  `"just a string"`,
  ``,
  `   `,
  `{`,
  `{"`,
  `{"ts`,
];

describe('the key reader over a whole chunk', () => {
  it('gives what readKey gives on every fixture line', () => {
    const lines: Buffer[] = [];
    for (const file of filesUnder(FIXTURES, (p) => /\.(ndjson|jsonl|log|json)$/.test(p) && !p.endsWith('expect.json'))) {
      for (const line of readFileSync(file).toString('latin1').split('\n')) lines.push(Buffer.from(line.endsWith('\r') ? line.slice(0, -1) : line, 'latin1'));
    }
    expect(lines.length).toBeGreaterThan(800);
    const { read, quick } = compareChunk(lines);
    expect(read).toBeGreaterThan(400);
    expect(quick).toBeGreaterThan(200);
    // Any number of partitions, and none (then never a quick answer).
    for (const n of [1, 2, 3, 4096]) expect(compareChunk(lines, '\n', new KeyScan(), undefined, false, n).quick).toBe(quick);
    expect(compareChunk(lines, '\n', new KeyScan(), undefined, false, 0).quick).toBe(0);
  });

  it('gives what readKey gives on hostile lines, one by one, all in one chunk, and at the chunk\'s end', () => {
    const lines = HOSTILE.map((l) => Buffer.from(l, 'utf8'));
    const scanner = new KeyScan();
    for (const l of lines) compareChunk([l], '\n', scanner);
    expect(compareChunk(lines, '\n', scanner).read).toBeGreaterThan(20);
    compareChunk(lines, '\r\n', scanner);
    // Each line last in its chunk, after every other.
    for (let k = 0; k < lines.length; k++) compareChunk([...lines.slice(0, k), ...lines.slice(k + 1), lines[k]!], '\n', scanner);
  });

  it('gives what readKey gives on random lines: keys in any order, escaped, nested, repeated, cut short', () => {
    const keys = ['ts', 'resource', 'source', 'hostname', 'host.name', 'host', 'type', 'msg', 'x', 'r\\u0065source', 'ts ', 'resourc', 'resources', 'hos', 'hostnam'];
    const str = fc.oneof(
      fc.constantFrom('r', 'res-1', '', 'a\\"b', 'a\\\\', '\\u00e9', 'café', 'x\\/y', '\\ud800', '"', '2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00Z', '2026-03-01T10:00:00.5z', '2026-02-30T10:00:00Z', '1772359200000'),
      fc.string({ maxLength: 24 }).map((s) => JSON.stringify(s).slice(1, -1)),
      fc.string({ unit: 'grapheme', maxLength: 8 }),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        str.map((s) => `"${s}"`),
        fc.constantFrom('1', '-2.5', '1772359200000', '1.7723592e12', 'true', 'null', 'tru', '1e999'),
        fc.array(tie('v'), { maxLength: 3 }).map((a) => `[${a.join(',')}]`),
        fc.array(fc.tuple(fc.constantFrom(...keys), tie('v')), { maxLength: 3 }).map((ps) => `{${ps.map(([k, v]) => `"${k}":${v}`).join(',')}}`),
      ),
    })).v;
    const space = fc.constantFrom('', '', '', ' ', '  ');
    const line = fc
      .tuple(fc.array(fc.tuple(fc.constantFrom(...keys), value, space, space), { minLength: 0, maxLength: 8 }), fc.boolean(), fc.nat(), fc.nat({ max: 4 }))
      .map(([pairs, ts, cut, how]) => {
        const all = ts ? [['ts', '"2026-03-01T10:00:00.000Z"', '', ''] as const, ['resource', '"r"', '', ''] as const, ...pairs] : pairs;
        let text = `{${all.map(([k, v, a, b]) => `${a}"${k}"${b}:${a}${v}`).join(',')}}`;
        // Sometimes cut short, or a byte changed: the pass must decline exactly where readKey does.
        if (how === 1 && text.length > 0) text = text.slice(0, cut % text.length);
        if (how === 2 && text.length > 0) {
          const at = cut % text.length;
          text = text.slice(0, at) + '"\\{}[],: '[cut % 9] + text.slice(at + 1);
        }
        return Buffer.from(text, 'utf8');
      });
    let read = 0;
    let quick = 0;
    const scanner = new KeyScan();
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 12 }), fc.constantFrom(1, 2, 3, 7, 4096), (lines, n) => {
        const r = compareChunk(lines, '\n', scanner, undefined, false, n);
        read += r.read;
        quick += r.quick;
      }),
      { seed: 7, numRuns: 1500 },
    );
    expect(read).toBeGreaterThan(500);
    expect(quick).toBeGreaterThan(100);
  });

  it('reads the time as readKey does: every field at and past its bounds, leap years, 1970 and 2200, fractions, zones', () => {
    const pad = (n: number, w: number) => String(n).padStart(w, '0');
    const ts = fc
      .tuple(
        fc.constantFrom(1969, 1970, 1971, 2000, 2024, 2026, 2100, 2199, 2200, 2400, 70, 9999),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 24 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 61 }),
        fc.constantFrom('', '.', '.5', '.05', '.123', '.1234', '.000001', '.x'),
        fc.constantFrom('Z', 'z', '+01:00', '-00:30', '', 'ZZ'),
        fc.constantFrom('T', 't', ' ', 'T', 'T'),
      )
      .map(([y, mo, d, h, mi, s, f, z, t]) => `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}${t}${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${f}${z}`);
    const scanner = new KeyScan();
    let read = 0;
    fc.assert(
      fc.property(fc.array(ts, { minLength: 1, maxLength: 8 }), (list) => {
        read += compareChunk(list.map((t) => Buffer.from(`{"ts":"${t}","type":"acquire","resource":"r"}`)), '\n', scanner).read;
      }),
      { seed: 11, numRuns: 1500 },
    );
    expect(read).toBeGreaterThan(1000);
    // Days through four years (a day and an hour apart), leap days included, at both ends of the range.
    const days: Buffer[] = [];
    for (const y of [1970, 2024, 2100, 2199]) {
      for (let t = Date.UTC(y, 0, 1); t < Date.UTC(y + 1, 0, 1); t += 86_400_000 + 3_723_456) days.push(Buffer.from(`{"ts":"${new Date(t).toISOString()}","resource":"r"}`));
    }
    expect(compareChunk(days, '\n', scanner).read).toBe(days.length);
    // Every field at its bounds, one by one: days 28 to 32 of every month of leap and common years
    // (2000 and 2024 leap, 2100 not), the hours, minutes and seconds past their last, the range's ends.
    const edges: string[] = [];
    for (const y of [1969, 1970, 2000, 2024, 2100, 2199, 2200]) {
      for (let mo = 0; mo <= 13; mo++) for (const d of [0, 1, 28, 29, 30, 31, 32]) edges.push(`${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T10:00:00Z`);
    }
    for (const h of [0, 23, 24]) for (const mi of [0, 59, 60]) for (const sec of [0, 59, 60, 61]) for (const f of ['', '.9', '.99', '.999', '.9999']) edges.push(`2026-03-01T${pad(h, 2)}:${pad(mi, 2)}:${pad(sec, 2)}${f}Z`);
    edges.push('1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '2199-12-31T23:59:59.999Z', '2200-01-01T00:00:00.000Z');
    const edgeLines = edges.map((t) => Buffer.from(`{"ts":"${t}","resource":"r"}`));
    const { read: edgeRead } = compareChunk(edgeLines, '\n', scanner);
    expect(edgeRead).toBeGreaterThan(300);
    expect(edgeRead).toBeLessThan(edges.length);
  });

  it('declines a line whose bounds are not inside the chunk, and refuses a line not in the batch', () => {
    const chunk = Buffer.from(`{${T},"resource":"r"}`);
    const s = new KeyScan();
    expect(s.scan(chunk, [0, -1, 5, 0], [chunk.length, 3, 4, chunk.length + 1], 4)).toBe(true);
    const look = blank();
    expect(s.read(0, look)).toBe(true);
    expect(chunk.subarray(look.keyStart, look.keyEnd).toString()).toBe('r');
    for (const k of [1, 2, 3]) expect(s.read(k, blank())).toBe(false);
    expect(() => s.read(4, blank())).toThrow(RangeError);
    // Only the first `count` bounds are read.
    expect(s.scan(chunk, [0, 0], [chunk.length, 1], 1)).toBe(true);
    expect(() => s.read(1, blank())).toThrow(RangeError);
  });

  it('reads a chunk of many blocks in any order, with the module holding one block at a time', () => {
    const lines: Buffer[] = [];
    for (let k = 0; k < 3 * BLOCK + 7; k++) lines.push(Buffer.from(HOSTILE[k % HOSTILE.length]!.replace('"r"', `"r${k}"`), 'utf8'));
    const { read } = compareChunk(lines);
    expect(read).toBeGreaterThan(BLOCK);
    // Backwards, and jumping between blocks, with the bounds as arrays.
    compareChunk(lines, '\n', new KeyScan(), [lines.length - 1, 0, BLOCK, BLOCK - 1, 2 * BLOCK + 3, 5, lines.length - 2], true);
  });

  it('refuses a read after another reader of the thread scanned (they share the module\'s memory)', () => {
    const a = new KeyScan();
    const b = new KeyScan();
    const line = Buffer.from(`{${T},"resource":"alpha"}`);
    expect(a.scan(line, [0], [line.length], 1)).toBe(true);
    expect(b.scan(Buffer.from(`  ${line}`), [2], [line.length + 2], 1)).toBe(true);
    expect(() => a.read(0, blank())).toThrow(/scanned since/);
    const look = blank();
    expect(b.read(0, look)).toBe(true);
  });

  it('reads plain UTC times in the module and leaves every other to the TypeScript', () => {
    const lines = ['2026-03-01T10:00:00.123Z', '2026-03-01T10:00:00Z', '2026-03-01T10:00:00.5z', '2026-03-01T11:00:00+01:00', '2026-03-01t10:00:00Z', '2026-03-01T10:00:00.1234Z'].map((t) => Buffer.from(`{"ts":"${t}","resource":"r"}`));
    lines.push(Buffer.from('{"ts":1772359200000,"resource":"r"}'));
    const s = new KeyScan();
    compareChunk(lines, '\n', s);
    expect(lines.map((_, k) => s.timeRead(k))).toEqual([true, true, true, false, false, false, false]);
  });

  it('is what lookLines reads a canonical chunk with', () => {
    let scans = 0;
    const spy: Profile = {
      ...canonical,
      partitionKeys: { lineReader: canonical.partitionKey!, scan: (...a) => (scans++, canonical.partitionKeys!.scan(...a)), read: (k, out) => canonical.partitionKeys!.read(k, out) },
    };
    const line = Buffer.from(`{${T},"resource":"r"}`);
    const looks = new Int32Array(1);
    lookLines(new PartitionFilter({ index: 0, count: 7 }), spy, { firstLine: 1, lines: [undefined], chunk: line, starts: [0], ends: [line.length] } as unknown as ByteLineBatch, looks, new Float64Array(1), new Int32Array(1));
    expect(scans).toBe(1);
    expect(looks[0]).toBe(partitionOf('r', 7));
  });

  it('says no for a chunk over its bound, where the caller reads line by line', () => {
    const big = Buffer.alloc(MAX_CHUNK + 1, 32);
    expect(new KeyScan().scan(big, [0], [10], 1)).toBe(false);
  });

  it('scans a chunk of its bound without growing the module\'s memory (a grow detaches a buffer, which slows every typed array of the thread)', () => {
    const grow = vi.spyOn(WebAssembly.Memory.prototype, 'grow');
    try {
      // MAX_CHUNK bytes in lines of 4 KiB, a whole block of them: the most memory a scan needs.
      const lineBytes = 4096;
      const count = MAX_CHUNK / lineBytes;
      expect(count).toBe(BLOCK);
      const line = Buffer.from(`{${T},"resource":"r"}`.padEnd(lineBytes - 1, ' ') + '\n');
      const chunk = Buffer.alloc(MAX_CHUNK);
      const starts = new Int32Array(count);
      const ends = new Int32Array(count);
      for (let k = 0; k < count; k++) {
        line.copy(chunk, k * lineBytes);
        starts[k] = k * lineBytes;
        ends[k] = (k + 1) * lineBytes - 1;
      }
      const scanner = new KeyScan();
      expect(scanner.scan(chunk, starts, ends, count, 7)).toBe(true);
      for (const k of [0, count - 1]) {
        const out = blank();
        expect(scanner.read(k, out)).toBe(true);
        expect(chunk.toString('latin1', out.keyStart, out.keyEnd)).toBe('r');
        expect(out.ts).toBe(Date.parse('2026-03-01T10:00:00.000Z'));
        expect(scanner.quick(k, blank())).toBe(partitionOf('r', 7));
      }
      expect(grow).not.toHaveBeenCalled();
    } finally {
      grow.mockRestore();
    }
  });

  it('is the canonical profile\'s batch reader, and no profile\'s that replaced the line reader', () => {
    expect(canonical.partitionKeys).toBeDefined();
    expect(canonical.partitionKeys!.lineReader).toBe(canonical.partitionKey);
    // A profile that reads its keys otherwise but kept the batch reader by spreading canonical
    // is read line by line, by its own reader.
    const mine: Profile = { ...canonical, partitionKey: (b, s, e, out) => readKey(b, s, e, out) && ((out.key = 'mine'), true) };
    const line = Buffer.from(`{${T},"resource":"r"}`);
    const part = new PartitionFilter({ index: 0, count: 7 });
    const looks = new Int32Array(1);
    lookLines(part, mine, { firstLine: 1, lines: [undefined], chunk: line, starts: [0], ends: [line.length] } as unknown as ByteLineBatch, looks, new Float64Array(1), new Int32Array(1));
    expect(partitionOf('mine', 7)).not.toBe(partitionOf('r', 7));
    expect(looks[0]).toBe(partitionOf('mine', 7));
  });
});

describe('the committed WebAssembly', () => {
  it('is src/profiles/key-scan.c compiled by scripts/wasm.mjs', async () => {
    const { compileKeyScan } = (await import('../scripts/wasm.mjs')) as { compileKeyScan: () => { bytes?: Buffer; compiler?: string; error?: string } };
    const r = compileKeyScan();
    if (r.bytes === undefined) {
      // CI installs clang and lld (.ci/run): there a missing compiler fails the test.
      if (process.env.CI) throw new Error(`clang could not compile src/profiles/key-scan.c: ${r.error}`);
      console.warn(`skipped: clang could not compile src/profiles/key-scan.c (${r.error})`);
      return;
    }
    // Another clang may make other bytes of the same source: then the check says so and stops.
    if (r.compiler !== KEY_SCAN_COMPILER) {
      console.warn(`not compared: the committed module was made by ${KEY_SCAN_COMPILER}, this machine has ${r.compiler}`);
      return;
    }
    expect(Buffer.from(KEY_SCAN_WASM, 'base64').equals(r.bytes), 'src/profiles/key-scan-wasm.ts is stale: run node scripts/wasm.mjs').toBe(true);
  });

  it('a partition run without WebAssembly (--jitless) reads line by line and writes the same report', () => {
    const file = `${FIXTURES}/mixed-incidents.ndjson`;
    for (const p of ['0/2', '1/2', '2/3']) {
      const run = (flags: string[]) => spawnSync(process.execPath, [...flags, BIN, 'analyze', '-f', 'json', '--partition', p, file], { cwd: ROOT, encoding: 'utf8' });
      const a = run([]);
      const b = run(['--jitless']);
      expect(a.status, a.stderr).toBe(0);
      expect(b.status, b.stderr).toBe(0);
      expect(b.stdout).toBe(a.stdout);
    }
  });
});
