/**
 * Container log wrappers (src/ingest/wrappers.ts): docker's json-file records, CRI runtime lines
 * (with partial `P` lines) and `kubectl logs --timestamps` prefixes are unwrapped for every
 * profile, detected per input. The checks: each fixture of each built-in profile (and a mapping),
 * wrapped each way, split into partial pieces and gzipped, gives the report of the unwrapped
 * file, but for `lines` and `joined`; line accounting stays exact; `file:line` points at the first
 * piece of a joined line; the line-length cap holds for joined lines; the wrapper's time stands in
 * for a missing timestamp; and the worker-thread path gives the same report.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { DETECT_HOLD_BYTES, DETECT_WINDOW, detectWrapper, parseCri, parseDocker, parseKubectl, Unwrapper, unwrapSample, WrapperGate, wrapperOf } from '../src/ingest/wrappers.js';
import type { LineBatch } from '../src/ingest/lines.js';
import type { Report } from '../src/model/report.js';
import { fastCanonicalEvent } from '../src/profiles/fast-canonical.js';
import { getProfile, loadMapping, type ProfileName } from '../src/profiles/index.js';
import type { Profile } from '../src/profiles/types.js';
import { renderMap } from '../src/cli/map.js';
import { FIXTURES, runCli } from './helpers/run.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'stalewrite-wrappers-'));

type Kind = 'docker' | 'cri' | 'kubectl';

/** A time for the n-th line, as runtimes write it (nanoseconds). */
const timeOf = (n: number) => new Date(Date.UTC(2026, 2, 1, 9, 0, 0) + n).toISOString().replace('Z', '123456Z');

/**
 * Wrap a log's text as a runtime would. `split`: lines longer than that many characters are cut
 * into partial pieces (docker: `log` without its newline; CRI: `P` lines); CRI pieces of
 * alternate lines go to alternate streams, with another stream's line between two pieces.
 */
function wrap(text: string, kind: Kind, split = 0): string {
  return wrapWithLines(text, kind, split).text;
}

/** wrap(), and the physical line each line of the text became the first piece of (1-based, by index). */
function wrapWithLines(text: string, kind: Kind, split = 0): { text: string; firstLines: number[] } {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const out: string[] = [];
  const firstLines: number[] = [];
  lines.forEach((line, n) => {
    firstLines.push(out.length + 1);
    const time = timeOf(n);
    const stream = n % 2 === 0 ? 'stdout' : 'stderr';
    if (kind === 'kubectl') {
      out.push(`${time} ${line}`);
      return;
    }
    const pieces: string[] = [];
    if (split > 0 && line.length > split) for (let at = 0; at < line.length; at += split) pieces.push(line.slice(at, at + split));
    else pieces.push(line);
    pieces.forEach((p, k) => {
      const last = k === pieces.length - 1;
      if (kind === 'docker') out.push(JSON.stringify({ log: last ? p + '\n' : p, stream, time }));
      else out.push(`${time} ${stream} ${last ? 'F' : 'P'} ${p}`);
    });
  });
  return { text: out.join('\n') + '\n', firstLines };
}

/** The report with each `file:line` moved to the line it has in the wrapped copy of its file. */
function movedLines(report: Report, firstLines: Map<string, number[]>): Report {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)])) as Record<string, unknown>;
    const map = typeof o.file === 'string' ? firstLines.get(o.file) : undefined;
    if (map !== undefined && typeof o.line === 'number') o.line = map[o.line - 1];
    return o;
  };
  return walk(report) as Report;
}

interface Case {
  name: string;
  files: string[];
  profile: () => Profile;
}

/** The fixture cases of every built-in profile, and a mapping. */
function profileCases(): Case[] {
  const out: Case[] = [];
  const dirs = [
    ...readdirSync(join(FIXTURES, 'profiles', 'same-incident')).map((d) => join('profiles', 'same-incident', d)),
    ...readdirSync(join(FIXTURES, 'profiles', 'app-json-loggers')).map((d) => join('profiles', 'app-json-loggers', d)),
    join('profiles', 'k8s', 'overlap'),
    join('profiles', 'k8s', 'handover'),
    join('profiles', 'auto'),
    'mapping-readme',
  ];
  for (const d of dirs) {
    const dir = join(FIXTURES, d);
    const names = readdirSync(dir);
    const files = names.filter((n) => /\.(ndjson|jsonl|json|log)$/.test(n) && n !== 'expect.json' && n !== 'mapping.json').map((n) => join(dir, n));
    const options = (JSON.parse(readFileSync(join(dir, 'expect.json'), 'utf8')) as { options?: { profile?: string; klogYear?: number; klogZone?: string } }).options ?? {};
    const klog = { year: options.klogYear, zone: options.klogZone };
    const profile = names.includes('mapping.json') ? () => loadMapping(join(dir, 'mapping.json'), { klog }) : () => getProfile((options.profile ?? 'canonical') as ProfileName, { klog });
    out.push({ name: d, files, profile });
  }
  return out;
}

/** The report with the input's directory replaced, so that reports of copies elsewhere compare. */
function normalised(report: Report, dir: string, as: string): Report {
  return JSON.parse(JSON.stringify(report).split(dir).join(as)) as Report;
}

/** Everything but the line counts, which wrapping changes by `joined` (and the verdict's reasons, checked on their own below). */
function comparable(r: Report): unknown {
  const { input, ...rest } = r;
  return {
    ...rest,
    summary: { ...rest.summary, reasons: undefined },
    input: { ...input, lines: undefined, joined: undefined, files: input.files.map((f) => ({ ...f, lines: undefined, joined: undefined, wrapper: undefined })) },
  };
}

/** Write wrapped copies of `files` (same names) into a new directory; where each original line went. */
function wrapped(files: string[], kind: Kind, split: number, gzip: boolean): { dir: string; files: string[]; firstLines: Map<string, number[]> } {
  const dir = tmp();
  const firstLines = new Map<string, number[]>();
  const out = files.map((f) => {
    const w = wrapWithLines(readFileSync(f, 'utf8'), kind, split);
    firstLines.set(f, w.firstLines);
    const path = join(dir, basename(f));
    writeFileSync(path, gzip ? gzipSync(w.text) : w.text);
    return path;
  });
  return { dir, files: out, firstLines };
}

describe('detecting a wrapper', () => {
  const canonical = '{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r","fenceToken":1}';
  it('tells docker, CRI and kubectl --timestamps lines apart, and leaves unwrapped lines alone', () => {
    expect(wrapperOf(JSON.stringify({ log: canonical + '\n', stream: 'stderr', time: '2026-03-01T10:00:00.123456789Z' }))).toBe('docker');
    expect(wrapperOf(`2026-03-01T10:00:00.123456789Z stdout F ${canonical}`)).toBe('cri');
    expect(wrapperOf(`2026-03-01T10:00:00.123456789+02:00 stderr P ${canonical}`)).toBe('cri');
    expect(wrapperOf(`2026-03-01T10:00:00.123456789Z ${canonical}`)).toBe('kubectl');
    expect(wrapperOf(canonical)).toBeUndefined();
    expect(wrapperOf('I0301 10:30:00.012877       1 leaderelection.go:260] "Successfully acquired lease" lock="kube-system/kcm"')).toBeUndefined();
    expect(wrapperOf('time=2026-03-01T10:00:00Z msg="lock acquired"')).toBeUndefined();
    // An application record with a `log` field is not docker's record.
    expect(wrapperOf(JSON.stringify({ log: 'x\n', stream: 'stdout', time: '2026-03-01T10:00:00Z', level: 'info' }))).toBeUndefined();
    expect(wrapperOf('2026-03-01 10:00:00 stdout F x')).toBeUndefined();
  });

  it('decides per input from its first non-blank lines, by majority', () => {
    const cri = (t: string) => `2026-03-01T10:00:00.1Z stdout F ${t}`;
    expect(detectWrapper(['', '  ', null])).toBeUndefined();
    expect(detectWrapper(['', cri(canonical), cri(canonical)])).toBe('cri');
    // One odd line among wrapped ones does not change the decision, nor the other way round.
    expect(detectWrapper(['garbage', cri(canonical), cri(canonical)])).toBe('cri');
    expect(detectWrapper([canonical, canonical, cri(canonical)])).toBeNull();
    expect(detectWrapper([canonical])).toBeNull();
  });

  it('decides from the first lines of the input, whatever batches they come in (a pipe, a read chunk)', async () => {
    // Three unwrapped lines, then five in CRI's form: of the first eight, most are CRI's.
    const plain = (n: number) => `{"ts":"2026-03-01T10:00:0${n}Z","type":"acquire","resource":"r-${n}","fenceToken":${n + 1},"owner":"w${n}"}`;
    const lines = [...[0, 1, 2].map(plain), ...[3, 4, 5, 6, 7].map((n) => `2026-03-01T10:00:0${n}.1Z stdout F ${plain(n)}`), plain(8)];
    const buf = Buffer.from(['', ...lines].join('\n') + '\n');
    const cut = (every: number) => Array.from({ length: Math.ceil(buf.length / every) }, (_, k) => buf.subarray(k * every, (k + 1) * every));
    const reports: string[] = [];
    for (const chunks of [[buf], cut(1), cut(7), cut(150), cut(400)]) {
      const report = await analyze({ streams: [{ name: 'w.log', stream: Readable.from(chunks) }] });
      expect(report.input.files[0]!.wrapper).toBe('cri');
      expect(report.input.events).toBe(9);
      reports.push(JSON.stringify(report));
    }
    expect(new Set(reports).size).toBe(1);
    // Fewer than eight lines in all: decided from those, at the end.
    const short = Buffer.from(lines.slice(2, 5).join('\n') + '\n');
    const r = await analyze({ streams: [{ name: 's.log', stream: Readable.from([short.subarray(0, 10), short.subarray(10)]) }] });
    expect(r.input.files[0]!.wrapper).toBe('cri');
    expect(r.input.events).toBe(3);
  });

  it('holds the first batches only within its window of lines and of bytes', () => {
    const cri = (n: number) => `2026-03-01T10:00:00.1Z stdout F {"n":${n}}`;
    // One wrapped line, then blank lines: decided at the DETECT_WINDOW-th line from the first wrapped one.
    const u = new Unwrapper(1 << 20);
    const gate = new WrapperGate(u, (b: LineBatch) => b.lines);
    expect(gate.offer({ firstLine: 1, lines: ['', ' '] })).toHaveLength(1); // nothing to decide from yet: on at once
    expect(gate.offer({ firstLine: 3, lines: [cri(1), ...Array<string>(DETECT_WINDOW - 2).fill('')] })).toEqual([]);
    expect(u.kind).toBeUndefined();
    const out = gate.offer({ firstLine: DETECT_WINDOW + 1, lines: ['', '', cri(2)] });
    expect(u.kind).toBe('cri');
    expect(out.map((b) => b.firstLine)).toEqual([3, DETECT_WINDOW + 1]);
    // A line ending past DETECT_HOLD_BYTES bytes of input from the first one's start: decided from
    // the lines before it (by where the lines are in the input, not by what the batches weigh).
    const v = new Unwrapper(1 << 20);
    const big = new WrapperGate(v, (b: LineBatch) => b.lines);
    expect(big.offer({ firstLine: 1, lines: ['', cri(1)], offsets: [0, 1], lengths: [0, 40] })).toEqual([]);
    expect(big.offer({ firstLine: 3, lines: [' '.repeat(10), '{"n":2}'], offsets: [42, DETECT_HOLD_BYTES - 6], lengths: [10, 7] })).toEqual([]);
    expect(v.kind).toBeUndefined(); // line 4 ends at DETECT_HOLD_BYTES + 1: within the bound
    expect(big.offer({ firstLine: 5, lines: ['{"n":3}', '{"n":4}'], offsets: [DETECT_HOLD_BYTES + 2, DETECT_HOLD_BYTES + 10], lengths: [7, 7] })).toHaveLength(3);
    expect(v.kind).toBe('cri');
    expect(big.settle()).toEqual([]);
  });

  it('decides a file the same whether it is read alone or among many (smaller read chunks)', async () => {
    // Lines of 40 KB: the 64 KiB chunk of a run over more than MANY_FILES inputs holds two of them.
    const pad = 'p'.repeat(40_000);
    const plain = (n: number) => `{"ts":"2026-03-01T10:00:0${n}Z","type":"acquire","resource":"r-${n}","fenceToken":${n + 1},"owner":"w${n}","pad":"${pad}"}`;
    const lines = [...[0, 1, 2].map(plain), ...[3, 4, 5, 6, 7].map((n) => `2026-03-01T10:00:0${n}.1Z stdout F ${plain(n)}`)];
    const dir = tmp();
    const file = join(dir, 'big.log');
    writeFileSync(file, lines.join('\n') + '\n');
    const others = Array.from({ length: 33 }, (_, k) => {
      const p = join(dir, `other-${k}.ndjson`);
      writeFileSync(p, `{"ts":"2026-03-01T11:00:00Z","type":"acquire","resource":"o-${k}","fenceToken":1,"owner":"w"}\n`);
      return p;
    });
    const alone = await analyze({ files: [file] });
    const many = await analyze({ files: [file, ...others] });
    expect(alone.input.files[0]!.wrapper).toBe('cri');
    expect(many.input.files[0]).toEqual(alone.input.files[0]);
    expect(many.input.files[0]!.events).toBe(8);
  });

  it('bounds the bytes it holds by where the lines are in the input, the same read alone, among many or on a worker', async () => {
    // One CRI line, blank lines of 120 KB (about 50 MB in all, within DETECT_HOLD_BYTES), then
    // seven plain lines: decided from the first eight, no wrapper. Read alone in 256 KiB chunks, a
    // line across two chunks is held twice (joined, and in the chunk its end is in), which once
    // weighed more than DETECT_HOLD_BYTES and decided CRI from the first line alone.
    const dir = tmp();
    const file = join(dir, 'spread.log');
    const ev = (n: number) => `{"ts":"2026-03-01T10:00:0${n}Z","type":"acquire","resource":"r${n}","ownerId":"w","leaseId":"l${n}","fenceToken":"1"}`;
    const blank = ' '.repeat(120_000);
    writeFileSync(file, [`2026-03-01T10:00:00.1Z stdout F ${ev(0)}`, ...Array<string>(420).fill(blank), ...[1, 2, 3, 4, 5, 6, 7].map(ev)].join('\n') + '\n');
    const others = Array.from({ length: 33 }, (_, k) => {
      const p = join(dir, `other-${k}.ndjson`);
      writeFileSync(p, ev(9).replace('"r9"', `"o-${k}"`) + '\n');
      return p;
    });
    const alone = await analyze({ files: [file] });
    expect(alone.input.files[0]!.wrapper).toBeUndefined();
    expect(alone.input.files[0]).toMatchObject({ events: 7, invalid: 1, blank: 420 });
    expect(alone.input.problems.map((p) => p.line)).toEqual([1]);
    expect((await analyze({ files: [file, ...others] })).input.files[0]).toEqual(alone.input.files[0]);
    expect((await analyze({ files: [file], workers: 'on' })).input.files[0]).toEqual(alone.input.files[0]);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('unwraps the pieces: the newline of docker records, CRI tags, the kubectl prefix', () => {
    expect(parseDocker(JSON.stringify({ log: 'abc\r\n', stream: 'stdout', time: 't' }))).toMatchObject({ text: 'abc', partial: false, stream: 'stdout', time: 't' });
    expect(parseDocker(JSON.stringify({ log: 'abc', stream: 'stdout', time: 't' }))).toMatchObject({ text: 'abc', partial: true });
    expect(parseCri('2026-03-01T10:00:00.1Z stderr P {"a"')).toMatchObject({ text: '{"a"', partial: true, stream: 'stderr' });
    expect(parseCri('2026-03-01T10:00:00.1Z stdout F')).toMatchObject({ text: '', partial: false });
    expect(parseCri('2026-03-01T10:00:00.1Z stdout X y')).toBeUndefined();
    expect(parseKubectl('2026-03-01T10:00:00.1Z  two spaces')).toMatchObject({ text: ' two spaces', time: '2026-03-01T10:00:00.1Z' });
  });

  it('the canonical fast path never reads a wrapped line as an event (it leaves it to the general path)', () => {
    const origin = { file: 'f', line: 1, source: 'f' };
    expect(fastCanonicalEvent(canonical, origin)).toBeDefined();
    expect(fastCanonicalEvent(JSON.stringify({ log: canonical + '\n', stream: 'stdout', time: '2026-03-01T10:00:00Z' }), origin)).toBeUndefined();
    expect(fastCanonicalEvent(JSON.stringify({ log: canonical, stream: 'stdout', time: '2026-03-01T10:00:00Z' }), origin)).toBeUndefined();
    expect(fastCanonicalEvent(`2026-03-01T10:00:00.1Z stdout F ${canonical}`, origin)).toBeUndefined();
    expect(fastCanonicalEvent(`2026-03-01T10:00:00.1Z ${canonical}`, origin)).toBeUndefined();
  });
});

describe('every built-in profile reads wrapped input as it reads the unwrapped', () => {
  const cases = profileCases();
  const variants: { kind: Kind; split: number; gzip: boolean }[] = [
    { kind: 'docker', split: 0, gzip: false },
    { kind: 'docker', split: 50, gzip: true },
    { kind: 'cri', split: 0, gzip: false },
    { kind: 'cri', split: 37, gzip: false },
    { kind: 'cri', split: 37, gzip: true },
    { kind: 'kubectl', split: 0, gzip: false },
    { kind: 'kubectl', split: 0, gzip: true },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const fixtureDir = join(c.files[0]!, '..');
    const plain = await analyze({ files: c.files, profile: c.profile(), timelines: { all: true } });
    expect(plain.input.events).toBeGreaterThan(0);
    for (const v of variants) {
      const w = wrapped(c.files, v.kind, v.split, v.gzip);
      const label = `${c.name} as ${v.kind}${v.split > 0 ? ` split at ${v.split}` : ''}${v.gzip ? ', gzipped' : ''}`;
      const report = normalised(await analyze({ files: w.files, profile: c.profile(), timelines: { all: true } }), w.dir, fixtureDir);
      // file:line points at the first piece of a joined line.
      expect(comparable(report), label).toEqual(comparable(movedLines(plain, w.firstLines)));
      const i = report.input;
      expect(i.lines + i.expanded, label).toBe(i.events + i.blank + i.ignored + i.invalid + i.joined);
      expect(i.lines - i.joined, label).toBe(plain.input.lines);
      if (v.split > 0) expect(i.joined, label).toBeGreaterThan(0);
      else expect(i.joined, label).toBe(0);
      for (const f of i.files) {
        expect(f.wrapper, label).toBe(v.kind);
        expect(f.lines + f.expanded, label).toBe(f.events + f.blank + f.ignored + f.invalid + f.joined);
      }
    }
  }, 60_000);
});

describe("the verdict's reasons", () => {
  it('count a joined line once, as the line it was before the runtime split it', async () => {
    // k8s/handover: most lines are not lease events, so the verdict says so ("mostly-unread").
    const c = profileCases().find((x) => x.name === join('profiles', 'k8s', 'handover'))!;
    const plain = await analyze({ files: c.files, profile: c.profile() });
    expect(plain.summary.reasons.map((r) => r.id)).toContain('mostly-unread');
    const w = wrapped(c.files, 'docker', 50, false);
    const report = normalised(await analyze({ files: w.files, profile: c.profile() }), w.dir, join(c.files[0]!, '..'));
    expect(report.input.joined).toBeGreaterThan(0);
    expect(report.summary.reasons).toEqual(plain.summary.reasons);
  });
});

describe('partial lines', () => {
  const line = (n: number, extra = '') => `{"ts":"2026-03-01T10:00:0${n}.000Z","type":"acquire","resource":"r-${n}","ownerId":"w","fenceToken":${n}${extra}}`;

  it('joins CRI P pieces per stream; file:line is the first piece; the pieces count as joined', async () => {
    const a = line(1);
    const text = [
      `2026-03-01T10:00:01.1Z stdout P ${a.slice(0, 20)}`,
      `2026-03-01T10:00:01.2Z stderr F ${line(0)}`,
      `2026-03-01T10:00:01.3Z stdout P ${a.slice(20, 30)}`,
      `2026-03-01T10:00:01.4Z stdout F ${a.slice(30)}`,
      `2026-03-01T10:00:02.1Z stdout F {"ts":"2026-03-01T10:00:02.000Z","type":"write","resource":"r-1","ownerId":"w","fenceToken":1`,
      '',
    ].join('\n');
    // Fed in tiny chunks: pieces and lines cross chunk boundaries.
    const chunks = Array.from({ length: Math.ceil(text.length / 7) }, (_, k) => Buffer.from(text.slice(k * 7, k * 7 + 7)));
    const report = await analyze({ streams: [{ name: 'cri.log', stream: Readable.from(chunks) }], timelines: { all: true } });
    expect(report.input).toMatchObject({ lines: 5, events: 2, blank: 0, invalid: 1, joined: 2 });
    const lines = Object.fromEntries(report.timelines!.flatMap((t) => t.events.map((e) => [t.resource, e.line])));
    expect(lines).toEqual({ 'r-0': 2, 'r-1': 1 });
    // The damaged record inside a wrapper is invalid with its own line number and the reason it would have unwrapped.
    expect(report.input.problems).toEqual([{ file: 'cri.log', line: 5, reason: expect.stringMatching(/^not valid JSON: /) }]);
  });

  it('a joined line is bound by --max-line-bytes: reported once, at its first piece, without being kept', async () => {
    const pad = 'x'.repeat(3000);
    const big = line(1, `,"pad":"${pad}"`);
    const text = wrap([line(0), big, line(2)].join('\n') + '\n', 'docker', 1000);
    const report = await analyze({ streams: [{ name: 'docker.log', stream: Readable.from([Buffer.from(text)]) }], maxLineBytes: 2048 });
    const pieces = Math.ceil(big.length / 1000);
    expect(report.input).toMatchObject({ lines: 2 + pieces, events: 2, invalid: 1, joined: pieces - 1 });
    expect(report.input.problems).toEqual([{ file: 'docker.log', line: 2, reason: expect.stringMatching(/line-length cap/) }]);
    // Under the cap, the same pieces are one event.
    const ok = await analyze({ streams: [{ name: 'docker.log', stream: Readable.from([Buffer.from(text)]) }], maxLineBytes: 4096 });
    expect(ok.input).toMatchObject({ events: 3, invalid: 0, joined: pieces - 1 });
  });

  it('a partial line whose last piece never comes (a cut-off log) is read as it is at the end', async () => {
    const a = line(1);
    const text = `2026-03-01T10:00:01.1Z stdout F ${line(0)}\n2026-03-01T10:00:01.1Z stdout P ${a.slice(0, 25)}\n2026-03-01T10:00:01.2Z stdout P ${a.slice(25)}\n`;
    const report = await analyze({ streams: [{ name: 'cut.log', stream: Readable.from([Buffer.from(text)]) }] });
    expect(report.input).toMatchObject({ lines: 3, events: 2, joined: 1, invalid: 0 });
  });
});

describe('property: partial lines, any split, any interleaving, any chunking', () => {
  it('lines + expanded = events + blank + ignored + invalid + joined; each event at its first piece; the cap holds', async () => {
    const lineArb = fc.record({
      pad: fc.nat(300),
      cuts: fc.array(fc.nat(400), { maxLength: 5 }),
      stream: fc.constantFrom('stdout', 'stderr'),
      garbage: fc.boolean(),
    });
    const arb = fc.record({
      lines: fc.array(lineArb, { minLength: 1, maxLength: 12 }),
      kind: fc.constantFrom<Kind>('docker', 'cri'),
      order: fc.array(fc.boolean(), { maxLength: 80 }),
      chunkCuts: fc.array(fc.nat(), { maxLength: 30 }),
      cap: fc.constantFrom(250, 400, 1 << 20),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ lines, kind, order, chunkCuts, cap }) => {
        // Each line: its pieces; the two streams' pieces interleave as `order` says, each stream in order.
        const texts = lines.map((l, i) =>
          l.garbage ? `{"ts":"2026-03-01T10:00:00.000Z","type":"nope","resource":"r-${i}","pad":"${'p'.repeat(l.pad)}"}` : `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r-${i}","pad":"${'p'.repeat(l.pad)}"}`,
        );
        const queues: Record<string, { line: number; text: string; last: boolean }[]> = { stdout: [], stderr: [] };
        texts.forEach((t, i) => {
          const at = [...new Set(lines[i]!.cuts.map((c) => c % t.length).filter((c) => c > 0))].sort((a, b) => a - b);
          const bounds = [0, ...at, t.length];
          for (let k = 0; k + 1 < bounds.length; k++) queues[lines[i]!.stream]!.push({ line: i, text: t.slice(bounds[k], bounds[k + 1]), last: k + 2 === bounds.length });
        });
        const physical: string[] = [];
        const firstPiece = new Map<number, number>();
        let k = 0;
        while (queues.stdout!.length + queues.stderr!.length > 0) {
          const pick = queues.stdout!.length === 0 ? 'stderr' : queues.stderr!.length === 0 ? 'stdout' : order[k++ % Math.max(1, order.length)] ? 'stderr' : 'stdout';
          const p = queues[pick]!.shift()!;
          if (!firstPiece.has(p.line)) firstPiece.set(p.line, physical.length + 1);
          const time = '2026-03-01T10:00:00.000000001Z';
          physical.push(kind === 'docker' ? JSON.stringify({ log: p.last ? p.text + '\n' : p.text, stream: pick, time }) : `${time} ${pick} ${p.last ? 'F' : 'P'} ${p.text}`);
        }
        // A physical line over the cap is reported as such before any unwrapping: not this property's business.
        fc.pre(physical.every((l) => Buffer.byteLength(l) <= cap));
        const buf = Buffer.from(physical.join('\n') + '\n');
        const at = [...new Set(chunkCuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let prev = 0;
        for (const c of at) if (c > prev) chunks.push(buf.subarray(prev, (prev = c)));
        if (prev < buf.length) chunks.push(buf.subarray(prev));
        const report = await analyze({ streams: [{ name: 'w.log', stream: Readable.from(chunks) }], maxLineBytes: cap, timelines: { all: true } });
        const i = report.input;
        expect(i.lines).toBe(physical.length);
        expect(i.lines + i.expanded).toBe(i.events + i.blank + i.ignored + i.invalid + i.joined);
        expect(i.joined).toBe(physical.length - texts.length);
        const fits = texts.map((t) => Buffer.byteLength(t) <= cap);
        expect(i.events).toBe(texts.filter((_, n) => fits[n] && !lines[n]!.garbage).length);
        expect(i.invalid).toBe(texts.filter((_, n) => !fits[n] || lines[n]!.garbage).length);
        for (const t of report.timelines!) expect(t.events.map((e) => e.line), t.resource).toEqual([firstPiece.get(Number(t.resource.slice(2)))]);
        for (const p of i.problems) expect(firstPiece.get(texts.findIndex((_, n) => firstPiece.get(n) === p.line))).toBe(p.line);
      }),
      { seed: 12, numRuns: 150, maxSkipsPerRun: 1000 },
    );
  }, 60_000);
});

describe("the wrapper's time", () => {
  it('stands in for a record without a timestamp, in canonical and app-json records', async () => {
    const text = [
      '2026-03-01T10:00:05.250000000Z stdout F {"type":"acquire","resource":"r","ownerId":"w","leaseId":"L","fenceToken":3}',
      '2026-03-01T10:00:06.500000000Z stdout F {"ts":"2026-03-01T10:00:07.000Z","type":"keepalive","resource":"r","ownerId":"w","leaseId":"L"}',
      '',
    ].join('\n');
    const report = await analyze({ streams: [{ name: 'c.log', stream: Readable.from([Buffer.from(text)]) }], timelines: { all: true } });
    expect(report.input).toMatchObject({ events: 2, invalid: 0 });
    // Its own ts wins where it has one.
    expect(report.timelines![0]!.events.map((e) => e.ts)).toEqual(['2026-03-01T10:00:05.250Z', '2026-03-01T10:00:07.000Z']);
    const app = JSON.stringify({ log: JSON.stringify({ msg: 'lock acquired', lock: 'orders/1', owner: 'w', fence: 4 }) + '\n', stream: 'stdout', time: '2026-03-01T10:00:08.125Z' });
    const r2 = await analyze({ streams: [{ name: 'a.log', stream: Readable.from([Buffer.from(app + '\n')]) }], profile: getProfile('app-json'), timelines: { all: true } });
    expect(r2.timelines![0]!.events.map((e) => e.ts)).toEqual(['2026-03-01T10:00:08.125Z']);
    // Without a wrapper, the same record has no timestamp: invalid, as before.
    const bare = await analyze({ streams: [{ name: 'b.log', stream: Readable.from([Buffer.from(JSON.parse(app).log)]) }], profile: getProfile('app-json') });
    expect(bare.input.problems[0]?.reason).toMatch(/no timestamp/);
  });

  it('gives klog text its year (the one before, for a December line wrapped in January); --klog-year still wins', async () => {
    const klog = (mmdd: string) => `I${mmdd} 23:59:59.500000       1 leaderelection.go:260] "Successfully acquired lease" lock="kube-system/kcm"`;
    const text = `2021-01-01T00:00:01.000000000Z stderr F ${klog('1231')}\n2021-01-01T00:00:02.000000000Z stderr F ${klog('0101')}\n`;
    const ts = async (options: Partial<AnalyzeOptions>) => {
      const r = await analyze({ streams: [{ name: 'kcm.log', stream: Readable.from([Buffer.from(text)]) }], timelines: { all: true }, ...options });
      return r.timelines![0]!.events.map((e) => e.ts);
    };
    expect(await ts({ profile: getProfile('k8s-leaderelection') })).toEqual(['2020-12-31T23:59:59.500Z', '2021-01-01T23:59:59.500Z']);
    expect(await ts({ profile: getProfile('auto') })).toEqual(['2020-12-31T23:59:59.500Z', '2021-01-01T23:59:59.500Z']);
    expect(await ts({ profile: getProfile('k8s-leaderelection', { klog: { year: 2024 } }) })).toEqual(['2024-12-31T23:59:59.500Z', '2024-01-01T23:59:59.500Z']);
  });
});

describe('the real kube-controller-manager lines in docker json-file (kubernetes/kubernetes#89466)', () => {
  const dir = join(FIXTURES, 'profiles', 'k8s', 'docker-json-file');
  const files = ['master1.log', 'master3.log'].map((f) => join(dir, f));

  it('are read as their unwrapped klog lines are, with the year from docker', async () => {
    const report = await analyze({ files, profile: getProfile('k8s-leaderelection'), timelines: { all: true } });
    expect(report.input).toMatchObject({ lines: 3, events: 1, ignored: 2, invalid: 0, joined: 0 });
    expect(report.input.files.map((f) => f.wrapper)).toEqual(['docker', 'docker']);
    const events = report.timelines![0]!.events;
    expect(events.map((e) => [e.type, e.ts, relative(dir, e.file), e.line])).toEqual([['acquire', '2020-03-24T03:40:42.273Z', 'master1.log', 2]]);
    // The same lines taken out of their wrapper by hand (what `kubectl logs` would print).
    const out = tmp();
    const inner = files.map((f) => {
      const path = join(out, basename(f));
      writeFileSync(path, readFileSync(f, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { log: string }).log).join(''));
      return path;
    });
    const bare = normalised(await analyze({ files: inner, profile: getProfile('k8s-leaderelection', { klog: { year: 2020 } }), timelines: { all: true } }), out, dir);
    expect(comparable(bare)).toEqual(comparable(report));
  });

  it('pass `stalewrite check`', async () => {
    const r = await runCli(['check', dir, join(FIXTURES, 'wrappers')]);
    expect(r.stdout).toMatch(/4 passed, 0 failed/);
    expect(r.code).toBe(0);
  });
});

describe('the CLI', () => {
  it('`map` shows each line unwrapped, a joined line at its first piece', async () => {
    const r = await runCli(['map', join(FIXTURES, 'wrappers', 'cri-partial.log')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('(wrapper: cri');
    expect(r.stdout).toMatch(/^5: \{"ts": "2026-03-01T10:00:12.000Z", "type": "write"/m);
    expect(r.stdout).not.toMatch(/^[78]: /m);
    expect(r.stdout).toContain('9 lines shown: 7 events, 0 blank, 0 ignored, 0 invalid (2 partial lines joined)');
  });

  it('`map` says a line whose bytes are not UTF-8 is invalid, as analyze counts it, wrapped or not', async () => {
    const dir = tmp();
    const ev = (n: number, msg: Buffer) => Buffer.concat([Buffer.from(`{"ts":"2026-03-01T10:00:0${n}Z","type":"acquire","resource":"r${n}","ownerId":"w","leaseId":"l","fenceToken":"1","msg":"a`), msg, Buffer.from('"}')]);
    const bad = Buffer.from([0xff, 0xc3]);
    for (const wrap of [(b: Buffer) => b, (b: Buffer) => Buffer.concat([Buffer.from('2026-03-01T10:00:00.1Z stdout F '), b])]) {
      const file = join(dir, 'utf8.log');
      writeFileSync(file, Buffer.concat([wrap(ev(1, Buffer.from('ok'))), Buffer.from('\n'), wrap(ev(2, bad)), Buffer.from('\n')]));
      const report = await analyze({ files: [file] });
      expect(report.input.files[0]).toMatchObject({ events: 1, invalid: 1 });
      const map = await renderMap(file, getProfile('canonical'), 20, 1 << 20);
      expect(map).toMatch(/^2: .*\n {2}-> invalid: bytes that are not valid UTF-8/m);
      expect(map).toContain('2 lines shown: 1 events, 0 blank, 0 ignored, 1 invalid');
    }
  });

  it('`analyze -` reads a gzipped CRI log from stdin, and the table says what was joined', async () => {
    const text = readFileSync(join(FIXTURES, 'article-unsafe.ndjson'), 'utf8');
    const r = await runCli(['analyze', '-f', 'table', '-'], { stdin: gzipSync(wrap(text, 'cri', 60)) });
    expect(r.stdout).toContain('accepted-stale-write');
    expect(r.stdout).toMatch(/input: 1 file, \d+ lines = 7 events \+ 0 blank \+ 0 ignored \+ 0 invalid \+ \d+ joined/);
  });

  it('unwrapSample gives a sample as the profiles see it', () => {
    expect(unwrapSample(['2026-03-01T10:00:00.1Z stdout P {"a":', '2026-03-01T10:00:00.2Z stdout F 1}', ''], 1024)).toEqual(['{"a":1}', '']);
    expect(unwrapSample(['{"a":1}'], 1024)).toEqual(['{"a":1}']);
  });
});

describe('parsing on worker threads', () => {
  it('gives the same report on wrapped, split and gzipped input', async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'in'));
    const src = join(FIXTURES, 'profiles', 'same-incident', 'canonical', 'incident.ndjson');
    const text = readFileSync(src, 'utf8');
    const inputs: [string, string | Buffer][] = [
      ['docker.log', wrap(text, 'docker', 45)],
      ['cri.log.gz', gzipSync(wrap(text, 'cri', 33))],
      ['kubectl.log', wrap(text, 'kubectl')],
    ];
    for (const [name, data] of inputs) {
      const path = join(dir, 'in', name);
      writeFileSync(path, data);
      for (const maxLineBytes of [undefined, 150]) {
        const options: AnalyzeOptions = { files: [path], profile: getProfile('auto'), timelines: { all: true }, maxLineBytes };
        const off = JSON.stringify(await analyze({ ...options, workers: 'off' }));
        const on = JSON.stringify(await analyze({ ...options, workers: 'on' }));
        expect(on, `${name} ${maxLineBytes}`).toBe(off);
        if (maxLineBytes === undefined) expect((JSON.parse(off) as Report).input.events, name).toBeGreaterThan(0);
      }
    }
  }, 60_000);
});
