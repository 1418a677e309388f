/**
 * Memory flat as line length grows (issue 14): a line longer than a read chunk stays bytes (the
 * byte path), a long line of stdin is never made a string (its event keeps a shortened copy for
 * display), and the duplicate check remembers a long line as a digest of its record, never its
 * text. The digest must call two records the same exactly when the comparison of texts did.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { digestOfBytes, digestOfText, digestOfValue, DIGEST_CHARS, LineDigest } from '../src/ingest/digest.js';
import { MAX_REMEMBERED_LINE, RecentEvents, sameContent } from '../src/ingest/duplicates.js';
import { decodeBatch, isByteBatch, readLineBytes, readLines, type ByteLineBatch, type LineBatch } from '../src/ingest/lines.js';
import { InputStats, toEvents } from '../src/ingest/records.js';
import { displayFields, type LockEvent } from '../src/model/event.js';
import type { Report } from '../src/model/report.js';
import { canonical } from '../src/profiles/canonical.js';
import { fastCanonicalBytes } from '../src/profiles/fast-canonical-bytes.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'stalewrite-long-'));

async function* chunksOf(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('a line longer than a chunk stays bytes', () => {
  const lines = ['{"a":1}', 'x'.repeat(50), '', '  ', 'ключ ' + 'y'.repeat(30), 'short', 'z'.repeat(25) + '\r', 'last-without-newline-' + 'w'.repeat(20)];
  const bytes = Buffer.from('\ufeff' + lines.join('\n'), 'utf8');

  it('gives the same lines, offsets and lengths as the text reader, for every chunk size', async () => {
    for (const size of [1, 2, 3, 7, 16, 40, 1000]) {
      const a: { line: number; text: string | null; offset?: number; length?: number }[] = [];
      for await (const b of readLines(chunksOf(bytes, size), { maxLineBytes: 45 })) b.lines.forEach((text, i) => a.push({ line: b.firstLine + i, text, offset: b.offsets?.[i], length: b.lengths?.[i] }));
      const b: typeof a = [];
      let undecoded = 0;
      for await (const raw of readLineBytes(chunksOf(bytes, size), { maxLineBytes: 45 })) {
        if (isByteBatch(raw)) undecoded += raw.lines.filter((l) => l === undefined).length;
        const batch = isByteBatch(raw) ? decodeBatch(raw) : (raw as LineBatch);
        batch.lines.forEach((text, i) => b.push({ line: batch.firstLine + i, text, offset: batch.offsets?.[i], length: batch.lengths?.[i] }));
      }
      expect(b, `chunks of ${size}`).toEqual(a);
      // Every line but the one over the cap is left undecoded, those over several chunks too.
      expect(undecoded, `chunks of ${size}`).toBe(lines.length - 1);
    }
  });

  it('a line over many chunks is a batch of its own, in a buffer of its own', async () => {
    const text = `{"a":"${'q'.repeat(100)}"}`;
    const batches: ByteLineBatch[] = [];
    for await (const raw of readLineBytes(chunksOf(Buffer.from(`x\n${text}\r\ny\n`), 16))) if (isByteBatch(raw)) batches.push(raw);
    const long = batches.find((b) => b.lines.length === 1 && b.ends[0]! - b.starts[0]! === text.length);
    expect(long).toBeDefined();
    expect(long!.lines[0]).toBeUndefined();
    expect(long!.chunk.toString('latin1', long!.starts[0], long!.ends[0])).toBe(text); // CR left out
    expect(long!.firstLine).toBe(2);
    expect(long!.offsets![0]).toBe(2);
  });
});

describe('the byte path on long strings', () => {
  it('finds the end of a long string, and declines one with an escape, a control character or a byte above 0x7f, wherever it lies', () => {
    const specials: [string, boolean][] = [['\\"', false], ['\\\\', false], ['\\t', false], ['\\u0001', false], ['é', false], ['\\u007f', true], ['~', true], [' ', true]];
    for (const len of [250, 256, 257, 300, 1031]) {
      for (const at of [0, 1, 2, 3, 255, 256, 257, 258, 259, len - 1]) {
        if (at >= len) continue;
        for (const [special, plain] of specials) {
          for (const pad of [0, 1, 2, 3]) {
            const msg = 'm'.repeat(at) + JSON.parse(`"${special}"`) + 'n'.repeat(len - at - 1);
            const line = `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","msg":${JSON.stringify(msg)},"after":"x"}`;
            const bytes = Buffer.concat([Buffer.alloc(pad, 32), Buffer.from(line), Buffer.from('\n')]);
            // Copied so that the line's bytes start at each offset modulo 4 of the buffer's memory.
            const b = Buffer.from(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
            const ev = fastCanonicalBytes(b, pad, pad + Buffer.byteLength(line), { file: 'f', line: 1, source: 'f' });
            const where = `${JSON.stringify(special)} at ${at} of ${len}, pad ${pad}`;
            if (!plain) expect(ev, where).toBeUndefined();
            else {
              expect(ev, where).toBeDefined();
              expect(ev!.resource).toBe('r');
            }
          }
        }
      }
    }
    // A string that never ends within the line is no event of this path.
    const open = `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","msg":"${'m'.repeat(2000)}`;
    expect(fastCanonicalBytes(Buffer.from(open + '\n'), 0, open.length, { file: 'f', line: 1, source: 'f' })).toBeUndefined();
    expect(fastCanonicalBytes(Buffer.from(open), 0, open.length, { file: 'f', line: 1, source: 'f' })).toBeUndefined();
  });
});

describe('the buffer a line over chunks is joined in', () => {
  it('is reused from one long line to the next, and let go once lines are short again', async () => {
    const long = (c: string) => c.repeat(100_000);
    const text = [long('a'), long('b'), 'x'.repeat(300), 'y'.repeat(300), long('c')].join('\n') + '\n';
    const seen: { first: number; buffer: ArrayBufferLike; text: string }[] = [];
    for await (const raw of readLineBytes(chunksOf(Buffer.from(text), 256))) {
      // Read now: the batch's bytes are valid only until the next batch is asked for.
      if (isByteBatch(raw) && raw.lines.length === 1 && raw.lines[0] === undefined && raw.ends[0]! - raw.starts[0]! > 256) seen.push({ first: raw.firstLine, buffer: raw.chunk.buffer, text: raw.chunk.toString('latin1', raw.starts[0], raw.ends[0]) });
    }
    expect(seen.map((x) => x.first)).toEqual([1, 2, 3, 4, 5]);
    expect(seen.map((x) => x.text)).toEqual(text.split('\n').slice(0, 5));
    expect(seen[1]!.buffer).toBe(seen[0]!.buffer); // reused
    expect(seen[3]!.buffer).not.toBe(seen[0]!.buffer); // let go: short lines do not keep 100 KB
  });
});

// --- The digest ----------------------------------------------------------------------------------

const KEYS = ['ts', 'type', 'resource', 'msg', 'attempt', 'at', 'when', 'n', 'ok', 'x'];
const scalar = fc.oneof(
  fc.constantFrom('2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00Z', '2026-03-01T12:00:00+02:00', '2026-03-01T10:00:00.001Z', '2026-02-30T10:00:00Z', 'write', 'acquire', '', '12', 'a'.repeat(30)),
  fc.string({ maxLength: 8, unit: 'grapheme-ascii' }).filter((s) => !/["\\\u0000-\u001f]/.test(s)),
  fc.constantFrom(1772359200000, 1772359200001, 1772359200000.5, 0, -0, 1, 2, 1e21, 12.5, 1772359200, true, false, null),
);
/** A flat record as the canonical byte path reads it (ASCII, no escapes), keys possibly repeated. */
const entries = fc.array(fc.tuple(fc.constantFrom(...KEYS), scalar), { minLength: 1, maxLength: 7 });

/** The line of `entries` as JSON, keys in the order given, with spaces here and there. */
function lineOf(list: readonly (readonly [string, unknown])[], spaces = false): string {
  const sp = spaces ? ' ' : '';
  return `{${sp}${list.map(([k, v]) => `"${k}"${sp}:${sp}${typeof v === 'number' && Object.is(v, -0) ? '-0' : JSON.stringify(v)}`).join(`,${sp}`)}${sp}}`;
}

/** Another line for a record like that of `list`: its keys reordered, a timestamp written another way, or one value changed. */
function variant(list: readonly (readonly [string, unknown])[], how: number): (readonly [string, unknown])[] {
  const out = list.map(([k, v]) => [k, v] as const);
  if (how % 3 === 0) return out.reverse();
  if (how % 3 === 1) return out.map(([k, v]) => [k, v === '2026-03-01T10:00:00.000Z' ? 1772359200000 : v === 1772359200000 ? '2026-03-01T10:00:00Z' : v] as const);
  const i = how % out.length;
  const [k, v] = out[i]!;
  out[i] = [k, typeof v === 'number' ? v + 1 : typeof v === 'string' ? v + 'z' : !v];
  return out;
}

describe('the digest of a remembered line', () => {
  it('is the same exactly when the comparison of texts calls two records the same', () => {
    fc.assert(
      fc.property(entries, fc.nat(), fc.boolean(), (list, how, spaces) => {
        const a = lineOf(list);
        const b = lineOf(variant(list, how), spaces);
        const same = sameContent(a, b);
        expect(digestOfText(a).value === digestOfText(b).value).toBe(same);
        // And against a parsed record (a profile's), and one side already a digest.
        expect(digestOfValue(JSON.parse(b)).value === digestOfText(a).value).toBe(same);
        expect(sameContent(digestOfText(a), b)).toBe(same);
      }),
      { numRuns: 3000 },
    );
  });

  it('made from the bytes of a line equals that made from its text', () => {
    fc.assert(
      fc.property(entries, fc.boolean(), (list, spaces) => {
        const line = lineOf(list, spaces);
        const b = Buffer.from(`xx${line}yy`, 'latin1');
        expect(digestOfBytes(b, 2, 2 + line.length).value).toBe(digestOfText(line).value);
      }),
      { numRuns: 3000 },
    );
    // A key written twice: its last value (as JSON.parse reads it).
    const twice = '{"a":1,"b":2,"a":3}';
    expect(digestOfBytes(Buffer.from(twice), 0, twice.length).value).toBe(digestOfText('{"b":2,"a":3}').value);
    expect(digestOfText(twice).value).not.toBe(digestOfText('{"a":1,"b":2}').value);
  });

  it('tells apart strings that only differ where they are not UTF-8, and texts that are not JSON', () => {
    expect(digestOfText('{"a":"\\ud800"}').value).not.toBe(digestOfText('{"a":"\\ud801"}').value);
    expect(digestOfText('{"a":"\\ud800"}').value).not.toBe(digestOfText('{"a":"\ufffd"}').value);
    expect(digestOfText('{"a":"\\ud800"}').value).toBe(digestOfText('{"a":"\\uD800"}').value);
    expect(digestOfText('not json').value).toBe(digestOfText('not json').value);
    expect(digestOfText('not json').value).not.toBe(digestOfText('not json!').value);
    expect(digestOfText('{"a":"1"}').value).not.toBe(digestOfText('{"a":1}').value);
    expect(digestOfText('{"a":[1,2]}').value).not.toBe(digestOfText('{"a":{"0":1,"1":2}}').value);
    expect(digestOfText('{"a":{"x":1,"y":2}}').value).toBe(digestOfText('{"a":{"y":2,"x":1}}').value);
    expect(digestOfValue({ a: Number.NaN }).value).not.toBe(digestOfValue({ a: Number.NaN }).value); // NaN is equal to nothing
  });
});

// --- The duplicate check -------------------------------------------------------------------------

function event(ts: number, text: string, op = 'op-1'): LockEvent {
  return { ts, type: 'write', resource: 'r', ownerId: 'w', leaseId: 'l', operationId: op, fenceToken: 1n, result: 'accepted', observer: 'resource', source: 'f', file: 'f', line: 1, text };
}

describe('the duplicate check holds no long line', () => {
  const long = (i: number, tail = '') => `{"ts":${1772359200000 + i},"type":"write","resource":"r","msg":"${'m'.repeat(100_000)}${tail}"}`;

  it('remembers a long line as its digest: its budget grows by a digest per line, not by the line', () => {
    const recent = new RecentEvents(1000);
    for (let i = 0; i < 200; i++) expect(recent.seen(event(1772359200000 + i, long(i)))).toBe(false);
    expect(recent.size).toBe(200);
    expect(recent.peakChars).toBeLessThanOrEqual(200 * DIGEST_CHARS);
    // A line at the bound is still remembered as it is.
    const atBound = new RecentEvents(1000);
    atBound.seen(event(1, 'x'.repeat(MAX_REMEMBERED_LINE)));
    expect(atBound.peakChars).toBe(MAX_REMEMBERED_LINE);
  });

  it('a remembered long line is held neither as text nor through its event, nor a large record', () => {
    const recent = new RecentEvents(200_000);
    // Not ASCII: the byte path declines it, and its event holds its text (the string path's).
    const text = (i: number) => long(i, ' é');
    for (let i = 0; i < 50; i++) recent.seen(event(1772359200000 + i, text(i)));
    const record = (i: number): LockEvent => ({ ...event(1772359300000 + i, ''), text: undefined, record: { ts: 1772359300000 + i, msg: 'r'.repeat(50_000) } });
    for (let i = 0; i < 50; i++) recent.seen(record(i));
    const held = (recent as unknown as { q: ({ ev: LockEvent; content: unknown } | undefined)[] }).q.filter((r) => r !== undefined);
    expect(held).toHaveLength(100);
    for (const r of held) {
      expect(r.content).toBeInstanceOf(LineDigest);
      expect(r.ev.text).toBeUndefined();
      expect(r.ev.record).toBeUndefined();
    }
    expect(recent.peakChars).toBeLessThanOrEqual(100 * DIGEST_CHARS);
    // And they are still compared: the same line and record again are copies, others are not.
    expect(recent.seen(event(1772359200000 + 49, text(49)))).toBe(true);
    expect(recent.seen(event(1772359200000 + 49, text(48)))).toBe(false);
    expect(recent.seen(record(49))).toBe(true);
    expect(recent.seen({ ...record(49), record: { ts: 1772359300049, msg: 'r'.repeat(50_001) } })).toBe(false);
  });

  it('a line read back counts what it holds, once: forgotten, nothing is left counted', () => {
    const lines = new Map<number, string>([[0, long(0)], [1, long(0, '!')], [2, '{"short":1}'], [3, '{"short":1}']]);
    const recent = new RecentEvents(1000, undefined, undefined, (_f, offset) => lines.get(offset)!);
    const byRef = (ts: number, offset: number): LockEvent => ({ ...event(ts, ''), text: undefined, offset, bytes: lines.get(offset)!.length });
    const ts = 1772359200000;
    expect(recent.seen(byRef(ts, 0))).toBe(false);
    expect(recent.seen(byRef(ts, 1))).toBe(false); // both read back, compared by digest
    expect(recent.seen(byRef(ts, 0))).toBe(true);
    expect(recent.seen(byRef(ts + 1, 2))).toBe(false);
    expect(recent.seen(byRef(ts + 1, 3))).toBe(true);
    const chars = () => (recent as unknown as { chars: number }).chars;
    expect(chars()).toBe(2 * DIGEST_CHARS + '{"short":1}'.length);
    recent.seen(event(ts + 10_000, '{}'));
    expect(chars()).toBe(2);
  });

  it('recognises every copy however many lines were read back before (the budget does not drift)', () => {
    // A budget of 10 000 characters: a drift of 256 per line read back would exceed it after 40 lines.
    const text = (i: number) => `{"ts":${1772359200000 + i},"n":${i}}`;
    const recent = new RecentEvents(1000, undefined, 10_000, (_f, offset) => text(offset));
    const byRef = (i: number): LockEvent => ({ ...event(1772359200000 + i, ''), text: undefined, offset: i, bytes: text(i).length });
    let copies = 0;
    for (let i = 0; i < 500; i++) {
      recent.seen(byRef(i));
      if (recent.seen(byRef(i))) copies++;
    }
    expect(copies).toBe(500);
  });

  it('still tells a copy of a long line from a line that differs at its very end', () => {
    const recent = new RecentEvents(1000);
    const ts = 1772359200000;
    expect(recent.seen(event(ts, long(0)))).toBe(false);
    expect(recent.seen(event(ts, long(0)))).toBe(true);
    expect(recent.seen(event(ts, long(0, '!')))).toBe(false); // differs past the display clip and past MAX_REMEMBERED_LINE
    expect(recent.seen(event(ts, long(0, '!')))).toBe(true);
    // Its time written another way is the same record (as for short lines).
    const iso = long(0).replace(`"ts":${ts}`, '"ts":"2026-03-01T10:00:00.000Z"');
    expect(recent.seen(event(ts, iso))).toBe(true);
  });
});

// --- Whole runs ----------------------------------------------------------------------------------

const MSG = 'lease log line with a long message; '.repeat(2000); // 72 KB
const T0 = Date.UTC(2026, 2, 1, 10);
const iso = (ms: number) => new Date(ms).toISOString();

/** Two leases on one resource, the second's writes accepted twice (a copy, and a retry that differs only at the end of its msg). */
function history(): string[] {
  const w = (ms: number, op: string, token: number, owner: string, tail = '') =>
    `{"ts":"${iso(ms)}","type":"write","resource":"res","ownerId":"${owner}","leaseId":"L${token}","operationId":"${op}","fenceToken":"${token}","result":"accepted","note":"n-${op}","msg":"${op}:${MSG}${tail}"}`;
  return [
    `{"ts":"${iso(T0)}","type":"acquire","resource":"res","ownerId":"a","leaseId":"L1","fenceToken":"1","ttlMs":10000,"msg":"${MSG}"}`,
    w(T0 + 1000, 'op-1', 1, 'a'),
    `{"ts":"${iso(T0 + 20000)}","type":"acquire","resource":"res","ownerId":"b","leaseId":"L2","fenceToken":"2","ttlMs":10000,"msg":"${MSG}"}`,
    w(T0 + 21000, 'op-2', 2, 'b'),
    w(T0 + 21000, 'op-2', 2, 'b'), // an exact copy: a duplicate
    w(T0 + 21000, 'op-2', 2, 'b', ' (retried)'), // the same but at the end of its msg: an event
    // A write by the first owner after the second was granted, with a lower token: accepted (stale).
    w(T0 + 22000, 'op-3', 1, 'a'),
  ];
}

const findings = (r: Report) => JSON.stringify(r.findings.map(({ id: _i, ...f }) => f));

describe('long lines, whole runs', () => {
  const text = history().join('\n') + '\n';

  it('a file, stdin in pipe-sized chunks and gzip give the same findings, duplicates and evidence', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'in.ndjson'), text);
    writeFileSync(join(dir, 'in.ndjson.gz'), gzipSync(text));
    const file = await analyze({ files: [join(dir, 'in.ndjson')], workers: 'off' });
    const gz = await analyze({ files: [join(dir, 'in.ndjson.gz')], workers: 'off' });
    const stdin = await analyze({ streams: [{ name: 'stdin', stream: Readable.from(chunksOf(Buffer.from(text), 65536)) }] });
    for (const r of [file, gz, stdin]) {
      expect(r.input).toMatchObject({ lines: 7, events: 6, duplicates: 1, invalid: 0 });
      expect(r.findings.map((f) => f.rule).sort()).toContain('duplicate-effect');
    }
    const norm = (r: Report) => findings(r).replaceAll(join(dir, 'in.ndjson.gz'), 'IN').replaceAll(join(dir, 'in.ndjson'), 'IN').replaceAll('"stdin"', '"IN"');
    expect(norm(stdin)).toBe(norm(file));
    expect(norm(gz)).toBe(norm(file));
    // The same log from the file and from stdin: every line of the second is a copy (compared by
    // the digest of the line read back and the digest of stdin's bytes).
    const both = await analyze({ files: [join(dir, 'in.ndjson')], streams: [{ name: 'stdin', stream: Readable.from(chunksOf(Buffer.from(text), 65536)) }], workers: 'off' });
    expect(both.input).toMatchObject({ lines: 14, events: 6, duplicates: 8 });
    expect(norm(both)).toBe(norm(file));
    // The evidence shows the clipped msg, never the line.
    const shown = JSON.stringify(stdin.findings);
    expect(shown).toContain('op-2:lease log line');
    expect(shown.length).toBeLessThan(MSG.length);
  });

  it('an event of a long stdin line keeps a shortened copy with the same display fields, and the line is never decoded', () => {
    const line = history()[1]!;
    const bytes = Buffer.from(line + '\n');
    const batch: ByteLineBatch = { firstLine: 1, lines: [undefined], chunk: bytes, starts: [0], ends: [line.length] };
    const stats = new InputStats();
    const summary = stats.addFile('stdin');
    const [ev] = toEvents(batch, canonical, 'stdin', 'stdin', stats, summary, false, undefined, true);
    expect(ev).toBeDefined();
    expect(ev!.offset).toBeUndefined();
    expect(ev!.text!.length).toBeLessThan(1000);
    expect(displayFields(JSON.parse(ev!.text!))).toEqual(displayFields(JSON.parse(line)));
    // Its canonical fields are the byte path's.
    const { text: _t, ...fields } = ev!;
    const { text: _u, ...expected } = fastCanonicalBytes(bytes, 0, line.length, { file: 'stdin', line: 1, source: 'stdin' })!;
    expect(fields).toEqual(expected);
    // The duplicate check compares it by the digest of the whole line, not by the shortened copy.
    const recent = new RecentEvents(1000);
    expect(recent.seen(ev!)).toBe(false);
    const other = history()[1]!.replace('"}', 'X"}');
    const b2 = Buffer.from(other + '\n');
    const [ev2] = toEvents({ firstLine: 2, lines: [undefined], chunk: b2, starts: [0], ends: [other.length] }, canonical, 'stdin', 'stdin', stats, summary, false, undefined, true);
    expect(ev2!.text).toBe(ev!.text);
    expect(recent.seen(ev2!)).toBe(false);
    const [ev3] = toEvents({ firstLine: 3, lines: [undefined], chunk: bytes, starts: [0], ends: [line.length] }, canonical, 'stdin', 'stdin', stats, summary, false, undefined, true);
    expect(recent.seen(ev3!)).toBe(true);
    expect(recent.peakChars).toBeLessThanOrEqual(2 * DIGEST_CHARS);
  });

  it('a digest is a small remembered content', () => {
    expect(digestOfText(history()[1]!)).toBeInstanceOf(LineDigest);
    expect(digestOfText(history()[1]!).value.length).toBeLessThanOrEqual(DIGEST_CHARS);
  });
});
