/**
 * A seeded differential fuzz of the container log wrapper's decision (wrappers.ts, WrapperGate)
 * and everything after it: an input mixing plain, docker-, CRI- and kubectl-wrapped lines
 * (partial pieces, another stream's line between them), blank, invalid, over-long and non-UTF-8
 * lines, CRLF and a BOM, with lines from a few bytes to 150 KB so that its first eight content
 * lines straddle the 64 KiB, 256 KiB and 1 MiB read chunks, gives the same report read alone, as
 * a stream cut anywhere, gzipped, among more than MANY_FILES files, in partitions merged, on a
 * parsing worker and with --jobs; and every summary reconciles.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, MANY_FILES } from '../src/analyze.js';
import type { FileSummary, Report } from '../src/model/report.js';
import { mergeReports } from '../src/partition/merge.js';
import { renderJson } from '../src/report/json.js';

/** mulberry32: the cases are the same on every run. */
function prng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (a: number, b: number) => a + Math.floor(next() * (b - a + 1)), pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]! };
}

type Kind = 'docker' | 'cri' | 'kubectl';
const BAD = Buffer.from([0xff, 0xc3]);

/** One input: its bytes and the line-length cap to read it with. */
function input(seed: number): { bytes: Buffer; maxLineBytes: number | undefined } {
  const r = prng(seed);
  const maxLineBytes = r.pick([undefined, undefined, 3000, 100_000]);
  const cap = maxLineBytes ?? 1 << 20;
  const kinds: Kind[] = r.pick([[], ['docker'], ['cri'], ['kubectl'], ['cri', 'docker', 'kubectl']]);
  const wrapped = kinds.length === 0 ? 0 : r.pick([0.3, 0.5, 0.7, 1]);
  const pad = () => r.pick([0, 0, 40, 300, 17_000, 40_000, 70_000, 150_000]);
  const ts = (n: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, 0) + n * 100).toISOString();
  const tokens = [1, 1, 1];
  const app: (string | Buffer)[] = [];
  const count = r.pick([1, 3, 7, 8, 9, 14]);
  for (let n = 0; n < count; n++) {
    const k = r.next();
    const res = r.int(0, 2);
    const msg = `,"msg":"${'m'.repeat(pad())}`;
    if (k < 0.08) app.push(r.pick(['', ' ', '\t']));
    else if (k < 0.13) app.push('not json');
    else if (k < 0.17 && cap < 1 << 20) app.push(`{"ts":"${ts(n)}","type":"write","resource":"z${res}","msg":"${'o'.repeat(cap + 10)}"}`);
    else if (k < 0.21) app.push(Buffer.concat([Buffer.from(`{"ts":"${ts(n)}","type":"write","resource":"z${res}","result":"accepted","fenceToken":"1${msg}`), BAD, Buffer.from('"}')]));
    else if (k < 0.5) {
      tokens[res] = tokens[res]! + r.int(0, 2);
      app.push(`{"ts":"${ts(n)}","type":"acquire","resource":"z${res}","ownerId":"w${tokens[res]}","leaseId":"l${tokens[res]}","fenceToken":"${tokens[res]}","ttlMs":${r.pick([500, 5000])}${msg}"}`);
    } else {
      const t = Math.max(1, tokens[res]! - r.int(0, 1));
      app.push(`{"ts":"${ts(n)}","type":"write","resource":"z${res}","ownerId":"w${t}","leaseId":"l${t}","fenceToken":"${t}","result":"${r.pick(['accepted', 'accepted', 'rejected'])}"${msg}"}`);
    }
  }
  const physical: Buffer[] = [];
  app.forEach((line, n) => {
    const text = Buffer.isBuffer(line) ? line : Buffer.from(line);
    if (r.next() >= wrapped) return physical.push(text);
    const kind = r.pick(kinds);
    const time = new Date(Date.UTC(2026, 2, 1, 9, 0, 0) + n).toISOString().replace('Z', '123456Z');
    const stream = r.pick(['stdout', 'stderr']);
    if (kind === 'kubectl') return physical.push(Buffer.concat([Buffer.from(`${time} `), text]));
    // Pieces of 16 KiB (docker's split), or smaller; CRI pieces with another stream's line between them.
    const size = r.pick([16_384, 16_384, 1000]);
    const pieces: Buffer[] = [];
    for (let at = 0; at < text.length || pieces.length === 0; at += size) pieces.push(text.subarray(at, at + size));
    pieces.forEach((p, i) => {
      const last = i === pieces.length - 1;
      if (kind === 'docker') physical.push(Buffer.from(JSON.stringify({ log: p.toString('latin1') + (last ? '\n' : ''), stream, time })));
      else {
        physical.push(Buffer.concat([Buffer.from(`${time} ${stream} ${last ? 'F' : 'P'} `), p]));
        if (!last && r.next() < 0.3) physical.push(Buffer.from(`${time} ${stream === 'stdout' ? 'stderr' : 'stdout'} F `));
      }
    });
  });
  const eol = r.pick(['\n', '\r\n']);
  const parts: Buffer[] = [];
  if (r.next() < 0.2) parts.push(Buffer.from('\ufeff'));
  for (let i = r.pick([0, 0, 2, 5000]); i > 0; i--) parts.push(Buffer.from(eol));
  for (const p of physical) {
    parts.push(p, Buffer.from(eol));
    if (r.next() < 0.1) parts.push(Buffer.from(eol));
  }
  return { bytes: Buffer.concat(parts), maxLineBytes };
}

/** Random cuts of an input into the chunks of a stream. */
function cut(bytes: Buffer, seed: number): Buffer[] {
  const r = prng(seed);
  const most = r.pick([50, 70_000, 300_000]);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = r.int(1, most);
    out.push(Buffer.from(bytes.subarray(at, at + n)));
    at += n;
  }
  return out;
}

function reconciles(r: Report): void {
  for (const s of [...r.input.files, r.input] as (FileSummary & { otherPartitions?: number })[]) {
    expect(s.lines + s.expanded, JSON.stringify(s)).toBe(s.events + s.duplicates + s.blank + s.ignored + s.invalid + s.joined + (s.otherPartitions ?? 0));
  }
}

const dir = mkdtempSync(join(tmpdir(), 'sw-wrapper-decision-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the wrapper decided, and the report, the same however an input is read', () => {
  it('alone, as a stream cut anywhere, gzipped, among many files, in partitions, on a worker, with --jobs', async () => {
    const others = Array.from({ length: MANY_FILES + 1 }, (_, k) => {
      const p = join(dir, `other-${k}.ndjson`);
      writeFileSync(p, `{"ts":"2026-03-01T11:00:00Z","type":"acquire","resource":"o-${k}","ownerId":"w","leaseId":"lo","fenceToken":"1"}\n`);
      return p;
    });
    const wrappers = new Set<string>();
    for (let seed = 1; seed <= 24; seed++) {
      const { bytes, maxLineBytes } = input(seed);
      const file = join(dir, `in-${seed}.log`);
      writeFileSync(file, bytes);
      const at = `seed ${seed}`;
      const alone = await analyze({ files: [file], maxLineBytes });
      reconciles(alone);
      wrappers.add(String(alone.input.files[0]!.wrapper));
      const json = renderJson(alone);
      const stream = await analyze({ streams: [{ name: file, stream: Readable.from(cut(bytes, seed)) }], maxLineBytes });
      expect(renderJson(stream), `${at}, a stream`).toBe(json);
      writeFileSync(file + '.gz', gzipSync(bytes));
      const gz = await analyze({ files: [file + '.gz'], maxLineBytes });
      expect(renderJson(gz).split(file + '.gz').join(file), `${at}, gzipped`).toBe(json);
      // Among many: read in 64 KiB chunks by reopening; its own entry, findings and problems.
      const many = await analyze({ files: [file, ...others], maxLineBytes });
      reconciles(many);
      const own = (r: Report) => JSON.stringify([r.input.files[0], r.findings.filter((f) => !f.resource.startsWith('o-')), r.input.problems.filter((p) => p.file === file)]);
      expect(own(many), `${at}, among many`).toBe(own(alone));
      const parts: Report[] = [];
      for (let i = 0; i < 2; i++) {
        const part = await analyze({ files: [file], maxLineBytes, partition: { index: i, count: 2 } });
        reconciles(part);
        parts.push(JSON.parse(renderJson(part)) as Report);
      }
      expect(renderJson(mergeReports(parts)), `${at}, partitions merged`).toBe(json);
      if (seed % 4 === 0) {
        expect(renderJson(await analyze({ files: [file], maxLineBytes, workers: 'on' })), `${at}, on a worker`).toBe(json);
        expect(renderJson(await analyze({ files: [file], maxLineBytes, jobs: 2 })), `${at}, --jobs 2`).toBe(json);
      }
    }
    // The cases reach every outcome of the decision.
    expect([...wrappers].sort()).toEqual(['cri', 'docker', 'kubectl', 'undefined']);
  }, 60_000);
});
