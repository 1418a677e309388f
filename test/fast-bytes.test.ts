/**
 * The canonical byte path (src/profiles/fast-canonical-bytes.ts) must never change a result: for
 * any line's bytes it either declines (undefined) or gives exactly the event the general path
 * gives (JSON.parse, the schema, the exact checks), and the string fast path when that one takes
 * the line too. Checked on every fixture line, on edge cases, on generated lines (valid and not,
 * ASCII and not, bytes that are not UTF-8), through the line reader and whole reports.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonical } from '../src/profiles/canonical.js';
import { fastCanonicalEvent } from '../src/profiles/fast-canonical.js';
import { clearInterned, fastCanonicalBytes } from '../src/profiles/fast-canonical-bytes.js';
import type { LockEvent } from '../src/model/event.js';
import { analyze } from '../src/analyze.js';
import type { Profile } from '../src/profiles/types.js';
import { decodeBatch, isByteBatch, readLineBytes, readLines, type ByteLineBatch, type LineBatch } from '../src/ingest/lines.js';
import { InputStats, toEvents } from '../src/ingest/records.js';
import { filesUnder, generalEvent } from './helpers/paths.js';

const isNdjson = (p: string) => p.endsWith('.ndjson');

const origin = { file: 'f.ndjson', line: 7, source: 'f.ndjson', offset: 100, bytes: 50 };

/** What the paths must agree on: every field but how the record is held. */
function comparable(ev: LockEvent): Record<string, unknown> {
  const { record: _r, text: _t, fields: _f, offset: _o, bytes: _b, ...rest } = ev;
  return rest;
}

/** The line's bytes with a newline after them, as they lie in a chunk, and something before. */
function inChunk(line: Buffer): { buf: Buffer; start: number; end: number } {
  const buf = Buffer.concat([Buffer.from('{"x":1}\n'), line, Buffer.from('\n{"y":2}\n')]);
  return { buf, start: 8, end: 8 + line.length };
}

/** Checks the bytes of one line; returns whether the byte path took it. */
function checkBytes(line: Buffer): boolean {
  const { buf, start, end } = inChunk(line);
  const fast = fastCanonicalBytes(buf, start, end, origin);
  if (fast === undefined) return false;
  // Taken: the bytes are ASCII, so this is the line's text.
  expect(line.every((c) => c < 0x80)).toBe(true);
  const text = line.toString('utf8');
  const slow = generalEvent(canonical, text, origin);
  expect(typeof slow === 'object' && slow !== null, `general path rejected a line the byte path took: ${text} → ${String(slow)}`).toBe(true);
  expect(comparable(fast), text).toEqual(comparable(slow as LockEvent));
  expect(fast.offset).toBe(origin.offset);
  expect(fast.bytes).toBe(origin.bytes);
  // No text, unless busy-rate-rising would read latencyMs from it.
  if (text.includes('"latencyMs"')) expect(fast.text).toBe(text);
  else expect(fast.text).toBeUndefined();
  const str = fastCanonicalEvent(text, origin);
  if (str !== undefined) expect(comparable(fast), text).toEqual(comparable(str));
  return true;
}

function check(text: string): boolean {
  return checkBytes(Buffer.from(text, 'utf8'));
}

const FIXTURES = join(__dirname, '..', 'fixtures');

describe('canonical byte path', () => {
  it('agrees with the general path on every fixture line, and takes the plain ones', () => {
    let taken = 0;
    let lines = 0;
    for (const file of filesUnder(FIXTURES, isNdjson)) {
      for (const line of readFileSync(file).toString('latin1').split('\n')) {
        const bytes = Buffer.from(line, 'latin1');
        if (bytes.toString('utf8').trim() === '') continue;
        lines++;
        if (checkBytes(bytes.at(-1) === 13 ? bytes.subarray(0, -1) : bytes)) taken++;
      }
    }
    expect(lines).toBeGreaterThan(500);
    expect(taken / lines).toBeGreaterThan(0.5);
  });

  it('declines what only the other paths can judge, and takes plain variants', () => {
    const base = '"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r","result":"accepted"';
    const declined = [
      `{${base},"fenceToken":"1","fenceToken":"2"}`,
      `{${base},"ts":"2026-03-01T10:00:01.000Z"}`,
      `{${base},"fenceToken":12345678901234567}`,
      `{${base},"fenceToken":9007199254740993}`,
      `{${base},"fenceToken":-1}`,
      `{${base},"fenceToken":1.0}`,
      `{${base},"fenceToken":1e3}`,
      `{${base},"fenceToken":"0x1"}`,
      `{${base},"fenceToken":""}`,
      `{${base},"fenceToken":"${'9'.repeat(81)}"}`,
      `{${base},"fenceToken":true}`,
      `{${base},"msg":"say \\"hi\\""}`,
      `{${base},"msg":"a\\u00e9"}`,
      `{${base},"res\\u0075lt":"rejected"}`,
      `{${base},"msg":"tab\there"}`,
      `{${base},\t"msg":"x"}`,
      `{${base},"meta":{"a":1}}`,
      `{${base},"list":[1,2]}`,
      `{${base},"leaseId":-0}`,
      `{${base},"leaseId":12345678901234567}`,
      `{${base},"leaseId":1.5}`,
      `{${base},"leaseId":true}`,
      `{${base},"ttlMs":-5}`,
      `{${base},"ttlMs":1e400}`,
      `{${base},"ttlMs":"5"}`,
      `{${base},"observer":"nobody"}`,
      `{${base},"observer":1}`,
      `{${base},"source":""}`,
      `{${base},"source":1}`,
      `{${base},"ownerId":7}`,
      `{${base},"operationId":null}`,
      `{${base},"hostname":"a","hostname":"b"}`,
      `{${base},"hostname":"a","host.name":"b"}`,
      `{${base},"hostname":7}`,
      `{${base},"hostname":""}`,
      `{${base},"msg":"ключ"}`, // non-ASCII: the string paths take it
      `{${base},"resource":"ключ ✓"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","result":"accepted"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","result":1}`,
      `{"ts":"2026-13-01T10:00:00.000Z","type":"acquire","resource":"r"}`,
      `{"ts":"2026-02-30T10:00:00.000Z","type":"acquire","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.000","type":"acquire","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.Z","type":"acquire","resource":"r"}`,
      `{"ts":"1969-12-31T23:59:59Z","type":"acquire","resource":"r"}`,
      `{"ts":"2200-01-01T00:00:00Z","type":"acquire","resource":"r"}`,
      `{"ts":1700000000,"type":"acquire","resource":"r"}`, // seconds, not ms: the general path explains
      `{"ts":-1,"type":"acquire","resource":"r"}`,
      `{"ts":true,"type":"acquire","resource":"r"}`,
      `{"ts":null,"type":"acquire","resource":"r"}`,
      `{"type":"acquire","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":""}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":1}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"grab","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"} x`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r",}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","x":tru}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","x":-}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","x":1.}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","x":1e}`,
      `{"ts":01,"type":"acquire","resource":"r"}`,
      '\ufeff{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"}',
      '{}',
      '{ }',
      '[]',
      '',
      'null',
      '{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"}\r',
    ];
    for (const line of declined) {
      expect(fastCanonicalBytes(...Object.values(inChunk(Buffer.from(line))) as [Buffer, number, number], origin), line).toBeUndefined();
      check(line);
    }
    // Bytes that are not UTF-8, anywhere: declined (the reader then reports the line).
    for (const bad of [Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xe2, 0x82]), Buffer.from([0xed, 0xa0, 0x80])]) {
      const line = Buffer.concat([Buffer.from(`{${base},"msg":"`), bad, Buffer.from('"}')]);
      expect(checkBytes(line)).toBe(false);
      expect(checkBytes(Buffer.concat([Buffer.from(`{${base},"`), bad, Buffer.from('":1}')]))).toBe(false);
    }
    const taken = [
      `{${base}}`,
      ` { ${base.replace(/,/g, ' , ').replace(/":/g, '" : ')} , "fenceToken" : 5 } `,
      `{${base},"fenceToken":"123456789012345678901234567890","leaseId":"694d77aa"}`,
      `{${base},"fenceToken":"${'9'.repeat(80)}"}`,
      `{${base},"fenceToken":999999999999999,"leaseId":-42,"ttlMs":1.5e3,"x":null,"y":true,"z":false,"n":-0.5e-3}`,
      `{${base},"fenceToken":0,"leaseId":0}`,
      `{${base},"fenceToken":4095}`,
      `{${base},"fenceToken":4096}`,
      `{${base},"fenceToken":"0000000000000000000007"}`,
      `{${base},"ttlMs":0}`,
      `{${base},"ttlMs":-0}`,
      `{${base},"ttlMs":10000.25}`,
      `{${base},"ttlMs":1E3}`,
      `{${base},"latencyMs":12.5}`,
      `{${base},"latencyMs":1,"latencyMs":2}`,
      `{"ts":1772359200000,"type":"keepalive","resource":"r","result":"failed","observer":"worker","source":"host-1"}`,
      `{"ts":1772359200000.5,"type":"keepalive","resource":"r"}`,
      `{"ts":1.7723592e12,"type":"keepalive","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:00.5+01:00","type":"expire","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:00-05:30","type":"expire","resource":"r"}`,
      `{"ts":"2026-03-01t11:00:00z","type":"expire","resource":"r"}`,
      `{"ts":"2026-03-01 11:00:00Z","type":"expire","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:00.123456789Z","type":"revoke","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:00.12Z","type":"revoke","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:00.1z","type":"revoke","resource":"r"}`,
      `{"ts":"2026-03-01T11:00:59.999Z","type":"revoke","resource":"r"}`,
      `{"ts":"2016-12-31T23:59:60.5Z","type":"revoke","resource":"r"}`,
      `{"ts":"2024-02-29T00:00:00Z","type":"release","resource":"r","result":"rejected"}`,
      `{${base},"fenceToken":"007","ownerId":""}`,
      `{${base},"hostname":"app-1","pid":7}`,
      `{${base},"hostname":"app-1","source":"db"}`,
      `{${base},"host.name":"node-9"}`,
      `{${base},"":"empty key","msg":"é".length}`.replace('"é".length', '1'),
      `{${base},"resource2":"q","Resource":"s","resourcE":"t"}`,
      `{${base},"operationId":"op-1","observer":"worker"}`,
      `{${base},"ownerId":"${'o'.repeat(200)}","resource":"x"}`.replace(',"resource":"r"', ''),
    ];
    for (const line of taken) expect(check(line), line).toBe(true);
  });

  it('reads timestamps of many minutes in turn, its cache included', () => {
    clearInterned();
    let t = Date.UTC(2026, 2, 1, 10, 0, 0);
    for (let k = 0; k < 2000; k++) {
      t += [1, 7, 999, 60_000, 59_123, 3_600_000][k % 6]!;
      const iso = new Date(t).toISOString();
      const forms = [iso, iso.replace('.000Z', 'Z'), iso.replace(/\.(\d\d)\dZ$/, '.$1Z'), iso.replace('Z', '+00:00'), iso.toLowerCase()];
      for (const ts of forms) expect(check(`{"ts":"${ts}","type":"acquire","resource":"r${k % 37}","ownerId":"w${k % 5}","leaseId":"l${k}"}`), ts).toBe(true);
    }
  });

  it('interns repeated values, and a full table still gives the right strings', () => {
    clearInterned();
    const line = (r: string) => Buffer.from(`{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"${r}","ownerId":"w"}`);
    const a = fastCanonicalBytes(line('res-1'), 0, line('res-1').length, origin)!;
    const b = fastCanonicalBytes(line('res-1'), 0, line('res-1').length, origin)!;
    expect(a.resource).toBe('res-1');
    expect(b.resource).toBe(a.resource);
    for (let k = 0; k < 100_000; k++) {
      const r = `res-${k}`;
      const l = line(r);
      const ev = fastCanonicalBytes(l, 0, l.length, origin)!;
      expect(ev.resource === r).toBe(true);
    }
  });

  it('agrees with the general path on generated lines', () => {
    const key = fc.constantFrom('ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source', 'hostname', 'host.name', 'msg', 'value', 'latencyMs', 'x', 'tS', 'resourc', 'ownerIds');
    const str = fc.oneof(
      fc.constantFrom('acquire', 'write', 'release', 'keepalive', 'expire', 'revoke', 'granted', 'busy', 'accepted', 'rejected-stale-fence', 'ok', 'worker', 'resource', 'authority', '', '12', '007', '2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00Z', '2026-03-01T10:00:00.5+02:00', '2026-03-01T10:00:61Z', '1970-01-01T00:00:00Z', 'ключ', '✓'),
      fc.string({ maxLength: 6 }),
      fc.string({ maxLength: 4, unit: 'binary' }),
    );
    const rawValue = fc.oneof(
      str.map((s) => JSON.stringify(s)),
      fc.constantFrom('0', '1', '-1', '1.5', '1e3', '-0', '9007199254740993', '123456789012345', '1772359200000', '1772359200000.25', '1700000000', 'true', 'false', 'null', '{}', '[1]', '"a\\u0041"', '01', '1.', '"\\"', '"\t"', '4096', '"4095"'),
    );
    const line = fc
      .tuple(fc.array(fc.tuple(key, rawValue), { minLength: 0, maxLength: 10 }), fc.constantFrom('', ' ', '  '), fc.boolean(), fc.option(fc.constantFrom(0xff, 0xc3, 0xe9, 0x09, 0x0d), { nil: undefined, freq: 4 }), fc.nat())
      .map(([pairs, sp, required, odd, at]) => {
        const all = required ? [['ts', '"2026-03-01T10:00:00.000Z"'] as [string, string], ['type', '"write"'] as [string, string], ['resource', '"r"'] as [string, string], ['result', '"accepted"'] as [string, string], ...pairs] : pairs;
        const bytes = Buffer.from(`{${all.map(([k, v]) => `${sp}"${k}"${sp}:${sp}${v}`).join(',')}${sp}}`, 'utf8');
        if (odd === undefined) return bytes;
        // A raw byte somewhere: not UTF-8, a tab, a CR.
        const p = at % (bytes.length + 1);
        return Buffer.concat([bytes.subarray(0, p), Buffer.from([odd]), bytes.subarray(p)]);
      });
    let taken = 0;
    fc.assert(
      fc.property(line, (bytes) => {
        if (checkBytes(bytes)) taken++;
      }),
      { numRuns: 10000, seed: 20261201 },
    );
    expect(taken).toBeGreaterThan(150);
  });

  it('counts every line through the reader as decoded lines do', async () => {
    const lines = [
      '{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","ownerId":"a","leaseId":"l1","fenceToken":"1","ttlMs":1000}',
      '',
      '   ',
      '\t',
      '{"ts":"2026-03-01T10:00:00.001Z","type":"write","resource":"r","leaseId":"l1","fenceToken":"1","result":"accepted","msg":"ключ"}',
      '{"ts":"2026-03-01T10:00:00.002Z","type":"write","resource":"r","leaseId":"l1","fenceToken":"1","result":"accepted","msg":"\u00ff\u00fe"}',
      '\ufeff{"ts":"2026-03-01T10:00:00.003Z","type":"release","resource":"r"}',
      '{"ts":"2026-03-01T10:00:00.003Z","type":"release","resource":"r"}\r',
      'not json',
      '{"ts":"2026-03-01T10:00:00.004Z","type":"write","resource":"r","result":"accepted","fenceToken":12345678901234567890}',
      '{"ts":"2026-03-01T10:00:00.004Z","type":"write","resource":"r","result":"accepted","result":"rejected"}',
      'x'.repeat(300),
      '{"ts":"2026-03-01T10:00:00.005Z","type":"acquire","resource":"r","nul":"\u0000"}',
      '{"ts":"2026-03-01T10:00:00.005Z","type":"acquire","resource":"r","cr":"a\rb"}',
    ];
    let bytes = Buffer.from('\ufeff' + lines.join('\r\n') + '\n' + lines.join('\n') + '\n' + lines[0], 'utf8');
    // Bytes that are not UTF-8 in a value of one line, and in a key of another.
    bytes = Buffer.concat([bytes, Buffer.from('\n{"ts":"2026-03-01T10:00:00.006Z","type":"acquire","resource":"r","msg":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n{"ts":"2026-03-01T10:00:00.007Z","type":"acquire","resource":"r","'), Buffer.from([0xc3]), Buffer.from('":1}\n')]);
    for (const size of [7, 64, 1000, 1 << 20]) {
      const run = async (reader: typeof readLines | typeof readLineBytes) => {
        async function* chunks() {
          for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
        }
        const problems: string[] = [];
        const stats = new InputStats({ onProblem: (p) => problems.push(`${p.line}: ${p.reason}`) });
        const summary = stats.addFile('f');
        const events: LockEvent[] = [];
        let byteBatches = 0;
        for await (const batch of reader(chunks(), { maxLineBytes: 250 })) {
          if (isByteBatch(batch as LineBatch | ByteLineBatch)) byteBatches++;
          events.push(...toEvents(batch, canonical, 'f', 'f', stats, summary, true));
        }
        return { problems, summary, events: events.map(comparable), byteBatches };
      };
      const a = await run(readLines);
      const b = await run(readLineBytes);
      expect(b.problems, `chunks of ${size}`).toEqual(a.problems);
      expect(b.summary).toEqual(a.summary);
      expect(b.events).toEqual(a.events);
      expect(b.byteBatches).toBeGreaterThan(0);
      expect(a.problems.some((p) => p.includes('not valid UTF-8'))).toBe(true);
      expect(a.problems.some((p) => p.includes('byte-order mark'))).toBe(true);
    }
  });

  it('decodes a batch of bytes into the batch the line reader gives', async () => {
    const bytes = Buffer.from('\ufeffa\r\nb\n\n ключ\n' + 'x'.repeat(40) + '\nlast', 'utf8');
    for (const size of [1, 3, 10, 100]) {
      async function* chunks() {
        for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
      }
      const a: LineBatch[] = [];
      for await (const batch of readLines(chunks(), { maxLineBytes: 20 })) a.push(batch);
      const b: LineBatch[] = [];
      for await (const batch of readLineBytes(chunks(), { maxLineBytes: 20 })) b.push(isByteBatch(batch) ? decodeBatch(batch) : (batch as LineBatch));
      expect(b).toEqual(a);
    }
  });

  it('gives the same reports with the byte path, the string path only, and the general path only', async () => {
    const noBytes: Profile = { ...canonical, fastBytes: undefined };
    const generalOnly: Profile = { ...canonical, fastBytes: undefined, fastEvent: undefined };
    let taken = 0;
    const counting: Profile = {
      ...canonical,
      fastBytes(bytes, start, end, o) {
        const ev = canonical.fastBytes!(bytes, start, end, o);
        if (ev !== undefined) taken++;
        return ev;
      },
    };
    const names = readdirSync(FIXTURES).filter((n) => n.endsWith('.ndjson'));
    expect(names.length).toBeGreaterThan(20);
    for (const name of names) {
      const file = join(FIXTURES, name);
      for (const timelines of [undefined, { all: true }]) {
        const auto = JSON.stringify(await analyze({ files: [file], timelines, workers: 'off' }));
        const a = JSON.stringify(await analyze({ files: [file], timelines, profile: counting, workers: 'off' }));
        expect(auto, name).toBe(a);
        const b = JSON.stringify(await analyze({ files: [file], timelines, profile: noBytes, workers: 'off' }));
        const c = JSON.stringify(await analyze({ files: [file], timelines, profile: generalOnly, workers: 'off' }));
        expect(a, name).toBe(b);
        expect(a, name).toBe(c);
      }
    }
    // The byte path was taken: fixtures are small, read in one chunk, and detection decodes only the first lines.
    expect(taken).toBeGreaterThan(1000);
  });

  it('tells copies from events by their lines, read back (at-least-once delivery)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-bytes-'));
    const acquire = '{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","ownerId":"a","leaseId":"l1","fenceToken":"1","ttlMs":5000}';
    const w = (extra: string, ts = '2026-03-01T10:00:01.000Z') => `{"ts":"${ts}","type":"write","resource":"r","leaseId":"l1","fenceToken":"1","result":"accepted","operationId":"op-1"${extra}}`;
    const lines = [acquire, w(',"attempt":1'), w(',"attempt":1'), w(',"attempt":2'), w(',"attempt":1', '2026-03-01T10:00:01Z'), w(',"attempt":1', '1772359201000').replace('"ts":"1772359201000"', '"ts":1772359201000')];
    const file = join(dir, 'a.ndjson');
    writeFileSync(file, lines.join('\n') + '\n');
    const other = join(dir, 'b.ndjson');
    writeFileSync(other, lines.slice(1, 2).join('\n') + '\n');
    const noBytes: Profile = { ...canonical, fastBytes: undefined };
    const a = await analyze({ files: [file, other] });
    const b = await analyze({ files: [file, other], profile: noBytes });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    // attempt 1 four times (twice as written, the same instant written two other ways), and once more in the other file: four copies.
    expect(a.input.duplicates).toBe(4);
    expect(a.input.events).toBe(3);
  });
});
