/**
 * The CLI's reports are written from a ReportView (analyzeView): its resources' summaries are made
 * one at a time as each reporter walks them (Engine.resourceList()), never all held at once. Every
 * format must be exactly what the same reporter writes from analyze()'s Report (an array), and the
 * JSON exactly JSON.stringify of that Report: an element dropped, repeated or out of order fails.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeView, type AnalyzeOptions } from '../src/analyze.js';
import { byReadiness, PLAIN_SUMMARIES, READINESS, worstResources, type Readiness, type Report, type ReportView, type ResourceSummary } from '../src/model/report.js';
import { renderGithub } from '../src/report/github.js';
import { renderHtml } from '../src/report/html.js';
import { renderJson, renderJsonChunks, summaryJson } from '../src/report/json.js';
import { renderJunit } from '../src/report/junit.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { summaryLine } from '../src/report/ndjson.js';
import { renderStory } from '../src/report/story.js';
import { renderTable } from '../src/report/table.js';
import { historyArb } from './helpers/histories.js';
import { OWN_DIGEST, readinessDigest } from '../src/verdict.js';
import { FIXTURES } from './helpers/run.js';

const RENDERERS: [string, (r: ReportView) => string][] = [
  ['json', (r) => renderJson(r)],
  ['ndjson', (r) => summaryLine(r)],
  ['junit', (r) => renderJunit(r)],
  ['junit --require-tested', (r) => renderJunit(r, { failOn: 'error', includePossible: false, requireTested: true })],
  ['markdown', (r) => renderMarkdown(r)],
  ['markdown, 3 resources', (r) => renderMarkdown(r, { maxResources: 3 })],
  ['table', (r) => renderTable(r, { color: false })],
  ['table, 2 resources', (r) => renderTable(r, { color: false, maxResources: 2 })],
  ['html', (r) => renderHtml(r)],
  ['github', (r) => renderGithub(r)],
];

/** JSON.stringify of the whole report, as renderJson documents it (each finding with its story). */
function stringified(report: Report): string {
  return JSON.stringify({ ...report, findings: report.findings.map((f) => ({ ...f, story: renderStory(f) })) }, null, 2) + '\n';
}

/** Both reports of one input, and every format compared. */
async function compare(options: () => AnalyzeOptions, what: string, renderers = RENDERERS): Promise<{ report: Report; view: ReportView }> {
  const report = await analyze({ ...options(), jobs: 1 });
  const view = await analyzeView({ ...options(), jobs: 1 });
  expect(Array.isArray(view.resources), what).toBe(false);
  expect(view.resources.length, what).toBe(report.resources.length);
  // Each walk makes the summaries again: the same ones, in the same order.
  expect([...view.resources], what).toEqual(report.resources);
  expect([...view.resources], what).toEqual(report.resources);
  // The engine's own digest (readiness only, summaries of the named few) is the walk's.
  expect(OWN_DIGEST in view.resources, what).toBe(true);
  expect(readinessDigest(view.resources), what).toEqual(readinessDigest([...view.resources]));
  expect(renderJson(view), `json of ${what}`).toBe(stringified(report));
  const { resources: _r, ...rest } = view;
  const { resources: _a, ...restOfReport } = report;
  expect(rest, what).toEqual(restOfReport);
  for (const [format, render] of renderers) expect(render(view), `${format} of ${what}`).toBe(render(report));
  return { report, view };
}

const ODD = ['"quoted"', 'back\\slash', 'ctl\u0001\u001f\u007f', 'lone\ud800', 'lone-low\udc00x', 'astral\u{1f600}', '<script>&amp;', 'line\nbreak', '\u2028sep', 'ü-é'];

/**
 * Records of `n` resources, each of one readiness by its index: untested, verified (a stale write
 * rejected), violated (one accepted), unconfirmed (answered by a timeout), some with odd names.
 */
function manyResources(n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const t0 = Date.UTC(2026, 2, 1);
  let t = t0;
  const at = () => new Date((t += 7)).toISOString();
  for (let i = 0; i < n; i++) {
    const resource = i % 37 === 5 ? `${ODD[(i / 37) % ODD.length | 0]}-${i}` : `res-${(i * 7919) % n}`;
    const kind = i % 4;
    out.push({ ts: at(), type: 'acquire', resource, ownerId: 'a', leaseId: `L${i}a`, fenceToken: 10, ttlMs: 5000, result: 'granted' });
    out.push({ ts: at(), type: 'write', resource, ownerId: 'a', leaseId: `L${i}a`, fenceToken: 10, result: 'accepted', observer: 'resource' });
    if (kind === 0) continue;
    out.push({ ts: at(), type: 'revoke', resource, ownerId: 'a', leaseId: `L${i}a` });
    out.push({ ts: at(), type: 'acquire', resource, ownerId: 'b', leaseId: `L${i}b`, fenceToken: 11, ttlMs: 5000, result: 'granted' });
    out.push({ ts: at(), type: 'write', resource, ownerId: 'b', leaseId: `L${i}b`, fenceToken: 11, result: 'accepted', observer: 'resource' });
    const result = kind === 1 ? 'rejected-stale-fence' : kind === 2 ? 'accepted' : 'timeout';
    out.push({ ts: at(), type: 'write', resource, ownerId: 'a', leaseId: `L${i}a`, fenceToken: 10, result, observer: 'resource' });
  }
  return out;
}

describe('reports written as their resources are walked (analyzeView)', () => {
  it('are exactly the reports of analyze(), for every fixture', async () => {
    const names = readdirSync(FIXTURES).filter((f) => f.endsWith('.ndjson'));
    expect(names.length).toBeGreaterThan(20);
    // Each format once (its variants are compared on the many resources below).
    const once = RENDERERS.filter(([format]) => !format.includes(' '));
    for (const name of names) await compare(() => ({ files: [join(FIXTURES, name)], timelines: { all: true } }), name, once);
  }, 120_000);

  it('are exactly the reports of analyze() with many resources of every readiness, odd names included', async () => {
    // Around the JSON writer's slices of 32 elements, and past every reporter's row caps.
    for (const n of [0, 1, 31, 32, 33, 250, 1001]) {
      const events = manyResources(n);
      // Few findings listed: the table lays out its findings slowly, and they are not what is tested here.
      const { report } = await compare(() => ({ events, timelines: { maxResources: 5 }, maxFindings: 20 }), `${n} resources`);
      if (n >= 250) for (const r of READINESS) if (r !== 'inconclusive') expect(report.summary.byReadiness[r], `${r} of ${n}`).toBeGreaterThan(0);
    }
  }, 120_000);

  it('are exactly the reports of analyze() on random histories', async () => {
    await fc.assert(
      fc.asyncProperty(historyArb(), async (h) => {
        await compare(() => ({ streams: h.files.map((f) => ({ name: f.name, stream: Readable.from([f.lines.join('\n') + '\n']) })) }), 'a history');
      }),
      { numRuns: 40, seed: 7 },
    );
  }, 60_000);

  it('the JSON writer walks a list it is given once, in order, element by element', () => {
    const made: ResourceSummary[] = Array.from({ length: 70 }, (_, i) => summary(`r${String(i).padStart(3, '0')}`, READINESS[i % 5]!));
    let walks = 0;
    const resources = {
      length: made.length,
      *[Symbol.iterator]() {
        walks++;
        yield* made;
      },
    };
    const base: Report = { tool: { name: 'stalewrite', version: 'x', reportFormat: 2 }, summary: {} as Report['summary'], findings: [], resources: made, input: {} as Report['input'] };
    const text = [...renderJsonChunks({ ...base, resources })].join('');
    expect(walks).toBe(1);
    expect(text).toBe(stringified(base));
    // One missing or swapped element is another text.
    expect([...renderJsonChunks({ ...base, resources: made.slice(1) })].join('')).not.toBe(text);
    expect([...renderJsonChunks({ ...base, resources: [made[1]!, made[0]!, ...made.slice(2)] })].join('')).not.toBe(text);
  });
});

function summary(resource: string, readiness: Readiness): ResourceSummary {
  return { resource, readiness, reason: `why ${resource}`, highestAcceptedToken: null, events: 1, writes: { accepted: 0, rejectedStaleFence: 0, rejectedOther: 0, withoutToken: 0 }, staleWrites: 0, oldHandleReleases: 0, findings: 0 };
}

describe('worstResources', () => {
  it('is the stable sort by readiness cut where slice() cuts, in one pass', () => {
    const item = fc.record({ name: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'ä', '\ud800', 'a\u0000'), readiness: fc.constantFrom(...READINESS), n: fc.nat() });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 60 }), fc.oneof(fc.integer({ min: -70, max: 70 }), fc.constantFrom(NaN, Infinity, -Infinity, 2.5, -0.5)), (items, end) => {
        // Duplicates (equal under byReadiness) keep their order: `n` tells them apart.
        const list = items.map((x) => ({ ...summary(x.name, x.readiness), events: x.n }));
        expect(worstResources(list, end)).toEqual(list.slice().sort(byReadiness).slice(0, end));
      }),
      { numRuns: 500, seed: 3 },
    );
  });
});

describe('summaryJson (the JSON writer of the engine\'s summaries)', () => {
  const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom(...ODD, '', '\\"', '\u0000', '\ud83d', '\ude00', '\ud83d\ude00x'));
  const count = fc.oneof(fc.nat({ max: 9 }), fc.nat(), fc.constant(2 ** 53 - 1));
  const summaryArb = fc.record({
    resource: text,
    readiness: fc.constantFrom(...READINESS),
    reason: text,
    highestAcceptedToken: fc.oneof(fc.constant(null), fc.bigInt({ min: 0n, max: 2n ** 80n }).map(String)),
    events: count,
    writes: fc.record({ accepted: count, rejectedStaleFence: count, rejectedOther: count, withoutToken: count }),
    staleWrites: count,
    oldHandleReleases: count,
    findings: count,
  });

  it('is exactly what JSON.stringify writes for an element of resources', () => {
    fc.assert(
      fc.property(fc.array(summaryArb, { minLength: 1, maxLength: 5 }), (list) => {
        const whole = JSON.stringify({ x: list }, null, 2);
        expect('{\n  "x": [\n' + list.map(summaryJson).join(',\n') + '\n  ]\n}').toBe(whole);
      }),
      { numRuns: 1000, seed: 11 },
    );
  });

  it('is used for the engine\'s summaries only', async () => {
    const view = await analyzeView({ events: manyResources(40), jobs: 1 });
    expect((view.resources as { [PLAIN_SUMMARIES]?: boolean })[PLAIN_SUMMARIES]).toBe(true);
    // A summary with another field, or its fields in another order, is written by JSON.stringify.
    const [first, ...rest] = [...view.resources];
    const odd = [{ extra: '"x"', ...first! }, ...rest];
    const report = { ...view, resources: odd } as Report;
    expect(renderJson(report)).toBe(stringified(report));
  });
});

describe('junit names of resources walked in key order', () => {
  it('stay unique as written, with only the names that can meet another kept', () => {
    // Keys strictly increasing (the engine's order): a name made visible (`\u{1}`) and the text
    // itself; a readiness name that is also a finding's testcase name (rule "readiness of x").
    const keys = ['a\u0001', 'a\\u{1}', 'b', 'x on y', 'z'].sort();
    const made = keys.map((k) => summary(k, 'untested'));
    const base = { tool: { name: 'stalewrite', version: 'x', reportFormat: 2 }, summary: { verdict: 'untested', reasons: [], findingsOmitted: 0, bySeverity: { error: 0, warning: 0, info: 0 }, possibleBySeverity: { error: 0, warning: 0, info: 0 } }, input: { lines: 1, events: 1, blank: 0, ignored: 0, invalid: 0 } } as unknown as Report;
    const finding = { id: 'F1', rule: 'readiness of x', severity: 'info', certainty: 'definite', resource: 'y: untested', message: 'm', symptom: '', cause: '', check: '', action: '', evidence: [] } as unknown as Report['findings'][number];
    const walked = { length: made.length, *[Symbol.iterator]() { yield* made; } };
    for (const resources of [made, walked, [...made].reverse(), [made[0]!, made[0]!, ...made]]) {
      const xml = renderJunit({ ...base, findings: [finding], resources });
      const written = [...xml.matchAll(/<testcase [^>]*name="([^"]*)"/g)].map((m) => m[1]!);
      expect(new Set(written).size, xml).toBe(written.length);
      expect(written).toContain('readiness of x on y: untested (2)');
      const alike = [...resources].filter((r) => r.resource.startsWith('a')).length;
      const expected = ['readiness of a\\u{1}: untested', ...Array.from({ length: alike - 1 }, (_, i) => `readiness of a\\u{1}: untested (${i + 2})`)];
      expect(written.filter((w) => w.startsWith('readiness of a\\u{1}: untested')).sort()).toEqual(expected.sort());
    }
  });
});
