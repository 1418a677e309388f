/**
 * The HTML report without a browser: the page's data blocks (escaped for <script>, compressed when
 * big, read back to the same findings), its CSP, what it says it left out, and the layout of the
 * pictures (test/html-browser.test.ts measures the drawn result in Chromium).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import { SCRIPT } from '../src/generated/html-page.js';
import type { Report } from '../src/model/report.js';
import { brokenAxis, placeRow, xOf } from '../src/report/axis.js';
import { contentSecurityPolicy, renderHtml } from '../src/report/html.js';
import { scriptJson } from '../src/report/html-data.js';
import { picture, WIDTH } from '../src/report/picture.js';
import { FIXTURES, runCli } from './helpers/run.js';

/** The JSON documents of a page's data blocks, decoded as the page does. */
function blocks(html: string): { kind: 'plain' | 'gzip'; id: string; value: unknown }[] {
  return [...html.matchAll(/<script type="(application\/json|application\/x-gzip-base64)" ([^>]*)>([^<]*)<\/script>/g)].map((m) => {
    const text = m[1] === 'application/json' ? m[3]! : gunzipSync(Buffer.from(m[3]!, 'base64')).toString('utf8');
    return { kind: m[1] === 'application/json' ? 'plain' : 'gzip', id: m[2]!, value: JSON.parse(text) };
  });
}

describe('html report: the page', () => {
  it('data is JSON escaped for a script element: no value can close it or open markup', () => {
    const evil = '</script><script>alert(1)</script><!-- & \u2028\u2029 >';
    const text = scriptJson({ evil });
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual({ evil });
  });

  it('allows its own script and style by hash and nothing else', () => {
    const csp = contentSecurityPolicy();
    expect(csp).toContain(`script-src 'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`);
    expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src data:; base-uri 'none'; form-action 'none'$/);
    expect(SCRIPT).not.toMatch(/<\/script|<!--/i);
  });

  it('the data holds every listed finding, with its story and evidence; small pages stay plain JSON, big ones compress', async () => {
    const article = blocks(renderHtml(await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')], timelines: {} })));
    expect(article.map((d) => d.kind)).toEqual(['plain', 'plain']);
    const small = await analyze({ files: [join(FIXTURES, 'mixed-incidents.ndjson')], timelines: {} });
    const html = renderHtml(small);
    const docs = blocks(html);
    const index = docs.find((d) => d.id === 'id="sw-index"')!.value as { cards: unknown[][] };
    const cards = docs.filter((d) => d.id.startsWith('class="sw-data"')).flatMap((d) => d.value as { name: string; findings: { id: string; story: string[]; evidence: unknown[] }[] }[]);
    expect(cards.map((c) => c.name)).toEqual(index.cards.map((c) => c[1]));
    const ids = cards.flatMap((c) => c.findings.map((f) => f.id)).sort();
    expect(ids).toEqual(small.findings.map((f) => f.id).sort());
    for (const c of cards) for (const f of c.findings) expect(f.evidence.length).toBe(small.findings.find((x) => x.id === f.id)!.evidence.length);
    // The messages are in the data as they are in every other format.
    const messages = new Set(cards.flatMap((c) => c.findings.map((f) => (f as unknown as { message: string }).message)));
    for (const f of small.findings) expect(messages.has(f.message), f.id).toBe(true);
    // Big: many copies of a resource compress; the data reads back the same.
    const big: Report = { ...small, timelines: Array.from({ length: 400 }, (_, i) => ({ ...small.timelines![0]!, resource: `copy-${i}` })) };
    const bigDocs = blocks(renderHtml(big));
    expect(bigDocs.some((d) => d.kind === 'gzip')).toBe(true);
    expect(bigDocs.filter((d) => d.id.startsWith('class="sw-data"')).flatMap((d) => (d.value as { name: string }[]).map((c) => c.name)).slice(0, 400)).toEqual(big.timelines!.map((t) => t.resource));
  });

  it('a report made without histories still lists every finding, each card saying it is not drawn', async () => {
    const r = await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')] });
    const html = renderHtml(r);
    expect(html).toContain('No timelines: this report was made without event histories.');
    const cards = blocks(html).filter((d) => d.id.startsWith('class="sw-data"')).flatMap((d) => d.value as { notDrawn?: string; findings: unknown[] }[]);
    expect(cards).toHaveLength(1);
    expect(cards[0]!.notDrawn).toMatch(/^Not drawn: this report was made without event histories/);
    expect(cards[0]!.findings).toHaveLength(r.findings.length);
  });

  it('says what it left out and the option that would bring it in', async () => {
    const lines = ['r1', 'r2', 'r3', 'r4'].map((resource, i) => JSON.stringify({ ts: `2026-03-01T10:00:0${i}Z`, type: 'write', resource, result: 'accepted', fenceToken: i < 3 ? undefined : 1 }));
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'stalewrite-html-')), 'left.ndjson');
    writeFileSync(file, lines.join('\n') + '\n');
    const drawn = await runCli(['analyze', '-f', 'html', '--max-drawn', '1', '--max-findings', '2', file]);
    expect(drawn.stdout).toContain('2 more resources are not drawn (raise --max-drawn).');
    expect(drawn.stdout).toContain('1 more finding is not listed (raise --max-findings); 2 are.');
    const quiet = await runCli(['analyze', '-f', 'html', file]);
    expect(quiet.stdout).toContain('1 resource without findings is not drawn (add --all-resources).');
    const all = await runCli(['analyze', '-f', 'html', '--all-resources', file]);
    expect(all.stdout).not.toContain('Left out of this page');
  });
});

describe('html report: layout', () => {
  const fixtures = findCases([FIXTURES]).map((c) => ({ name: c.name.slice(FIXTURES.length + 1), files: c.files, options: analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined) }));

  it('on every fixture: marks of a lane never closer than their widths, inside their segment, bars inside the axis, evidence drawn', async () => {
    let views = 0;
    for (const c of fixtures) {
      const r = await analyze({ files: c.files, ...c.options, timelines: { all: true } });
      for (const t of r.timelines!) {
        const findings = r.findings.filter((f) => f.resource === t.resource);
        const p = picture(t, findings);
        for (const [name, v] of [['focus', p.focus], ['whole', p.whole]] as const) {
          if (v === undefined) continue;
          views++;
          const where = `${c.name} ${t.resource} ${name}`;
          const byRow = new Map<number, typeof v.marks>();
          for (const m of v.marks) byRow.set(m.lane, [...(byRow.get(m.lane) ?? []), m]);
          for (const row of byRow.values()) {
            row.sort((a, b) => a.x - b.x);
            for (let i = 1; i < row.length; i++) expect(row[i]!.x - row[i - 1]!.x, where).toBeGreaterThanOrEqual(row[i]!.half + row[i - 1]!.half - 0.2);
          }
          const lo = v.segments[0]![0];
          const hi = v.segments[v.segments.length - 1]![1];
          for (const m of v.marks) expect(m.x - m.half >= lo - 0.2 && m.x + m.half <= hi + 0.2, where).toBe(true);
          for (const b of v.bars) expect(b.x0 >= lo && b.x1 <= hi && b.x0 <= b.x1, where).toBe(true);
          expect(v.height).toBe(v.axisY + 40);
        }
        // Every evidence item of a captured line is drawn, in the focus view on a mark of its own.
        for (const f of findings) {
          p.evidence.get(f.id)!.forEach((i, k) => {
            if (i < 0) return;
            const mark = p.focus.marks.find((m) => m.ev.includes(i));
            expect(mark, `${c.name} ${f.id} evidence ${k + 1}`).toBeDefined();
          });
        }
      }
    }
    expect(views).toBeGreaterThan(80);
  }, 60000);

  it('the real etcd race: quiet stretches broken out, marked with their length', async () => {
    const c = fixtures.find((x) => x.name.startsWith('real/etcd-unsafe'))!;
    const r = await analyze({ files: c.files, ...c.options, timelines: {} });
    const p = picture(r.timelines![0]!, r.findings);
    expect(p.focusOn).toBe('evidence');
    expect(p.focus.breaks.length).toBeGreaterThanOrEqual(3);
    expect(p.focus.ticks.filter((t) => t.row === 1).map((t) => t.text)).toEqual(expect.arrayContaining(['+2s', '+3.324s', '+1.02s']));
    expect(p.whole).toBeDefined();
    expect(p.whole!.breaks).toEqual([]);
    expect(p.whole!.marks.some((m) => m.glyph === 'gr' && m.ev.length > 2)).toBe(true);
    // worker-a's lease ended by its TTL at t=2.005s, though worker-a logged losing it only after its write.
    const bar = p.focus.bars.find((b) => b.title.includes('704147253608001286'))!;
    expect(bar.end).toBe('inferred');
    expect(bar.title).toContain('ended t=2.005s (inferred: last renewal + ttl); its worker logged losing it only at t=6.668s');
    expect(bar.lostX).toBeGreaterThan(bar.x1 + 300);
  });

  it('the real safe run opens on the stale write the resource rejected and the write it was measured against', async () => {
    const c = fixtures.find((x) => x.name.startsWith('real/etcd-safe'))!;
    const r = await analyze({ files: c.files, ...c.options, timelines: {} });
    expect(r.findings.map((f) => f.rule)).toEqual(['keepalive-gap']);
    const p = picture(r.timelines![0]!, r.findings);
    expect(p.focusOn).toBe('evidence+rejections');
    const shown = p.focus.marks.flatMap((m) => m.ev.map((i) => p.events[i]!)).sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    expect(shown.filter((e) => e.type === 'write').map((e) => [e.owner, e.token, e.result])).toEqual([
      ['worker-b', '4', 'accepted'],
      ['worker-a', '2', 'rejected-stale-fence'],
    ]);
    const tail = p.focus.bars.find((b) => b.lostX !== undefined)!;
    expect(tail.lostX! - tail.x1).toBeGreaterThan(300); // worker-a went on as holder across the breaks
  });

  it('placeRow: in order, never overlapping, inside the row; groups only when the marks cannot fit', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ x: fc.double({ min: 0, max: 800, noNaN: true }), half: fc.double({ min: 3, max: 30, noNaN: true }), keep: fc.boolean() }), { maxLength: 60 }), fc.boolean(), (raw, group) => {
        const items = raw.map((r, i) => ({ ...r, ids: [i] })).sort((a, b) => a.x - b.x);
        const placed = placeRow(items, 0, 800, (n) => 10 + String(n).length * 3, group);
        expect(placed.flatMap((p) => p.ids).sort((a, b) => a - b)).toEqual(items.map((i) => i.ids[0]).sort((a, b) => a - b));
        for (let i = 1; i < placed.length; i++) expect(placed[i]!.at - placed[i - 1]!.at).toBeGreaterThanOrEqual(placed[i]!.half + placed[i - 1]!.half - 1e-6);
        for (const p of placed) expect(p.at - p.half >= -1e-6 && p.at + p.half <= 800 + 1e-6).toBe(true);
        const room = items.reduce((s, i) => s + 2 * i.half, 0) <= 800;
        if (room && !group) expect(placed.length).toBe(items.length);
      }),
      { numRuns: 300 },
    );
  });

  it('brokenAxis: time runs left to right; a crowded burst after a quiet stretch gets a break', () => {
    const times = [0, 5, 2005, 5329, 5334, 5638, 5643, 6663, 6664, 6668];
    const axis = brokenAxis(times, [{ t0: 0, t1: 6668, hiddenBefore: 0 }], { lo: 168, hi: 948, minSep: 24, breakWidth: 40, pad: 14, maxBreaks: 12 });
    expect(axis.breaks.length).toBeGreaterThan(0);
    const xs = times.map((t) => xOf(axis, t));
    for (let i = 1; i < xs.length; i++) expect(xs[i]!).toBeGreaterThan(xs[i - 1]!);
    expect(xs[0]).toBeGreaterThanOrEqual(168);
    expect(xs[xs.length - 1]).toBeLessThanOrEqual(948);
    // A regular rhythm is not broken up.
    const even = Array.from({ length: 20 }, (_, i) => i * 1000);
    expect(brokenAxis(even, [{ t0: 0, t1: 19000, hiddenBefore: 0 }], { lo: 168, hi: 948, minSep: 24, breakWidth: 40, pad: 14, maxBreaks: 12 }).breaks).toEqual([]);
    expect(WIDTH).toBe(960);
  });
});
