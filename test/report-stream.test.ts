import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import type { EvidenceItem, Finding, Report, ResourceSummary } from '../src/model/report.js';
import { renderGithub, renderGithubChunks } from '../src/report/github.js';
import { renderHtml, renderHtmlChunks } from '../src/report/html.js';
import { renderJunit, renderJunitChunks } from '../src/report/junit.js';
import { renderMarkdown, renderMarkdownChunks } from '../src/report/markdown.js';
import { summaryLine, summaryLineChunks } from '../src/report/ndjson.js';
import { renderTable, renderTableChunks } from '../src/report/table.js';
import { appendSummaryChunks } from '../src/cli/output.js';
import { FIXTURES } from './helpers/run.js';

/** No chunk may be larger than this, whatever the number of findings or resources. */
const BOUND = 1024 * 1024;

const FORMATS: [string, (r: Report) => string, (r: Report) => Iterable<string>][] = [
  ['markdown', (r) => renderMarkdown(r), (r) => renderMarkdownChunks(r)],
  ['html', (r) => renderHtml(r), (r) => renderHtmlChunks(r)],
  ['junit', (r) => renderJunit(r), (r) => renderJunitChunks(r)],
  ['junit --fail-on warning --require-tested', (r) => renderJunit(r, { failOn: 'warning', includePossible: false, requireTested: true }), (r) => renderJunitChunks(r, { failOn: 'warning', includePossible: false, requireTested: true })],
  ['github', (r) => renderGithub(r), (r) => renderGithubChunks(r)],
  ['table', (r) => renderTable(r, { color: false }), (r) => renderTableChunks(r, { color: false })],
  ['table on a terminal', (r) => renderTable(r, { color: true, width: 100 }), (r) => renderTableChunks(r, { color: true, width: 100 })],
  ['ndjson summary', (r) => summaryLine(r), (r) => summaryLineChunks(r)],
];

/** Walk the chunks without joining them: their count, total length and largest. */
function measure(chunks: Iterable<string>): { count: number; total: number; largest: number } {
  let count = 0;
  let total = 0;
  let largest = 0;
  for (const c of chunks) {
    count++;
    total += c.length;
    largest = Math.max(largest, c.length);
  }
  return { count, total, largest };
}

describe('streamed reports', () => {
  it('join to exactly the text of the string renderers, for every fixture', async () => {
    const names = readdirSync(FIXTURES).filter((f) => f.endsWith('.ndjson'));
    expect(names.length).toBeGreaterThan(20);
    for (const name of names) {
      const report = await analyze({ files: [join(FIXTURES, name)], timelines: { all: true } });
      for (const [format, whole, chunks] of FORMATS) {
        // Wrapping to a width is slow in cli-table3: once is enough.
        if (format === 'table on a terminal' && name !== 'mixed-incidents.ndjson') continue;
        expect([...chunks(report)].join(''), `${format} of ${name}`).toBe(whole(report));
      }
    }
  });

  it('stay in bounded chunks with many findings, long evidence and many resources', async () => {
    const base = await analyze({ files: [join(FIXTURES, 'mixed-incidents.ndjson')], timelines: { all: true } });
    const template = base.findings[0]!;
    const long = 'o'.repeat(100_000);
    const resources: ResourceSummary[] = Array.from({ length: 50_000 }, (_, i) => ({ ...base.resources[0]!, resource: `resource-${i}-${'r'.repeat(60)}` }));
    const many: Finding[] = Array.from({ length: 20_000 }, (_, i) => ({ ...template, id: `F${i + 2}`, resource: `res-${i % 500}` }));
    // Evidence of a few items with very long values (a 100 KB owner id), as log lines can carry.
    const wide: Report = { ...base, resources, findings: [{ ...template, id: 'F1', evidence: template.evidence.map((e) => ({ ...e, ownerId: long, leaseId: long })) }, ...many] };
    // One finding citing 2 000 events: its evidence is written row by row. Not for the table,
    // whose evidence cell holds all of a finding's evidence (findings cite a handful of events).
    const evidence: EvidenceItem[] = Array.from({ length: 2_000 }, (_, i) => ({ ...template.evidence[0]!, line: i + 1, ownerId: `owner-${i}-${'o'.repeat(600)}` }));
    const deep: Report = { ...base, resources, findings: [{ ...template, id: 'F1', evidence }, ...many] };
    for (const [format, , chunks] of FORMATS) {
      for (const [kind, report] of [['wide', wide], ['deep', deep]] as const) {
        if (kind === 'deep' && format.startsWith('table')) continue;
        const m = measure(chunks(report));
        expect(m.largest, `${format}, ${kind}`).toBeLessThan(BOUND);
        // The formats that list every finding or resource are written in many chunks (the others cap what they list).
        if (format.startsWith('junit') || format === 'ndjson summary') expect(m.total, `${format}, ${kind}`).toBeGreaterThan(BOUND);
        // html compresses its data blocks, so its size says little; it is still written in many chunks.
        if (format === 'html') expect(m.count, `${format}, ${kind}`).toBeGreaterThan(4);
      }
    }
  }, 30_000);

  it('render 300 000 resources with long names through junit and the ndjson summary', async () => {
    const base = await analyze({ files: [join(FIXTURES, 'article-safe.ndjson')] });
    const resources: ResourceSummary[] = Array.from({ length: 300_000 }, (_, i) => ({
      ...base.resources[0]!,
      resource: `${String(i).padStart(8, '0')}-${'n'.repeat(191)}`,
      readiness: 'untested',
      reason: 'no write was rejected as stale',
    }));
    const report: Report = { ...base, findings: [], resources };
    const junit = measure(renderJunitChunks(report));
    expect(junit.largest).toBeLessThan(BOUND);
    expect(junit.total).toBeGreaterThan(300_000 * 200);
    const summary = measure(summaryLineChunks(report));
    expect(summary.largest).toBeLessThan(BOUND);
    expect(summary.total).toBeGreaterThan(300_000 * 200);
    // The pieces of the summary are the pieces of JSON.stringify: the resources part matches element by element.
    const head = [...summaryLineChunks({ ...report, resources: resources.slice(0, 3) })].join('');
    expect(head).toBe(JSON.stringify({ kind: 'summary', tool: report.tool, summary: report.summary, resources: resources.slice(0, 3), input: report.input }) + '\n');
  }, 30_000);

  it('append a step summary chunk by chunk, and cut a summary that fails half-way off again', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'stalewrite-stream-')), 'summary.md');
    writeFileSync(path, 'earlier step\n');
    const big = 'x'.repeat(100_000);
    await appendSummaryChunks(path, [big, big, '\n']);
    expect(readFileSync(path, 'utf8')).toBe(`earlier step\n${big}${big}\n`);
    function* failing(): Generator<string> {
      yield big;
      yield big;
      throw new RangeError('renderer failed');
    }
    await expect(appendSummaryChunks(path, failing())).rejects.toThrow('renderer failed');
    expect(readFileSync(path, 'utf8')).toBe(`earlier step\n${big}${big}\n`);
  });
});
