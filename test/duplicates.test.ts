/**
 * At-least-once delivery (issue 13): a line delivered twice, a file given twice (under other
 * names), one log in two inputs. Copies are counted in `duplicates` and analysed once; a retry
 * that really happened (another timestamp or field) is still a duplicate effect. The same file
 * named twice is read once, and many files are read within a small descriptor limit.
 */
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { RecentEvents } from '../src/ingest/duplicates.js';
import type { LockEvent } from '../src/model/event.js';
import type { Report } from '../src/model/report.js';
import { BIN, ROOT, runCli } from './helpers/run.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'stalewrite-dup-'));
const validateReport = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(JSON.parse(readFileSync(join(ROOT, 'schema', 'report.schema.json'), 'utf8')) as object);

/** A safe history: a stale write rejected by its fence. */
const SAFE = [
  { ts: '2026-03-01T10:00:00.000Z', type: 'acquire', resource: 'r', ownerId: 'a', leaseId: 'A', fenceToken: 1, ttlMs: 10000 },
  { ts: '2026-03-01T10:00:01.000Z', type: 'write', resource: 'r', ownerId: 'a', leaseId: 'A', operationId: 'op-1', fenceToken: 1, result: 'accepted' },
  { ts: '2026-03-01T10:00:10.000Z', type: 'expire', resource: 'r', leaseId: 'A' },
  { ts: '2026-03-01T10:00:11.000Z', type: 'acquire', resource: 'r', ownerId: 'b', leaseId: 'B', fenceToken: 2, ttlMs: 10000 },
  { ts: '2026-03-01T10:00:12.000Z', type: 'write', resource: 'r', ownerId: 'b', leaseId: 'B', operationId: 'op-2', fenceToken: 2, result: 'accepted' },
  { ts: '2026-03-01T10:00:13.000Z', type: 'write', resource: 'r', ownerId: 'a', leaseId: 'A', operationId: 'op-3', fenceToken: 1, result: 'rejected-stale-fence' },
].map((r) => JSON.stringify(r));

const text = (lines: readonly string[]) => lines.join('\n') + '\n';
const twiceEach = (lines: readonly string[]) => lines.flatMap((l) => [l, l]);

function reconciles(r: Report): void {
  const i = r.input;
  expect(i.lines + i.expanded).toBe(i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined);
  for (const f of i.files) expect(f.lines + f.expanded).toBe(f.events + f.duplicates + f.blank + f.ignored + f.invalid + f.joined);
}

const rulesFired = (r: Report) => r.findings.map((f) => `${f.rule}@${f.resource}`).sort();

describe('at-least-once delivery: copies are counted once', () => {
  it('the same line twice in one file: the safe history stays safe', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'once.ndjson'), text(SAFE));
    writeFileSync(join(dir, 'twice.ndjson'), text(twiceEach(SAFE)));
    const once = await analyze({ files: [join(dir, 'once.ndjson')], workers: 'off' });
    const twice = await analyze({ files: [join(dir, 'twice.ndjson')], workers: 'off' });
    expect(once.summary.verdict).toBe('verified');
    expect(twice.summary.verdict).toBe('verified');
    expect(rulesFired(twice)).toEqual(rulesFired(once));
    expect(twice.input).toMatchObject({ lines: 12, events: 6, duplicates: 6 });
    expect(twice.input.files[0]).toMatchObject({ lines: 12, events: 6, duplicates: 6 });
    reconciles(twice);
    expect(validateReport(JSON.parse(JSON.stringify(twice)))).toBe(true);
  });

  it('without the check (dedupe: false) the copies are a duplicate effect and an equal token: the check matters', async () => {
    const r = await analyze({ streams: [{ name: 'twice', stream: Readable.from([text(twiceEach(SAFE))]) }], dedupe: false });
    expect(r.summary.verdict).toBe('violated');
    expect(rulesFired(r)).toEqual(expect.arrayContaining(['duplicate-effect@r', 'accepted-equal-token@r']));
    expect(r.input.duplicates).toBe(0);
  });

  it('one log present in two inputs (no source field): one event each, the copies counted in the second input', async () => {
    const r = await analyze({ streams: [{ name: 'node-1.log', stream: Readable.from([text(SAFE)]) }, { name: 'shipper/node-1.log', stream: Readable.from([text(SAFE)]) }] });
    expect(r.summary.verdict).toBe('verified');
    expect(r.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(r.input.files.map((f) => [f.file, f.events, f.duplicates])).toEqual([
      ['node-1.log', 6, 0],
      ['shipper/node-1.log', 0, 6],
    ]);
    expect(r.input).toMatchObject({ events: 6, duplicates: 6 });
    reconciles(r);
  });

  it('an explicit source takes part: the same host is a copy, different sources are two events', async () => {
    const withSource = (src: string) => SAFE.map((l) => JSON.stringify({ ...JSON.parse(l), source: src }));
    const withHost = (host: string) => SAFE.map((l) => JSON.stringify({ ...JSON.parse(l), hostname: host }));
    const same = await analyze({ streams: [{ name: 'x', stream: Readable.from([text(withHost('h1'))]) }, { name: 'y', stream: Readable.from([text(withHost('h1'))]) }] });
    expect(same.input).toMatchObject({ events: 6, duplicates: 6 });
    expect(same.summary.verdict).toBe('verified');
    const different = await analyze({ streams: [{ name: 'x', stream: Readable.from([text(withSource('s1'))]) }, { name: 'y', stream: Readable.from([text(withSource('s2'))]) }] });
    expect(different.input).toMatchObject({ events: 12, duplicates: 0 });
    // A source given explicitly is not the default one: not a copy of a line without a source.
    const mixed = await analyze({ streams: [{ name: 'x', stream: Readable.from([text(SAFE)]) }, { name: 'y', stream: Readable.from([text(withSource('s1'))]) }] });
    expect(mixed.input).toMatchObject({ events: 12, duplicates: 0 });
  });

  it('a retry that really happened twice (other timestamp, or another field) is still a duplicate effect', async () => {
    const write = JSON.parse(SAFE[4]!) as Record<string, unknown>;
    const later = JSON.stringify({ ...write, ts: '2026-03-01T10:00:12.001Z' });
    const otherOwnerView = JSON.stringify({ ...write, ttlMs: 5 });
    for (const retry of [later, otherOwnerView]) {
      const lines = [...SAFE.slice(0, 5), retry, SAFE[5]!];
      const r = await analyze({ streams: [{ name: 'retry', stream: Readable.from([text(lines)]) }] });
      expect(r.input.duplicates).toBe(0);
      expect(rulesFired(r)).toContain('duplicate-effect@r');
      expect(r.summary.verdict).toBe('violated');
    }
  });

  it('a retry in the same millisecond that differs only in a field of its own (attempt 2) is an event, not a copy', async () => {
    const w = (attempt: number) => JSON.stringify({ ts: '2026-03-01T10:00:01Z', type: 'write', resource: 'r', leaseId: 'A', operationId: 'op1', fenceToken: '1', result: 'accepted', attempt });
    const r = await analyze({ streams: [{ name: 'retry', stream: Readable.from([text([w(1), w(2)])]) }] });
    expect(r.input).toMatchObject({ events: 2, duplicates: 0 });
    expect(r.findings.map((f) => f.rule)).toContain('duplicate-effect');
    const copy = await analyze({ streams: [{ name: 'copy', stream: Readable.from([text([w(1), w(1)])]) }] });
    expect(copy.input).toMatchObject({ events: 1, duplicates: 1 });
  });

  it('the same instant written two ways is one event (ts compared as an instant)', async () => {
    const rec = JSON.parse(SAFE[4]!) as Record<string, unknown>;
    const epoch = JSON.stringify({ ...rec, ts: Date.parse(rec.ts as string) });
    const lines = [...SAFE.slice(0, 5), epoch, SAFE[5]!];
    const r = await analyze({ streams: [{ name: 'two-ways', stream: Readable.from([text(lines)]) }] });
    expect(r.input.duplicates).toBe(1);
    expect(r.summary.verdict).toBe('verified');
  });

  it('worker threads give the same report, duplicates included', async () => {
    const dir = tmp();
    const a = join(dir, 'a.ndjson');
    const b = join(dir, 'b.ndjson');
    writeFileSync(a, text(twiceEach(SAFE)));
    writeFileSync(b, text(SAFE));
    const options: AnalyzeOptions = { files: [a, b] };
    const off = JSON.stringify(await analyze({ ...options, workers: 'off' }));
    const on = JSON.stringify(await analyze({ ...options, workers: 'on' }));
    expect(on).toBe(off);
    expect(JSON.parse(off).input).toMatchObject({ events: 6, duplicates: 12 });
  });

  it('the check table takes a duplicates count', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'log.ndjson'), text(twiceEach(SAFE)));
    writeFileSync(join(dir, 'log.expect.json'), JSON.stringify({ findings: [], input: { events: 6, duplicates: 5 } }));
    const bad = await runCli(['check', dir]);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('input.duplicates: expected 5, got 6');
    writeFileSync(join(dir, 'log.expect.json'), JSON.stringify({ findings: [], input: { events: 6, duplicates: 6 } }));
    const good = await runCli(['check', dir]);
    expect(good.stdout + good.stderr).not.toContain('input.duplicates');
  });
});

describe('the window of remembered events is bounded', () => {
  const ev = (ts: number, resource = 'r'): LockEvent => ({ ts, type: 'write', resource, result: 'accepted', observer: 'resource', source: 'f', file: 'f', line: 1 });

  it('remembers only the events within the window of the newest timestamp', () => {
    const recent = new RecentEvents(100);
    for (let t = 0; t < 100_000; t++) expect(recent.seen(ev(t))).toBe(false);
    expect(recent.size).toBeLessThanOrEqual(102);
    // A copy within the window is found; one further behind is not (and is analysed again).
    expect(recent.seen(ev(99_950))).toBe(true);
    expect(recent.seen(ev(50_000))).toBe(false);
    expect(recent.size).toBeLessThanOrEqual(102);
  });

  it('finds copies among events that arrive out of order, and forgets them as the window moves', () => {
    const recent = new RecentEvents(100);
    const order = [10, 50, 20, 50, 10, 30, 20, 90, 30];
    expect(order.map((t) => recent.seen(ev(t)))).toEqual([false, false, false, true, true, false, true, false, true]);
    for (let t = 100; t < 10_000; t++) recent.seen(ev(t, 'other'));
    expect(recent.size).toBeLessThanOrEqual(102);
    // Back in order: a copy at the newest timestamp, and one a little behind it.
    expect(recent.seen(ev(9_999, 'other'))).toBe(true);
    expect(recent.seen(ev(9_950, 'other'))).toBe(true);
    expect(recent.seen(ev(9_950, 'again'))).toBe(false);
    expect(recent.seen(ev(9_950, 'again'))).toBe(true);
  });

  it('60,000 events in one millisecond: one lookup each, and the count stays bounded', () => {
    const recent = new RecentEvents(1000, 10_000);
    for (let i = 0; i < 60_000; i++) expect(recent.seen(ev(5, `r${i}`))).toBe(false);
    expect(recent.size).toBe(10_000);
    expect(recent.seen(ev(5, 'r59999'))).toBe(true); // the newest are kept
    expect(recent.seen(ev(5, 'r0'))).toBe(false); // the oldest were let go: analysed again, as documented
  });

  it('many events in one millisecond are told apart by their fields', () => {
    const recent = new RecentEvents(0);
    for (let i = 0; i < 50; i++) expect(recent.seen(ev(5, `r${i}`))).toBe(false);
    for (let i = 0; i < 50; i++) expect(recent.seen(ev(5, `r${i}`))).toBe(true);
  });

  it('a copy delivered far behind the newest timestamp (more than the window) is analysed again: the documented limit', async () => {
    const lines = [...SAFE, ...SAFE.slice(4)];
    const r = await analyze({ streams: [{ name: 'resent', stream: Readable.from([text(lines)]) }], duplicateWindowMs: 500 });
    expect(r.input.duplicates).toBe(1); // only the line within 500 ms of the newest
    const wide = await analyze({ streams: [{ name: 'resent', stream: Readable.from([text(lines)]) }], duplicateWindowMs: 5000 });
    expect(wide.input.duplicates).toBe(2);
    expect(wide.summary.verdict).toBe('verified');
  });
});

describe('the same file named twice is read once', () => {
  it('f, ./f, an absolute path and a symlink: one file, with sameAs and a note', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'f.ndjson'), text(SAFE));
    symlinkSync(join(dir, 'f.ndjson'), join(dir, 'link.ndjson'));
    const res = await runCli(['analyze', '-f', 'json', 'f.ndjson', './f.ndjson', resolve(dir, 'f.ndjson'), 'link.ndjson'], { cwd: dir });
    expect(res.code).toBe(0);
    const r = JSON.parse(res.stdout) as Report;
    expect(validateReport(r)).toBe(true);
    expect(r.input.files.map((f) => [f.file, f.sameAs, f.lines])).toEqual([
      ['f.ndjson', undefined, 6],
      ['./f.ndjson', 'f.ndjson', 0],
      [resolve(dir, 'f.ndjson'), 'f.ndjson', 0],
      ['link.ndjson', 'f.ndjson', 0],
    ]);
    expect(r.input).toMatchObject({ lines: 6, events: 6, duplicates: 0 });
    expect(res.stderr).toContain('./f.ndjson is the same file as f.ndjson: read once');
    const table = await runCli(['analyze', '-f', 'table', 'f.ndjson', 'link.ndjson'], { cwd: dir });
    expect(table.stdout).toContain('link.ndjson: the same file as f.ndjson, read once');
  });

  it('a copy of a file (another inode) is read, and its events are duplicates', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'f.ndjson'), text(SAFE));
    writeFileSync(join(dir, 'g.ndjson'), text(SAFE));
    const r = await analyze({ files: [join(dir, 'f.ndjson'), join(dir, 'g.ndjson')] });
    expect(r.input.files.map((f) => f.sameAs)).toEqual([undefined, undefined]);
    expect(r.input).toMatchObject({ lines: 12, events: 6, duplicates: 6 });
    const table = await runCli(['analyze', '-f', 'table', join(dir, 'f.ndjson'), join(dir, 'g.ndjson')]);
    expect(table.stdout).toContain('+ 6 duplicates');
  });
});

describe('many input files', () => {
  it('600 files (some gzip) are read with ulimit -n 256', () => {
    const dir = tmp();
    const names: string[] = [];
    for (let i = 0; i < 600; i++) {
      const lines = [
        JSON.stringify({ ts: 1_000_000 + i * 10, type: 'acquire', resource: `r${i}`, ownerId: 'w', leaseId: `l${i}`, fenceToken: 1, ttlMs: 1000 }),
        JSON.stringify({ ts: 1_000_001 + i * 10, type: 'write', resource: `r${i}`, ownerId: 'w', leaseId: `l${i}`, fenceToken: 1, result: 'accepted' }),
      ];
      const name = `f${String(i).padStart(3, '0')}.ndjson${i % 100 === 0 ? '.gz' : ''}`;
      writeFileSync(join(dir, name), i % 100 === 0 ? gzipSync(text(lines)) : text(lines));
      names.push(name);
    }
    const out = spawnSync('bash', ['-c', `ulimit -n 256 && exec "${process.execPath}" "${BIN}" analyze -f json --jobs 1 ${names.join(' ')}`], { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(out.stderr).not.toContain('EMFILE');
    expect(out.status).toBe(0);
    const r = JSON.parse(out.stdout) as Report;
    expect(r.input.files.filter((f) => f.error !== undefined)).toEqual([]);
    expect(r.input).toMatchObject({ lines: 1200, events: 1200, duplicates: 0 });
    expect(r.resources.length).toBe(600);
  }, 60_000);
});
