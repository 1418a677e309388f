/**
 * `stalewrite merge` (README "Scaling out"): the reports of the N partitions of a run merge into
 * exactly the report of the single run (every fixture, N = 1, 2, 3, 7, every format, the global
 * bounds applied again, random histories), and sets that are not one run's are refused.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import type { Report } from '../src/model/report.js';
import { MergeError, mergeReports } from '../src/partition/merge.js';
import { folding } from '../src/ingest/partition.js';
import { renderJson } from '../src/report/json.js';
import { renderHtml } from '../src/report/html.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { renderJunit } from '../src/report/junit.js';
import { renderGithub } from '../src/report/github.js';
import { renderTable } from '../src/report/table.js';
import { findingLine, summaryLine } from '../src/report/ndjson.js';
import { DEFAULT_POLICY, exitCodeFor } from '../src/model/policy.js';
import { historyArb } from './helpers/histories.js';
import { loadMapping } from '../src/profiles/mapping.js';
import { FIXTURES, runCli } from './helpers/run.js';

/** The partition reports of a run, each through its JSON text (as merge reads them from files). */
async function partitionsOf(options: AnalyzeOptions, n: number): Promise<Report[]> {
  const out: Report[] = [];
  for (let i = 0; i < n; i++) out.push(JSON.parse(renderJson(await analyze({ ...options, partition: { index: i, count: n } }))) as Report);
  return out;
}

/** Every format's text of a report. */
function formats(r: Report): Record<string, string> {
  return {
    json: renderJson(r),
    markdown: renderMarkdown(r),
    junit: renderJunit(r, DEFAULT_POLICY),
    github: renderGithub(r),
    table: renderTable(r, { color: false }),
    ndjson: r.findings.map(findingLine).join('') + summaryLine(r),
  };
}

const cases = findCases([FIXTURES]);

describe('merge = single run', () => {
  it.each(cases.map((c) => [c.name.slice(FIXTURES.length + 1), c] as const))('%s, N = 1, 2, 3, 7, and --jobs 2', async (_name, c) => {
    const options = { files: c.files, ...analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined) };
    const single = await analyze(options);
    const singleText = formats(single);
    for (const n of [1, 2, 3, 7]) {
      const parts = await partitionsOf(options, n);
      // In any order.
      const merged = mergeReports([...parts].reverse());
      expect(merged.partitions, `N=${n}`).toBeUndefined();
      expect(renderJson(merged), `N=${n}`).toBe(singleText.json);
      if (n === 3) expect(formats(merged)).toEqual(singleText);
      expect(exitCodeFor(merged, DEFAULT_POLICY)).toBe(exitCodeFor(single, DEFAULT_POLICY));
    }
    // --jobs 2: two partitions on threads, merged in memory: the same report in every format.
    const onJobs = await analyze({ ...options, jobs: 2 });
    expect(formats(onJobs)).toEqual(singleText);
    expect(exitCodeFor(onJobs, DEFAULT_POLICY)).toBe(exitCodeFor(single, DEFAULT_POLICY));
    // html draws timelines: the partitions capture them (--with-timelines).
    const tl = { ...options, timelines: { all: true, maxResources: 3 } };
    const html = renderHtml(await analyze(tl));
    expect(renderHtml(mergeReports(await partitionsOf(tl, 3)))).toBe(html);
    expect(renderHtml(await analyze({ ...tl, jobs: 2 }))).toBe(html);
  }, 60_000);
});

describe('merge applies the global bounds again', () => {
  const mixed = join(FIXTURES, 'mixed-incidents.ndjson');
  const invalid = join(FIXTURES, 'invalid-lines.ndjson');
  it.each([
    ['--max-findings 3', { files: [mixed], maxFindings: 3 }],
    ['--max-findings 0', { files: [mixed], maxFindings: 0 }],
    ['--max-problems 2', { files: [invalid, mixed], maxProblems: 2 }],
    ['--max-problems 0', { files: [invalid], maxProblems: 0 }],
    ['html --max-drawn 2', { files: [mixed], timelines: { maxResources: 2 } }],
    ['html --all-resources --max-drawn 4', { files: [mixed, invalid], timelines: { all: true, maxResources: 4 } }],
    ['--rule', { files: [mixed], rules: ['accepted-stale-write', 'missing-token'] }],
  ] as [string, AnalyzeOptions][])('%s', async (_name, options) => {
    const single = renderJson(await analyze(options));
    for (const n of [2, 5]) expect(renderJson(mergeReports(await partitionsOf(options, n)))).toBe(single);
  });

  it('says when the resources of all partitions pass --max-resources, and the CLI exits 2 as a single run does', async () => {
    const options = { files: [mixed], maxResources: 3 };
    const merged = mergeReports(await partitionsOf(options, 4));
    expect(merged.partitions?.inexact.join(' ')).toMatch(/more than --max-resources 3/);
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-'));
    try {
      const names = [];
      for (let i = 0; i < 4; i++) {
        const name = join(dir, `p${i}.json`);
        const r = await runCli(['analyze', '-q', '--max-resources', '3', '--partition', `${i}/4`, '-o', name, mixed]);
        expect(r.code).toBe(0);
        names.push(name);
      }
      const m = await runCli(['merge', ...names]);
      expect(m.code).toBe(2);
      expect(m.stderr).toMatch(/may differ from one run's: .*--max-resources/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists the problems of a path named twice once, as the single run does (read once)', async () => {
    // The second name of one file (`sameAs`) has no lines of its own: its problems are the first's.
    for (const options of [{ files: [invalid, invalid] }, { files: [invalid, mixed, invalid], maxProblems: 3 }] as AnalyzeOptions[]) {
      const single = await analyze(options);
      expect(single.input.problems.length).toBeGreaterThan(0);
      const merged = mergeReports(await partitionsOf(options, 2));
      expect(merged.input.problemsOmitted).toBe(single.input.problemsOmitted);
      expect(renderJson(merged)).toBe(renderJson(single));
    }
  });

  it('lists problems in line order when a container log\'s partial line is judged after the lines below it', async () => {
    // Line 1 is the first piece of a partial docker line, joined and judged at its last piece
    // (line 3), after line 2 of the other stream: the list is by line, whatever the pieces.
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-joined-'));
    try {
      const file = join(dir, 'docker.log');
      const time = '2026-03-01T10:00:00.000000000Z';
      const piece = (log: string, stream: string) => JSON.stringify({ log, stream, time });
      writeFileSync(file, [piece('{"ts":"bad",', 'stdout'), piece('not json\n', 'stderr'), piece('"type":"write"}\n', 'stdout'), piece('{"ts":"2026-03-01T10:00:01Z","type":"grab","resource":"r"}\n', 'stdout')].join('\n') + '\n');
      for (const maxProblems of [undefined, 1, 2]) {
        const options: AnalyzeOptions = { files: [file], maxProblems };
        const single = await analyze(options);
        expect(single.input.files[0]!.wrapper).toBe('docker');
        expect(single.input.problems.map((p) => p.line)).toEqual([1, 2, 4].slice(0, maxProblems ?? 3));
        for (const n of [2, 3]) expect(renderJson(mergeReports(await partitionsOf(options, n)))).toBe(renderJson(single));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops as a single run would with --strict and --max-invalid', async () => {
    await expect(async () => mergeReports(await partitionsOf({ files: [invalid], maxInvalid: 5, strict: false }, 1))).rejects.toThrow(/more than 5 invalid lines/);
  });
});

describe('lease-scoped events and clock-went-backwards', () => {
  // A session expiry names no resource: the rule sees it through its copies on the resources
  // holding the session, under the first of them in a single run; a partition sees it under its
  // own first holder, or not at all. Where that could change a step, the merge says so.
  it('a step back at a lease-scoped event is flagged, not reported twice; in order, the merge is exact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-scoped-'));
    try {
      const mapping = join(dir, 'm.json');
      writeFileSync(mapping, JSON.stringify({
        fields: { ts: 'time', resource: 'key', leaseId: 'session', ownerId: 'who', fenceToken: 'rev', source: 'hostname' },
        match: [
          { when: { event: 'session-expired' }, type: 'expire', scope: 'lease' },
          { when: { event: 'acquired' }, type: 'acquire' },
          { when: { event: 'put' }, type: 'write', set: { result: 'accepted' } },
        ],
      }));
      const profile = loadMapping(mapping);
      const t0 = Date.UTC(2026, 2, 1, 10);
      const line = (ms: number, rec: Record<string, unknown>) => JSON.stringify({ time: t0 + ms, hostname: 'db', ...rec });
      // `a` and `orders/42` are in partitions 0 and 1 of 2 (README test vectors).
      const log = (expiryMs: number) => [
        line(1000, { event: 'acquired', key: 'a', session: 'S1', who: 'w1', rev: 1 }),
        line(1100, { event: 'acquired', key: 'orders/42', session: 'S1', who: 'w1', rev: 1 }),
        line(5000, { event: 'put', key: 'resource-7', who: 'w2', rev: 1 }),
        line(expiryMs, { event: 'session-expired', session: 'S1' }),
        line(7000, { event: 'put', key: 'a', who: 'w1', session: 'S1', rev: 1 }),
      ].join('\n') + '\n';
      const file = join(dir, 'zk.log');
      writeFileSync(file, log(2000));
      const options: AnalyzeOptions = { files: [file], profile };
      const single = await analyze(options);
      expect(single.findings.filter((f) => f.rule === 'clock-went-backwards').map((f) => f.resource)).toEqual(['a']);
      const merged = mergeReports(await partitionsOf(options, 2));
      expect(merged.partitions?.inexact.join(' ')).toMatch(/lease-scoped event .* goes back in time/);
      expect(exitCodeFor(merged, DEFAULT_POLICY)).toBe(exitCodeFor(single, DEFAULT_POLICY));
      expect(renderJson(await analyze({ ...options, jobs: 2 }))).toBe(renderJson(single));
      writeFileSync(file, log(6000));
      const ordered = await analyze(options);
      const exact = mergeReports(await partitionsOf(options, 2));
      expect(exact.partitions).toBeUndefined();
      expect(renderJson(exact)).toBe(renderJson(ordered));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('merge refuses what is not one run', () => {
  const file = join(FIXTURES, 'article-unsafe.ndjson');
  it('a missing, repeated or foreign partition; other N, options, inputs or version', async () => {
    const parts = await partitionsOf({ files: [file] }, 3);
    expect(() => mergeReports(parts.slice(0, 2))).toThrow(/partition 2 of 3 is missing/);
    expect(() => mergeReports([parts[0]!, parts[1]!, parts[1]!])).toThrow(/partition 1\/3 is given twice/);
    const two = await partitionsOf({ files: [file] }, 2);
    expect(() => mergeReports([parts[0]!, parts[1]!, two[1]!])).toThrow(/of 3 partitions/);
    const skew = await partitionsOf({ files: [file], clockSkewMs: 1000 }, 3);
    expect(() => mergeReports([parts[0]!, parts[1]!, skew[2]!])).toThrow(/other options .*clockSkewMs 250 vs 1000/);
    const other = await partitionsOf({ files: [file, join(FIXTURES, 'article-safe.ndjson')] }, 3);
    expect(() => mergeReports([parts[0]!, parts[1]!, other[2]!])).toThrow(/other inputs/);
    const sized = JSON.parse(JSON.stringify(parts[2])) as Report;
    sized.partition!.inputs[0]!.size! += 1;
    expect(() => mergeReports([parts[0]!, parts[1]!, sized])).toThrow(/other inputs .*bytes/);
    const older = JSON.parse(JSON.stringify(parts[2])) as Report;
    (older.tool as { version: string }).version = '0.1.0';
    expect(() => mergeReports([parts[0]!, parts[1]!, older])).toThrow(/same version/);
    const k = parts.findIndex((p) => p.findings.length > 0);
    const damaged = JSON.parse(JSON.stringify(parts[k])) as Report;
    damaged.partition!.order.pop();
    expect(() => mergeReports(parts.map((p, i) => (i === k ? damaged : p)))).toThrow(/damaged/);
    const single = await analyze({ files: [file] });
    expect(() => mergeReports([single])).toThrow(MergeError);
    expect(() => mergeReports([])).toThrow(/no reports/);
  });

  it('in the CLI: a partition with no event of its own is no error (exit 0, its lines all other partitions\' or its own blank and invalid ones), and the merge is the single run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-empty-'));
    try {
      // One resource, a stale write: one partition of 7 has its events, six have none.
      const log = join(FIXTURES, 'article-unsafe.ndjson');
      const single = await runCli(['analyze', '-f', 'json', log]);
      expect(single.code).toBe(1);
      let empty = 0;
      for (let i = 0; i < 7; i++) {
        const r = await runCli(['analyze', '-q', '--partition', `${i}/7`, '-o', join(dir, `p${i}.json`), log]);
        expect(r.code, r.stderr).toBe(0);
        const input = (JSON.parse(readFileSync(join(dir, `p${i}.json`), 'utf8')) as Report).input;
        if (input.events === 0) {
          empty++;
          expect(input.otherPartitions! + input.blank + input.invalid + input.ignored).toBe(input.lines);
        }
      }
      expect(empty).toBeGreaterThanOrEqual(5);
      const merged = await runCli(['merge', '-f', 'json', ...Array.from({ length: 7 }, (_, i) => join(dir, `p${i}.json`))]);
      expect(merged.code).toBe(1);
      expect(merged.stdout).toBe(single.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('in the CLI: one line and exit 2, and inputs compared by names as given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-'));
    try {
      const log = join(dir, 'a.ndjson');
      writeFileSync(log, '{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r","fenceToken":"1"}\n');
      for (let i = 0; i < 2; i++) expect((await runCli(['analyze', '--partition', `${i}/2`, '-o', join(dir, `p${i}.json`), 'a.ndjson'], { cwd: dir })).code).toBe(0);
      // The same file by another name (an absolute path) is another input list.
      expect((await runCli(['analyze', '--partition', '1/2', '-o', join(dir, 'abs.json'), log], { cwd: dir })).code).toBe(0);
      const bad = await runCli(['merge', join(dir, 'p0.json'), join(dir, 'abs.json')]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^stalewrite: cannot merge: .*abs\.json read other inputs/);
      const ok = await runCli(['merge', '-f', 'json', join(dir, 'p1.json'), join(dir, 'p0.json')]);
      const single = await runCli(['analyze', '-f', 'json', 'a.ndjson'], { cwd: dir });
      expect(ok.stdout).toBe(single.stdout);
      expect(ok.code).toBe(single.code);
      // Too many invalid lines: exit 2 as a single run, said as its input's failure (no usage hint).
      // One invalid line in each partition (`a` and `orders/42` are in partitions 0 and 1 of 2, README test vectors).
      writeFileSync(join(dir, 'bad.ndjson'), '{"ts":"2026-03-01T10:00:00Z","type":"grab","resource":"a"}\n{"ts":"2026-03-01T10:00:00Z","type":"grab","resource":"orders/42"}\n{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r","fenceToken":"1"}\n');
      for (let i = 0; i < 2; i++) expect((await runCli(['analyze', '--partition', `${i}/2`, '--max-invalid', '1', '-o', join(dir, `b${i}.json`), 'bad.ndjson'], { cwd: dir })).code).toBe(0);
      const tooMany = await runCli(['merge', join(dir, 'b0.json'), join(dir, 'b1.json')]);
      expect(tooMany.code).toBe(2);
      expect(tooMany.stderr).toBe('stalewrite: more than 1 invalid lines in all partitions (--max-invalid): 2\n');
      expect((await runCli(['analyze', '--max-invalid', '1', 'bad.ndjson'], { cwd: dir })).code).toBe(2);
      const notJson = join(dir, 'x.json');
      writeFileSync(notJson, '{');
      expect((await runCli(['merge', notJson])).stderr).toMatch(/is not a JSON report/);
      expect((await runCli(['analyze', '--partition', '2/2', 'a.ndjson'], { cwd: dir })).stderr).toMatch(/--partition "2\/2" is not I\/N/);
      expect((await runCli(['analyze', '--partition', '0/2', '-f', 'table', 'a.ndjson'], { cwd: dir })).stderr).toMatch(/--partition writes the JSON report/);
      // A partition with findings exits 0 (job engines must not retry it); its merge decides.
      const unsafe = join(FIXTURES, 'article-unsafe.ndjson');
      expect((await runCli(['analyze', '--partition', '0/1', '-o', join(dir, 'u.json'), unsafe])).code).toBe(0);
      expect((await runCli(['merge', join(dir, 'u.json')])).code).toBe(1);
      // A partition that failed exits 2.
      expect((await runCli(['analyze', '--partition', '0/2', '-o', join(dir, 'm.json'), 'missing.ndjson'], { cwd: dir })).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('property: merge = single run on random histories', () => {
  it('sorted or not, the merge of N partitions is the single run, or says where it may differ', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-prop-'));
    let run = 0;
    let flagged = 0;
    let exact = 0;
    let findings = 0;
    const runs = Number(process.env.SW_RUNS ?? 250);
    try {
      await fc.assert(
        fc.asyncProperty(historyArb(), fc.integer({ min: 2, max: 5 }), fc.boolean(), async (h, n, html) => {
          const files = h.files.map((f) => {
            const p = join(dir, `${run}-${f.name}`);
            writeFileSync(p, f.lines.join('\n') + '\n');
            return p;
          });
          run++;
          const options: AnalyzeOptions = { files, busyWindowMs: 4000, timelines: html ? { all: true } : undefined };
          const single = await analyze(options);
          const parts = await partitionsOf(options, n);
          // The union of the partitions' events is the single run's.
          expect(parts.reduce((a, p) => a + p.input.events + p.input.duplicates, 0)).toBe(single.input.events + single.input.duplicates);
          const merged = mergeReports(parts);
          findings += single.findings.length;
          if (merged.partitions !== undefined) {
            flagged++;
            return;
          }
          exact++;
          expect(renderJson(merged)).toBe(renderJson(single));
        }),
        { seed: Number(process.env.SW_SEED ?? 4242), numRuns: runs },
      );
      expect(exact).toBeGreaterThan(runs * 0.6);
      expect(findings).toBeGreaterThan(runs);
      // Flagged ones exist (the histories have clocks stepping back and invalid lines out of order), but few.
      expect(flagged).toBeLessThan(runs * 0.4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('one input: folding the placeholders that change nothing leaves every partition report as it is', async () => {
    // PartitionFilter.fold drops, with one input, the placeholders of other partitions' lines that
    // no rule and no witness would notice: each partition's report (its findings, counts, order,
    // inexact notes) must be the one it writes with every placeholder, byte for byte.
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-fold-'));
    let run = 0;
    const before = folding.folded;
    try {
      await fc.assert(
        fc.asyncProperty(historyArb({ inputs: 1 }), fc.integer({ min: 2, max: 5 }), fc.constantFrom(undefined, 0, 500), fc.constantFrom(undefined, 3), async (h, n, clockSkewMs, maxResources) => {
          const file = join(dir, `${run++}.ndjson`);
          writeFileSync(file, h.files.flatMap((f) => f.lines).join('\n') + '\n');
          const options: AnalyzeOptions = { files: [file], busyWindowMs: 4000, clockSkewMs, maxResources };
          for (let i = 0; i < n; i++) {
            const folded = renderJson(await analyze({ ...options, partition: { index: i, count: n } }));
            folding.enabled = false;
            try {
              expect(folded).toBe(renderJson(await analyze({ ...options, partition: { index: i, count: n } })));
            } finally {
              folding.enabled = true;
            }
          }
        }),
        { seed: 9191, numRuns: 120 },
      );
      // The histories do have lines to fold.
      expect(folding.folded - before).toBeGreaterThan(100);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('in timestamp order, the merge is always exactly the single run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-merge-sorted-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(historyArb({ disorder: false }), fc.integer({ min: 2, max: 7 }), async (h, n) => {
          const files = h.files.map((f) => {
            const p = join(dir, `${run}-${f.name}`);
            writeFileSync(p, f.lines.join('\n') + '\n');
            return p;
          });
          run++;
          const single = await analyze({ files });
          const merged = mergeReports(await partitionsOf({ files }, n));
          expect(merged.partitions).toBeUndefined();
          expect(renderJson(merged)).toBe(renderJson(single));
        }),
        { seed: 777, numRuns: 150 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
