/**
 * Prefold (PartitionFilter.prefold, README "Scaling out"): with one input, a partition run looks
 * at a batch's lines first and only counts, in their place, the other partitions' lines that fold()
 * would fold, without making them placeholders. It must keep exactly the items fold() keeps: every
 * partition report is the one it writes without prefolding, byte for byte, with as many lines
 * folded in all, on every fixture, on random histories, and on a generated log of several chunks
 * with clock domains, steps back in time, blank, invalid, declined and over-long lines.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import { folding } from '../src/ingest/partition.js';
import { mergeReports } from '../src/partition/merge.js';
import type { Report } from '../src/model/report.js';
import { renderJson } from '../src/report/json.js';
import { historyArb } from './helpers/histories.js';
import { FIXTURES } from './helpers/run.js';

/** Partition `i` of `n` with and without prefolding: both reports, and the lines each folded and prefolded. */
async function both(options: AnalyzeOptions, i: number, n: number): Promise<{ on: string; off: string; foldedOn: number; foldedOff: number; prefolded: number; report: Report }> {
  const f0 = folding.folded;
  const p0 = folding.prefolded;
  const report = await analyze({ ...options, partition: { index: i, count: n } });
  const on = renderJson(report);
  const foldedOn = folding.folded - f0;
  const prefolded = folding.prefolded - p0;
  folding.prefold = false;
  try {
    const f1 = folding.folded;
    const off = renderJson(await analyze({ ...options, partition: { index: i, count: n } }));
    expect(folding.prefolded - p0).toBe(prefolded);
    return { on, off, foldedOn, foldedOff: folding.folded - f1, prefolded, report };
  } finally {
    folding.prefold = true;
  }
}

/** Asserts prefold changes nothing for every partition of `n`; returns the lines prefolded. */
async function same(options: AnalyzeOptions, n: number): Promise<number> {
  let prefolded = 0;
  for (let i = 0; i < n; i++) {
    const r = await both(options, i, n);
    expect(r.on).toBe(r.off);
    // The same items kept: as many lines folded, of which some never became placeholders.
    expect(r.foldedOn).toBe(r.foldedOff);
    prefolded += r.prefolded;
  }
  return prefolded;
}

/** Runs `fn` in a fresh temporary directory, removed afterwards. */
async function inDir(prefix: string, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A canonical line. */
function line(ts: number, resource: string, type: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ ts: new Date(ts).toISOString(), type, resource, ownerId: 'w-1', leaseId: `l-${resource}`, ...extra });
}

describe('prefold keeps the items fold() keeps', () => {
  it('on every fixture', async () => {
    let prefolded = 0;
    for (const c of findCases([FIXTURES])) {
      if (c.files.length !== 1) continue;
      const options = { files: c.files, ...analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined) };
      for (const n of [2, 3]) prefolded += await same(options, n);
    }
    expect(prefolded).toBeGreaterThan(0);
  }, 120_000);

  it('on random histories of one input', () =>
    inDir('sw-prefold-', async (dir) => {
      let run = 0;
      let prefolded = 0;
      await fc.assert(
        fc.asyncProperty(historyArb({ inputs: 1 }), fc.integer({ min: 2, max: 5 }), fc.constantFrom(undefined, 0, 500), fc.constantFrom(undefined, 3), async (h, n, clockSkewMs, maxResources) => {
          const file = join(dir, `${run++}.ndjson`);
          writeFileSync(file, h.files.flatMap((f) => f.lines).join('\n') + '\n');
          prefolded += await same({ files: [file], busyWindowMs: 4000, clockSkewMs, maxResources }, n);
        }),
        { seed: 5151, numRuns: 80 },
      );
      expect(prefolded).toBeGreaterThan(100);
    }), 300_000);

  it('on a log of several chunks: clock domains, steps back, blank, invalid, declined and over-long lines', () =>
    inDir('sw-prefold-big-', async (dir) => {
      const lines: string[] = [];
      let t = Date.UTC(2026, 2, 1);
      let x = 7;
      const rand = (m: number) => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return x % m;
      };
      for (let k = 0; k < 9000; k++) {
        t += rand(5);
        const r = `res-${rand(60)}`;
        const kind = rand(200);
        const source = rand(4) === 0 ? { source: `host-${rand(3)}` } : {};
        if (kind === 0) lines.push('');
        else if (kind === 1) lines.push('{"ts": not json');
        else if (kind === 2) lines.push(`{"resourc\\u0065":"${r}","ts":"${new Date(t).toISOString()}","type":"acquire","fenceToken":"1"}`); // declined: an escaped key
        else if (kind === 3) lines.push(line(t - 2000, r, 'write', { result: 'accepted', fenceToken: String(k), ...source })); // a step back
        else if (kind === 4) lines.push(line(t, r, 'write', { result: 'accepted', msg: 'x'.repeat(300) }));
        else if (kind === 5) lines.push(line(t, r, 'noise')); // ignored or invalid, its partition's
        else lines.push(line(t, r, ['acquire', 'keepalive', 'release'][rand(3)]!, { fenceToken: String(1 + rand(9)), ...source }));
      }
      const file = join(dir, 'log.ndjson');
      // Over 256 KiB (lines across read chunks), with a line over --max-line-bytes.
      writeFileSync(file, lines.slice(0, 4000).join('\n') + '\n' + `{"msg":"${'y'.repeat(2000)}"}\n` + lines.slice(4000).join('\n') + '\n');
      for (const maxLineBytes of [undefined, 1000]) {
        const options: AnalyzeOptions = { files: [file], maxLineBytes };
        let prefolded = 0;
        for (const n of [2, 4, 7]) prefolded += await same(options, n);
        expect(prefolded).toBeGreaterThan(5000);
        // And their merge is the single run's (or says where it may differ, as without prefold).
        const parts: Report[] = [];
        for (let i = 0; i < 4; i++) parts.push(JSON.parse(renderJson(await analyze({ ...options, partition: { index: i, count: 4 } }))) as Report);
        const merged = mergeReports(parts);
        if (merged.partitions === undefined) expect(renderJson(merged)).toBe(renderJson(await analyze(options)));
      }
    }), 120_000);
});
