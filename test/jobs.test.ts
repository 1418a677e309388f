/**
 * `--jobs N` (README "Scaling out"): the partitions on worker threads of one run, merged in
 * memory, give the report of one thread byte for byte; live ndjson keeps streaming; auto stays on
 * one thread below its size; what jobs cannot do is refused clearly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import type { Finding } from '../src/model/report.js';
import { autoJobs, JOBS_MIN_BYTES } from '../src/partition/jobs.js';
import { Feeder, FedQueue, FEED_CHUNK, WINDOW, type FeedMessage } from '../src/partition/feed.js';
import { fileSource } from '../src/ingest/open.js';
import { canonical } from '../src/profiles/canonical.js';
import { gzipSync } from 'node:zlib';
import { renderJson } from '../src/report/json.js';
import { FIXTURES, runCli } from './helpers/run.js';

const mixed = join(FIXTURES, 'mixed-incidents.ndjson');

/** A live stream folded: the last line of each id, less the ids withdrawn. */
function fold(lines: Finding[], withdrawn: readonly string[] | undefined): Finding[] {
  const last = new Map<string, Finding>();
  for (const f of lines) {
    last.delete(f.id);
    last.set(f.id, f);
  }
  return [...last.values()].filter((f) => !(withdrawn ?? []).includes(f.id));
}

/** --jobs 2 with a live stream, in the library and the CLI: the report is one thread's (`one`), and the stream folds to its findings. */
async function liveEqualsOne(files: string[], one: string, check: (withdrawn: string[] | undefined, live: Finding[]) => void): Promise<void> {
  const live: Finding[] = [];
  const streamed = await analyze({ files, jobs: 2, onFinding: (f) => live.push(f) });
  const { withdrawn, ...rest } = streamed;
  expect(renderJson(rest as typeof streamed)).toBe(one);
  const sorted = (fs: Finding[]) => fs.map((f) => JSON.stringify(f)).sort();
  expect(sorted(fold(live, withdrawn))).toEqual(sorted(streamed.findings));
  check(withdrawn, live);
  const nd1 = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '1', ...files]);
  const nd2 = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '2', ...files]);
  expect(nd2.code).toBe(nd1.code);
  const lines = (t: string) => t.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const [l1, l2] = [lines(nd1.stdout), lines(nd2.stdout)];
  const [s1, s2] = [l1.pop()!, l2.pop()!];
  expect(s2.withdrawn).toEqual(withdrawn);
  delete s2.withdrawn;
  expect(s2).toEqual(s1);
  expect(sorted(fold(l2 as unknown as Finding[], withdrawn))).toEqual(sorted(l1 as unknown as Finding[]));
  expect(nd2.stderr).not.toMatch(/may differ from one run/);
}

describe('--jobs', () => {
  it('gives the report of one thread, byte for byte', async () => {
    const sets = [[mixed], [join(FIXTURES, 'invalid-lines.ndjson'), mixed], [join(FIXTURES, 'rule-clock-went-backwards.ndjson')], [join(FIXTURES, 'views.ndjson')]];
    for (const files of sets) {
      const one = renderJson(await analyze({ files, jobs: 1 }));
      for (const jobs of [2, 3]) expect(renderJson(await analyze({ files, jobs })), `${files.join(' ')} --jobs ${jobs}`).toBe(one);
      const html = { files, timelines: { all: true } };
      expect(renderJson(await analyze({ ...html, jobs: 2 }))).toBe(renderJson(await analyze({ ...html, jobs: 1 })));
    }
  }, 60_000);

  it('in the CLI, every format; live ndjson streams each finding as its partition has it', async () => {
    for (const f of ['json', 'markdown', 'junit', 'table']) {
      const one = await runCli(['analyze', '-q', '-f', f, '--jobs', '1', mixed]);
      const two = await runCli(['analyze', '-q', '-f', f, '--jobs', '2', mixed]);
      expect(two.stdout, f).toBe(one.stdout);
      expect(two.code).toBe(one.code);
    }
    const one = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '1', mixed]);
    const two = await runCli(['analyze', '-q', '-f', 'ndjson', '--jobs', '2', mixed]);
    const lines = (t: string) => t.trim().split('\n');
    // The same finding lines (in the order their partitions had them), the same summary line last.
    expect(lines(two.stdout).slice(0, -1).sort()).toEqual(lines(one.stdout).slice(0, -1).sort());
    expect(lines(two.stdout).at(-1)).toBe(lines(one.stdout).at(-1));
    expect(two.code).toBe(one.code);
    const live: Finding[] = [];
    const report = await analyze({ files: [mixed], jobs: 3, onFinding: (f) => live.push(f) });
    expect(live.map((f) => f.id).sort()).toEqual(report.findings.map((f) => f.id).sort());
  }, 60_000);

  it('the one reader: every kind of line and input, over chunk boundaries, with evidence read back, gives one thread\'s report', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-feed-'));
    try {
      const ev = (s: number, r: string, type: string, extra = '') => `{"ts":"2026-03-01T10:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.${String(s % 1000).padStart(3, '0')}Z","type":"${type}","resource":"${r}","ownerId":"w${s % 3}","leaseId":"l-${r}-${Math.floor(s / 7)}","fenceToken":"${Math.floor(s / 7)}"${extra}}`;
      const lines: string[] = ['', '   ', '\ufeff'];
      for (let s = 0; s < 12_000; s++) {
        const r = `res-${s % 97}`;
        const k = s % 50;
        if (k === 0) lines.push('');
        else if (k === 1) lines.push('{"ts":"2026-03-01T10:00:00Z","type":"grab","resource":"' + r + '"}'); // invalid, key read
        else if (k === 2) lines.push('not json at all');
        else if (k === 3) lines.push(ev(s, r.replace('-', '\\u002d'), 'write', ',"result":"accepted"')); // escaped key: read, or declined
        else if (k === 4) lines.push(ev(s, r, 'write', ',"result":"accepted","resource":"' + r + '"')); // key written twice: declined
        else if (k === 5) lines.push(ev(s, r, 'write', ',"result":"accepted","msg":"' + 'x'.repeat(3000) + '"'));
        else lines.push(ev(s, r, s % 7 === 0 ? 'acquire' : 'write', s % 7 === 0 ? ',"ttlMs":5000' : ',"result":"accepted"'));
      }
      const plain = join(dir, 'plain.ndjson');
      writeFileSync(plain, lines.join('\r\n') + '\n' + ev(99_999, 'res-1', 'write', ',"result":"accepted"')); // CRLF, no newline at the end
      const gz = join(dir, 'other.ndjson.gz');
      writeFileSync(gz, gzipSync(lines.slice(0, 3000).map((l) => l.replace(/res-/g, 'gz-')).join('\n') + '\n'));
      const wrapped = join(FIXTURES, 'wrappers', 'cri-partial.log');
      const runs: [string[], object, number[]][] = [
        [[plain], {}, [2, 3]],
        [[plain], { timelines: { all: true, maxResources: 5 } }, [2]],
        [[plain], { maxLineBytes: 2000 }, [3]],
        // A gzip file and a container log are read by each job itself, beside the fed ones; the same file twice is read once.
        [[plain, gz, wrapped, plain], {}, [2]],
      ];
      for (const [files, extra, jobsList] of runs) {
        const one = renderJson(await analyze({ files, jobs: 1, ...extra }));
        for (const jobs of jobsList) expect(renderJson(await analyze({ files, jobs, ...extra })), `${files.length} files, ${JSON.stringify(extra)}, --jobs ${jobs}`).toBe(one);
      }
      // Evidence from the fed file is read back from it (by offset and bytes), as on one thread.
      const report = await analyze({ files: [plain], jobs: 2, rules: ['accepted-stale-write', 'unknown-token'] });
      expect(report.findings.length).toBeGreaterThan(0);
      const evidence = report.findings.flatMap((f) => f.evidence);
      expect(evidence.every((e) => e.file === plain && e.ownerId !== undefined && !('unavailable' in e))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('the one reader never runs ahead of a job: at most WINDOW batches of an input in flight, shared by every job', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-feed-'));
    try {
      const f = join(dir, 'big.ndjson');
      const line = (i: number) => `{"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r${i % 50}","result":"accepted","msg":"${'y'.repeat(200)}"}`;
      const count = 100_000;
      writeFileSync(f, Array.from({ length: count }, (_, i) => line(i)).join('\n') + '\n'); // about 23 MB: 23 chunks, more than WINDOW + 1
      const sent: FeedMessage[][] = [[], []];
      const feeder = new Feeder({ files: [f], profile: canonical, jobs: 2, reopen: false, post: (j, m) => sent[j]!.push(m) });
      const done = feeder.run();
      const batches = (j: number) => sent[j]!.filter((m) => m.kind === 'feed').length;
      // Until the reader stops sending (it reads a chunk in a few ms; a busy machine is slower).
      const settled = async () => {
        for (let last = -1, k = 0; k < 100 && batches(0) !== last; k++) {
          last = batches(0);
          await new Promise((r) => setTimeout(r, 200));
        }
      };
      await settled();
      expect(batches(0)).toBe(WINDOW);
      expect(batches(1)).toBe(WINDOW);
      // Job 0 takes all it has; job 1 takes nothing: the reader waits for the slower one.
      for (let k = 0; k < WINDOW; k++) feeder.ack(0, 0);
      await settled();
      expect(batches(0)).toBe(WINDOW);
      feeder.ack(1, 0);
      await settled();
      expect(batches(0)).toBe(WINDOW + 1);
      expect(batches(1)).toBe(WINDOW + 1);
      const acked = [WINDOW, 1];
      while (!sent[0]!.some((m) => m.kind === 'feed-end')) {
        for (const j of [0, 1]) for (; acked[j]! < batches(j); acked[j]!++) feeder.ack(j, 0);
        await new Promise((r) => setTimeout(r, 20));
      }
      await done;
      const feeds = (j: number) => sent[j]!.flatMap((m) => (m.kind === 'feed' ? [m.batch] : []));
      // Both jobs get the same batches, in shared memory (copied once, not per job), with every line.
      expect(feeds(1)).toEqual(feeds(0));
      expect(feeds(0).every((b, k) => b === feeds(1)[k] && b.chunk.buffer instanceof SharedArrayBuffer && b.looks.buffer instanceof SharedArrayBuffer)).toBe(true);
      let seen = 0;
      const parts = new Set<number>();
      for (const b of feeds(0)) {
        const texts = new Map(b.texts ?? []);
        const chunk = Buffer.from(b.chunk.buffer, b.chunk.byteOffset, b.chunk.byteLength);
        for (let i = 0; i < b.n; i++) {
          // A line over a chunk boundary goes decoded; every other line is in the chunk, and the key reader read its partition.
          const text = texts.has(i) ? texts.get(i) : chunk.toString('utf8', b.starts[i], b.ends[i]);
          expect(text).toBe(line(b.firstLine - 1 + i));
          if (!texts.has(i)) parts.add(b.looks[i]!);
          seen++;
        }
      }
      expect(seen).toBe(count);
      expect([...parts].sort()).toEqual([0, 1]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('reads the fed input into shared memory and hands the jobs its chunks without a copy; gzip and errors as before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-jobs-shared-'));
    try {
      const f = join(dir, 'a.ndjson');
      const text = Array.from({ length: 3000 }, (_, i) => `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r${i}","fenceToken":"1"}`).join('\n') + '\n';
      writeFileSync(f, text);
      const read = async (path: string, options: Parameters<typeof fileSource>[1]) => {
        const chunks: Buffer[] = [];
        for await (const c of fileSource(path, options).open()) chunks.push(c);
        return chunks;
      };
      const shared = await read(f, { chunkBytes: 64 * 1024, shared: true });
      expect(shared.length).toBeGreaterThan(2);
      expect(shared.every((c) => c.buffer instanceof SharedArrayBuffer)).toBe(true);
      expect(Buffer.concat(shared).toString()).toBe(text);
      const gz = join(dir, 'a.ndjson.gz');
      writeFileSync(gz, gzipSync(text));
      expect(Buffer.concat(await read(gz, { shared: true })).toString()).toBe(text);
      await expect(read(dir, { shared: true })).rejects.toThrow(/is a directory/);
      await expect(read(join(dir, 'none'), { shared: true })).rejects.toThrow(/cannot read .*none/);
      // The reader's batches are views of those chunks, every job's the same.
      const sent: FeedMessage[][] = [[], []];
      const feeder = new Feeder({ files: [f], profile: canonical, jobs: 2, reopen: false, post: (j, m) => sent[j]!.push(m) });
      await feeder.run();
      const batch = sent[0]!.find((m) => m.kind === 'feed')!.batch;
      expect(batch.chunk.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(batch.chunk.buffer.byteLength).toBeGreaterThanOrEqual(FEED_CHUNK);
      expect(feeder.ackEvery).toBe(WINDOW / 4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a job acknowledges every few batches, all of them once', async () => {
    const acks: number[] = [];
    const q = new FedQueue((n) => acks.push(n), 4);
    const batch = { firstLine: 1, n: 0, chunk: new Uint8Array(0), starts: new Int32Array(0), ends: new Int32Array(0), looks: new Int32Array(0), lookTs: new Float64Array(0), lookSource: new Int32Array(0), lookSources: [] };
    for (let k = 0; k < 10; k++) q.push({ kind: 'feed', file: 0, batch });
    q.push({ kind: 'feed-end', file: 0 });
    let items = 0;
    for await (const _ of q) items++;
    expect(items).toBe(11);
    expect(acks).toEqual([4, 4]);
  });

  it('tells the wrapper of an input as one thread does, whatever its first chunk holds', async () => {
    // The wrapper is told from the first eight lines, whatever chunks they are read in: one
    // thread's first 256 KiB batch holds only line 1, a CRI line, and the reader's first 1 MiB
    // holds eight lines. Most of them are plain: no wrapper, line 1 is invalid, in both.
    const dir = mkdtempSync(join(tmpdir(), 'sw-jobs-wrap-'));
    try {
      const ev = (s: number, msg: number) => JSON.stringify({ ts: `2026-03-01T10:00:0${s}.000Z`, type: 'write', resource: `r${s}`, ownerId: 'w', leaseId: 'l', fenceToken: '1', result: 'accepted', msg: 'x'.repeat(msg) });
      const f = join(dir, 'w.log');
      writeFileSync(f, [`2026-03-01T10:00:00.000000000Z stdout F ${ev(0, 200_000)}`, ...Array.from({ length: 8 }, (_, i) => ev(i + 1, 110_000))].join('\n') + '\n');
      const one = await analyze({ files: [f], jobs: 1 });
      expect(one.input.files[0]!.wrapper).toBeUndefined();
      expect(one.input.events).toBe(8);
      expect(one.input.problems.map((p) => p.line)).toEqual([1]);
      expect(renderJson(await analyze({ files: [f], jobs: 2 }))).toBe(renderJson(one));
      // Most of the first eight wrapped: CRI, in both.
      writeFileSync(f, [...Array.from({ length: 5 }, (_, i) => `2026-03-01T10:00:0${i}.000000000Z stdout F ${ev(i, 200_000)}`), ...Array.from({ length: 4 }, (_, i) => ev(i + 5, 110_000))].join('\n') + '\n');
      const cri = await analyze({ files: [f], jobs: 1 });
      expect(cri.input.files[0]!.wrapper).toBe('cri');
      expect(cri.input.events).toBe(9);
      expect(renderJson(await analyze({ files: [f], jobs: 2 }))).toBe(renderJson(cri));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('analyses again on one thread when the merge is not exactly one run (input out of order), a live stream too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-jobs-'));
    try {
      // An invalid line far ahead in time in one input, read by the key reader: the witness flags it.
      const a = join(dir, 'a.ndjson');
      const b = join(dir, 'b.ndjson');
      const ev = (ts: string, resource: string, extra = '') => `{"ts":"2026-03-01T10:00:${ts}Z","type":"acquire","resource":"${resource}","ownerId":"w","leaseId":"l-${resource}","fenceToken":"1"${extra}}`;
      writeFileSync(a, [ev('01', 'r1'), '{"ts":"2026-03-01T10:00:59Z","type":"grab","resource":"r2"}', ev('02', 'r1'), ev('03', 'r3')].join('\n') + '\n');
      writeFileSync(b, [ev('30', 'r4'), ev('31', 'r5')].join('\n') + '\n');
      const files = [a, b];
      const parts = [];
      for (let i = 0; i < 2; i++) parts.push(await analyze({ files, partition: { index: i, count: 2 } }));
      expect(parts.some((p) => p.partition!.inexact.length > 0)).toBe(true);
      const one = renderJson(await analyze({ files, jobs: 1 }));
      expect(renderJson(await analyze({ files, jobs: 2 }))).toBe(one);
      expect(JSON.parse(one).partitions).toBeUndefined();
      // A live stream too (it used to end with the flagged merge, exit 3): the one thread's report;
      // the stream folded (a later line of an id replaces an earlier one; the ids in `withdrawn`
      // dropped) is its findings. Here a job streams a clock step through another partition's
      // invalid line, which one thread does not see: withdrawn.
      await liveEqualsOne(files, one, (withdrawn, live) => expect(withdrawn).toEqual(live.filter((f) => f.rule === 'clock-went-backwards').map((f) => f.id)));
      // With a real step as well, one thread has a finding of the same id (clock-went-backwards,
      // r1, its first) with other text: streamed again, replacing the job's; nothing withdrawn.
      writeFileSync(a, [ev('01', 'r1'), '{"ts":"2026-03-01T10:00:59Z","type":"grab","resource":"r2"}', ev('02', 'r1'), ev('03', 'r3'), ev('20', 'r1'), ev('10', 'r1')].join('\n') + '\n');
      const one2 = renderJson(await analyze({ files, jobs: 1 }));
      await liveEqualsOne(files, one2, (withdrawn, live) => {
        expect(withdrawn).toBeUndefined();
        const ids = live.map((f) => f.id);
        expect(new Set(ids).size).toBeLessThan(ids.length); // one id streamed twice
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('auto uses every core (at most 8) from JOBS_MIN_BYTES on and from 3 cores on, one thread otherwise', () => {
    expect(autoJobs(JOBS_MIN_BYTES - 1, 16)).toBe(1);
    expect(autoJobs(JOBS_MIN_BYTES, 2)).toBe(1);
    expect(autoJobs(JOBS_MIN_BYTES, 3)).toBe(3);
    expect(autoJobs(JOBS_MIN_BYTES, 16)).toBe(8);
    expect(autoJobs(JOBS_MIN_BYTES)).toBe(availableParallelism() >= 3 ? Math.min(8, availableParallelism()) : 1);
  });

  it('says what it cannot run on jobs, and that --workers was replaced', async () => {
    await expect(analyze({ files: ['-'], jobs: 2 })).rejects.toThrow(/stdin/);
    await expect(analyze({ files: [mixed], jobs: 2, strict: true })).rejects.toThrow(/strict and maxInvalid/);
    await expect(analyze({ files: [mixed], jobs: 0 })).rejects.toThrow(/jobs must be/);
    expect((await runCli(['analyze', '--jobs', '2', '-'], { stdin: readFileSync(mixed) })).stderr).toMatch(/stdin/);
    expect((await runCli(['analyze', '--jobs', 'many', mixed])).stderr).toMatch(/--jobs "many" is not auto or a whole number/);
    const w = await runCli(['analyze', '--workers', 'on', mixed]);
    expect(w.code).toBe(2);
    expect(w.stderr).toMatch(/--workers was replaced by --jobs/);
    // A missing file: the same one line as on one thread.
    const missing = await runCli(['analyze', '--jobs', '2', join(FIXTURES, 'no-such.ndjson')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^stalewrite: cannot read .*no-such\.ndjson/);
  }, 60_000);
});
