/**
 * Parsing on worker threads (src/ingest/parse-worker.ts, handover.ts) must not change a result:
 * every fixture, each way, gives the same report; so do the edge cases of the hand-over (tokens
 * above 2^53, non-ASCII and lone-surrogate strings, records that are not JSON lines, gzip, a
 * truncated gzip, invalid lines under --strict), and the progress reports still come.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { getProfile, loadMapping } from '../src/profiles/index.js';
import { StrictInputError } from '../src/ingest/records.js';
import { spawnSync } from 'node:child_process';
import { FIXTURES, ROOT, runCli } from './helpers/run.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'stalewrite-workers-'));

async function both(options: AnalyzeOptions): Promise<{ off: string; on: string }> {
  const off = JSON.stringify(await analyze({ ...options, workers: 'off' }));
  const on = JSON.stringify(await analyze({ ...options, workers: 'on' }));
  return { off, on };
}

/** Inputs of the fixtures: one .ndjson/.jsonl/.log file, or every file of a case directory. */
function cases(dir: string): string[][] {
  const out: string[][] = [];
  const names = readdirSync(dir);
  const inputs = names.filter((n) => /\.(ndjson|jsonl|log)$/.test(n)).map((n) => join(dir, n));
  if (names.includes('expect.json')) out.push(inputs);
  else for (const f of inputs) out.push([f]);
  for (const n of names) if (statSync(join(dir, n)).isDirectory()) out.push(...cases(join(dir, n)));
  return out;
}

describe('parsing on worker threads', () => {
  it('gives the same report as the main thread on every fixture', async () => {
    const all = cases(FIXTURES);
    expect(all.length).toBeGreaterThan(50);
    for (const files of all) {
      const mapping = join(files[0]!, '..', 'mapping.json');
      const profile = files[0]!.includes('mapping-readme') ? loadMapping(mapping) : getProfile('auto');
      const { off, on } = await both({ files, profile, timelines: { all: true } });
      expect(on, files.join(' ')).toBe(off);
    }
  }, 120_000);

  it('hands over big tokens, non-ASCII and lone surrogates, other sources and results exactly', async () => {
    const dir = tmp();
    const lines = [
      '{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"ключ-\\ud800-✓","ownerId":"wörker 𝔸","leaseId":"L1","fenceToken":"123456789012345678901234567890","ttlMs":500,"source":"host-b"}',
      '{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"ключ-\\ud800-✓","ownerId":"wörker 𝔸","leaseId":"L1","fenceToken":"123456789012345678901234567890","result":"accepted","value":"\\"quoted\\" \\u0001"}',
      '{"ts":"2026-03-01T10:00:02Z","type":"acquire","resource":"ключ-\\ud800-✓","ownerId":"B","leaseId":"L2","fenceToken":123456789012345678901234567891,"observer":"worker"}',
      '{"ts":"2026-03-01T10:00:03Z","type":"write","resource":"ключ-\\ud800-✓","ownerId":"wörker 𝔸","leaseId":"L1","fenceToken":"123456789012345678901234567890","result":"accepted","operationId":"op-1"}',
      'not json',
      '',
      '{"ts":1772359204000,"type":"release","resource":"r2","result":"rejected","source":"host-b"}',
    ];
    writeFileSync(join(dir, 'edge.ndjson'), lines.join('\n') + '\n');
    const { off, on } = await both({ files: [join(dir, 'edge.ndjson')] });
    expect(on).toBe(off);
    expect(JSON.parse(on).findings.length).toBeGreaterThan(0);
    // logfmt records are not JSON lines: they travel as records.
    writeFileSync(join(dir, 'a.logfmt'), 'time=2026-03-01T10:00:00Z msg="lock acquired" resource=r owner=A lease=L1 fence=1\ntime=2026-03-01T10:00:01Z msg="write" resource=r owner=A lease=L1 fence=1 rowCount=1 value=x\n');
    const logfmt = await both({ files: [join(dir, 'a.logfmt')], profile: getProfile('logfmt') });
    expect(logfmt.on).toBe(logfmt.off);
    expect(JSON.parse(logfmt.on).input.events).toBe(2);
  });

  it('reads gzip, reports a truncated one the same way, and stops at the same line under --strict', async () => {
    const dir = tmp();
    const text = readFileSync(join(FIXTURES, 'mixed-incidents.ndjson'));
    writeFileSync(join(dir, 'm.ndjson.gz'), gzipSync(text));
    const gz = await both({ files: [join(dir, 'm.ndjson.gz')] });
    expect(gz.on).toBe(gz.off);
    const cut = gzipSync(text);
    writeFileSync(join(dir, 'cut.ndjson.gz'), cut.subarray(0, Math.floor(cut.length * 0.6)));
    const truncated = await both({ files: [join(dir, 'cut.ndjson.gz')] });
    expect(truncated.on).toBe(truncated.off);
    expect(JSON.parse(truncated.on).input.files[0].error).toMatch(/decompress/);

    const invalid = join(FIXTURES, 'invalid-lines.ndjson');
    const errors: string[] = [];
    for (const workers of ['off', 'on'] as const) {
      await expect(analyze({ files: [invalid], strict: true, workers })).rejects.toBeInstanceOf(StrictInputError);
      errors.push(await analyze({ files: [invalid], strict: true, workers }).catch((e: Error) => e.message));
    }
    expect(errors[1]).toBe(errors[0]);
    const limited = await both({ files: [invalid], maxProblems: 2 });
    expect(limited.on).toBe(limited.off);
  });

  it('ends every worker when another input stops the run (--strict), so the process exits', async () => {
    const dir = tmp();
    const line = (i: number) => JSON.stringify({ ts: 1772359200000 + i, type: 'write', resource: `r${i % 100}`, result: 'accepted', fenceToken: String(i) });
    writeFileSync(join(dir, 'big.ndjson'), Array.from({ length: 20000 }, (_, i) => line(i)).join('\n') + '\n');
    writeFileSync(join(dir, 'bad.ndjson'), `${line(1)}\nnot json\n`);
    const started = Date.now();
    // The library's parse threads (the CLI's --workers was replaced by --jobs), in a process of its own.
    const script = `import(${JSON.stringify(join(ROOT, 'dist', 'analyze.js'))}).then((m) => m.analyze({ files: ${JSON.stringify([join(dir, 'big.ndjson'), join(dir, 'bad.ndjson')])}, workers: 'on', strict: true })).then(() => process.exit(0), (e) => { console.error(e.message); process.exitCode = 2; })`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 25_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/bad\.ndjson:2: not valid JSON/);
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);

  it('still reports progress, per batch', async () => {
    const seen: number[] = [];
    await analyze({ files: [join(FIXTURES, 'mixed-incidents.ndjson')], workers: 'on', onProgress: (p) => seen.push(p.lines) });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[seen.length - 1]).toBe(readFileSync(join(FIXTURES, 'mixed-incidents.ndjson'), 'utf8').split('\n').length - 1);
  });
});
