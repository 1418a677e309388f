/**
 * The Markdown report's Mermaid sequence diagrams, parsed and rendered by mermaid 11 in Debian's
 * chromium (one browser, one page, offline: mermaid.min.js is added as the page's script text).
 * For every fixture's report, each diagram's participants and messages, as mermaid parsed them and
 * as the drawn SVG shows them, are the ones its finding's evidence calls for. Hostile log content
 * must neither add a message, participant or directive nor run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { OptionError } from '../src/model/options.js';
import { findCases, runCase } from '../src/check/cases.js';
import type { EvidenceItem, Finding, Report } from '../src/model/report.js';
import { escapeTerminal } from '../src/report/escape.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { MAX_DIAGRAM_TEXT, mermaidText, sequenceDiagram } from '../src/report/mermaid.js';
import { FIXTURES, ROOT, runCli } from './helpers/run.js';

const CHROMIUM = process.env.STALEWRITE_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
// In CI the browser is installed by .ci/run: its absence is a failure there, not a skip.
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);

/** The text of each ```mermaid block of a Markdown report. */
function diagramsOf(md: string): string[] {
  return [...md.matchAll(/^```mermaid\n([\s\S]*?)\n```$/gm)].map((m) => m[1]!);
}

/** Each finding of the report with the diagram under its heading (`#### F1 on …`), in the report's order. */
function diagramsByFinding(report: Report, md: string): { finding: Finding; diagram: string }[] {
  const sections = new Map(md.split(/^(?=#### )/m).map((s) => [/^#### (\S+) on /.exec(s)?.[1], s] as const));
  return report.findings.map((finding) => {
    const section = sections.get(finding.id);
    expect(section, finding.id).toBeDefined();
    const diagrams = diagramsOf(section!);
    expect(diagrams, finding.id).toHaveLength(1);
    return { finding, diagram: diagrams[0]! };
  });
}

/** Mermaid's line types (sequenceDb LINETYPE). */
const SOLID = 0;
const DOTTED = 1;
const NOTE = 2;
const DOTTED_CROSS = 4;

interface Expected {
  participants: string[];
  /** In order; each message's text must contain every string of `has`. */
  messages: { from: string; to: string; type: number; has: string[] }[];
}

/**
 * What a finding's diagram must show, from the spec: the authority (when a lock event is drawn),
 * the workers in the order they first act, the resource (when a write is drawn); per event its
 * request and result (an expiry or revocation is one message from the authority); a note on the
 * decisive event. Labels are the values as every format shows them (control characters visible).
 */
function expected(f: Finding): Expected {
  const items = f.evidence.map((e, i) => ({ e, i, ms: Date.parse(e.ts) })).sort((a, b) => a.ms - b.ms || a.i - b.i).map((x) => x.e);
  const owner = (e: EvidenceItem) => (e.ownerId === undefined ? '(no owner id)' : escapeTerminal(e.ownerId));
  const participants = [
    ...(items.some((e) => e.type !== 'write') ? ['authority'] : []),
    ...new Set(items.map(owner)),
    ...(items.some((e) => e.type === 'write') ? [escapeTerminal(f.resource)] : []),
  ];
  const A = 'authority';
  const R = escapeTerminal(f.resource);
  const messages: Expected['messages'] = [];
  const t = (s: string | undefined) => (s === undefined ? [] : [escapeTerminal(s)]);
  for (const e of items) {
    const w = owner(e);
    const token = e.fenceToken !== undefined ? [`token=${e.fenceToken}`] : [];
    if (e.type === 'acquire' || e.type === 'keepalive' || e.type === 'release') {
      messages.push({ from: w, to: A, type: SOLID, has: [e.type, ...(e.type === 'acquire' ? [] : t(e.leaseId)), ...(e.type === 'release' ? token : [])] });
      messages.push({ from: A, to: w, type: DOTTED, has: [e.result, ...(e.type === 'acquire' && e.result === 'granted' ? [...t(e.leaseId), ...token] : [])] });
    } else if (e.type === 'expire' || e.type === 'revoke') {
      messages.push({ from: A, to: w, type: DOTTED_CROSS, has: [...t(e.leaseId), e.type === 'revoke' ? 'revoked' : e.observer === 'worker' && !e.inferred ? 'lost' : 'expired'] });
    } else if (e.type === 'write') {
      messages.push({ from: w, to: R, type: SOLID, has: ['write', ...(token.length > 0 ? token : ['no token']), ...t(e.operationId)] });
      messages.push({ from: R, to: w, type: DOTTED, has: [e.result, ...(e.observer === 'worker' ? ["worker's view"] : [])] });
    }
    if (e.decisive) {
      const last = messages[messages.length - (e.type === 'expire' || e.type === 'revoke' ? 1 : 2)]!;
      messages.push({ from: last.from, to: last.to, type: NOTE, has: ['decisive', escapeTerminal(e.role), `${escapeTerminal(e.file.split(/[\\/]/).pop()!)}:${e.line})`] });
    }
  }
  return { participants, messages };
}

interface Drawn {
  /** From mermaid.parse(): the config its directives and front matter set (when asked for). */
  config?: Record<string, unknown>;
  /** From the parsed diagram's database. */
  actors: { alias: string; label: string }[];
  messages: { from: string; to: string; type: number; text: string }[];
  /** From the rendered SVG. */
  svg: {
    role: string | null;
    topActors: { alias: string; label: string }[];
    bottomActors: number;
    messageTexts: string[];
    noteTexts: string[];
    /** Elements that are not SVG drawing (img, script, foreignObject, iframe…). */
    foreign: string[];
  };
}

/**
 * Parse and render diagrams in the page, one after another; what mermaid made of each. With
 * `config`, also what mermaid.parse() says the directives set (a parse more: about 9 ms each).
 */
async function draw(page: Page, diagrams: string[], config = true): Promise<Drawn[]> {
  return page.evaluate(async ([texts, withConfig]) => {
    interface Mermaid {
      parse(t: string): Promise<{ config: Record<string, unknown> }>;
      render(id: string, t: string): Promise<{ svg: string }>;
      mermaidAPI: { getDiagramFromText(t: string): Promise<{ db: { getActors(): Map<string, { name: string; description: string }>; getMessages(): { from: string; to: string; type: number; message: string }[] } }> };
    }
    const m = (window as unknown as { mermaid: Mermaid }).mermaid;
    // Mermaid keeps entity codes as placeholders in its database and decodes them in the SVG.
    const decode = (s: string) => s.replace(/ﬂ°°(\d+)¶ß/g, (_, n: string) => String.fromCodePoint(Number(n)));
    const box = document.getElementById('out')!;
    const out = [];
    for (const [i, text] of texts.entries()) {
      const config = withConfig ? (await m.parse(text)).config : undefined;
      const { db } = await m.mermaidAPI.getDiagramFromText(text);
      const actors = [...db.getActors().values()].map((a) => ({ alias: a.name, label: decode(a.description) }));
      const messages = db.getMessages().map((x) => ({ from: x.from, to: x.to, type: x.type, text: decode(x.message) }));
      const { svg } = await m.render(`d${i}`, text);
      box.innerHTML = svg;
      const s = box.querySelector('svg')!;
      const label = (r: Element) => r.parentElement!.querySelector('text')!.textContent!;
      const top = [...s.querySelectorAll('rect.actor-top')].map((r) => ({ x: Number(r.getAttribute('x')), alias: r.getAttribute('name')!, label: label(r) }));
      const svgOut = {
        role: s.getAttribute('aria-roledescription'),
        topActors: top.sort((a, b) => a.x - b.x).map(({ alias, label }) => ({ alias, label })),
        bottomActors: s.querySelectorAll('rect.actor-bottom').length,
        messageTexts: [...s.querySelectorAll('text.messageText')].map((t) => t.textContent!),
        noteTexts: [...s.querySelectorAll('text.noteText')].map((t) => t.textContent!),
        foreign: [...s.querySelectorAll('*')].map((e) => e.tagName).filter((n) => !/^(svg|g|rect|text|tspan|line|path|marker|defs|style|polygon|circle|symbol|use|title|desc)$/i.test(n)),
      };
      box.innerHTML = '';
      out.push({ config, actors, messages, svg: svgOut });
    }
    return out;
  }, [diagrams, config] as const);
}

/** The drawn diagram shows exactly the expected participants and messages. */
function check(d: Drawn, want: Expected, what: string): void {
  if (d.config !== undefined) expect(d.config, what).toEqual({});
  expect(d.svg.role, what).toBe('sequence');
  expect(d.svg.foreign, what).toEqual([]);
  const label = new Map(d.actors.map((a) => [a.alias, a.label]));
  expect(d.actors.map((a) => a.label), what).toEqual(want.participants);
  expect(d.svg.topActors, what).toEqual(d.actors);
  // Mirrored at the bottom, as by default: no directive turned it off.
  expect(d.svg.bottomActors, what).toBe(d.actors.length);
  expect(d.messages.map((x) => `${label.get(x.from)} ${x.type} ${label.get(x.to)}`), what).toEqual(want.messages.map((x) => `${x.from} ${x.type} ${x.to}`));
  for (const [k, x] of want.messages.entries()) for (const s of x.has) expect(d.messages[k]!.text, `${what}: message ${k}`).toContain(s);
  // What the SVG shows is what was parsed, in order.
  expect(d.svg.messageTexts, what).toEqual(d.messages.filter((x) => x.type !== NOTE).map((x) => x.text));
  expect(d.svg.noteTexts, what).toEqual(d.messages.filter((x) => x.type === NOTE).map((x) => x.text));
}

/** A log whose names and values carry Mermaid syntax, directives, HTML and Markdown. */
const HOSTILE = {
  owner: 'evil\nA->>B: injected',
  owner2: 'participant Z as x; Z->>Z: hi',
  resource: 'r %%{init:{"sequence":{"mirrorActors":false}}}%% end',
  lease: 'L1;W1->>R: semi #35; -->> #59; %% comment',
  op: '`x` ``` <br> <br/>: wrap: style:x#59; classDef a fill:#f00;',
  value: '<img src=x onerror=window.__pwned=1><b>b</b>',
  token: '12345678901234567890123',
};

function hostileLog(): string {
  const h = HOSTILE;
  const lines = [
    { ts: '2026-03-01T10:00:00Z', type: 'acquire', resource: h.resource, ownerId: h.owner, leaseId: h.lease, fenceToken: h.token, ttlMs: 1000 },
    { ts: '2026-03-01T10:00:02Z', type: 'expire', resource: h.resource, ownerId: h.owner, leaseId: h.lease },
    { ts: '2026-03-01T10:00:03Z', type: 'acquire', resource: h.resource, ownerId: h.owner2, leaseId: 'L2', fenceToken: '12345678901234567891000' },
    { ts: '2026-03-01T10:00:04Z', type: 'write', resource: h.resource, ownerId: h.owner2, leaseId: 'L2', fenceToken: '12345678901234567891000', value: 'ok', result: 'accepted' },
    { ts: '2026-03-01T10:00:05Z', type: 'write', resource: h.resource, ownerId: h.owner, leaseId: h.lease, operationId: h.op, fenceToken: h.token, value: h.value, result: 'accepted' },
  ];
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

const tmp = mkdtempSync(join(tmpdir(), 'stalewrite-mmd-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function hostileReport(): Promise<Report> {
  const f = join(tmp, 'evil %%{init}%% `x`;#.ndjson');
  writeFileSync(f, hostileLog());
  return analyze({ files: [f] });
}

/** One line of diagram text as stalewrite writes it: our own syntax, log content only as escaped text. */
const LINE = /^(sequenceDiagram|  participant (A|R|W\d+) as T|  (A|R|W\d+)(->>|-->>|--x)(A|R|W\d+): T|  Note over (A|R|W\d+),(A|R|W\d+): T)$/;
/** Escaped text: no `#` or `;` but those of entity codes, and only letters, digits, space and `._=(),/-` otherwise. */
const TEXT = /^(?:[\p{L}\p{N} ._=(),/-]|#\d+;)+$/u;

function checkSyntax(diagram: string): void {
  expect(diagram.length).toBeLessThanOrEqual(MAX_DIAGRAM_TEXT);
  for (const line of diagram.split('\n')) {
    const text = /^(  participant \w+ as |  \w+(?:->>|-->>|--x)\w+: |  Note over \w+,\w+: )(.*)$/.exec(line);
    expect(line.replace(/^(  participant \w+ as |  \w+(?:->>|-->>|--x)\w+: |  Note over \w+,\w+: ).*$/, '$1T'), line).toMatch(LINE);
    if (text !== null) expect(text[2], line).toMatch(TEXT);
  }
}

describe('mermaid text', () => {
  it('writes every character outside the kept set as an entity code', () => {
    expect(mermaidText('worker-a (lease-A, token=1)')).toBe('worker-a (lease-A, token=1)');
    expect(mermaidText('a;b#c:d%%{init}%%')).toBe('a#59;b#35;c#58;d#37;#37;#123;init#125;#37;#37;');
    expect(mermaidText('-->> <br> `x` &amp;')).toBe('--#62;#62; #60;br#62; #96;x#96; #38;amp#59;');
    expect(mermaidText('line\nA->>B')).toBe('line#92;nA-#62;#62;B');
    expect(mermaidText('ключ 😀 ß')).toBe('ключ #128512; ß');
    // Mermaid's own entity placeholder characters cannot be forged: ° and ¶ are encoded.
    expect(mermaidText('ﬂ°°60¶ß')).toBe('ﬂ#176;#176;60#182;ß');
  });

  it('the hostile log gives diagrams of our syntax only, with log content as escaped text', async () => {
    const md = renderMarkdown(await hostileReport());
    const diagrams = diagramsOf(md);
    expect(diagrams.length).toBeGreaterThan(0);
    for (const d of diagrams) checkSyntax(d);
  });

  it('caps a diagram under Mermaid\'s maxTextSize, keeps the decisive event, and says what it left out', async () => {
    const report = await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')] });
    const f = report.findings[0]!;
    const big = huge(f);
    const d = sequenceDiagram(big)!;
    const text = d.lines.join('\n');
    expect(text.length).toBeLessThanOrEqual(MAX_DIAGRAM_TEXT);
    expect(d.omitted).toBeGreaterThan(0);
    expect(d.drawn + d.omitted).toBe(big.evidence.length);
    expect(d.clipped).toBe(true);
    expect(text).toMatch(/^  Note over W1001,R: decisive - late write accepted/m);
    expect(text).toMatch(/Note over A,R: \d+ more of the 1001 events are not drawn/);
    checkSyntax(text);
    const md = renderMarkdown({ ...report, findings: [big] });
    expect(md).toContain(`The diagram leaves out ${d.omitted} of the 1001 events, to stay under Mermaid's text size limit; the evidence table lists them all.`);
    expect(md).toContain('Names and values longer than 64 characters are shortened in the diagram');
  });
});

/** A finding with 1000 long-named expiries before its decisive write. */
function huge(f: Finding): Finding {
  const filler: EvidenceItem[] = Array.from({ length: 1000 }, (_, i) => ({ ...f.evidence[1]!, ownerId: `owner-${i}-${'x;'.repeat(60)}`, leaseId: `lease-${i}-${'%'.repeat(80)}`, decisive: undefined }));
  return { ...f, evidence: [...filler, f.evidence[f.evidence.length - 1]!] };
}

describe('README', () => {
  it('shows the diagram the Markdown report draws for the article\'s late write', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Sequence diagrams in Markdown'));
    const shown = diagramsOf(section)[0];
    const r = await runCli(['analyze', '-f', 'markdown', 'fixtures/article-unsafe.ndjson']);
    expect(diagramsOf(r.stdout)[0]).toBe(shown);
  });
});

describe('markdown report caps its diagrams', () => {
  it('draws the first maxDiagrams findings and says which have none', async () => {
    const report = await analyze({ files: [join(FIXTURES, 'mixed-incidents.ndjson')] });
    expect(report.findings.length).toBeGreaterThan(2);
    const md = renderMarkdown(report, { maxDiagrams: 2 });
    expect(diagramsOf(md)).toHaveLength(2);
    expect(md).toContain(`> Sequence diagrams are drawn for the first 2 of the ${report.findings.length} findings shown; the other ${report.findings.length - 2} have none (raise --max-diagrams).`);
    expect(md.split('*No sequence diagram: past the first 2 findings (--max-diagrams).*')).toHaveLength(report.findings.length - 2 + 1);
    expect(diagramsOf(renderMarkdown(report))).toHaveLength(report.findings.length);
    expect(() => renderMarkdown(report, { maxDiagrams: -1 })).toThrow(OptionError);
    expect(() => renderMarkdown(report, { maxDiagrams: 1.5 })).toThrow(/maxDiagrams must be a whole number ≥ 0/);
  });

  it('--max-diagrams reaches the Markdown report, and is checked', async () => {
    const md = await runCli(['analyze', '-f', 'markdown', '--max-diagrams', '0', join(FIXTURES, 'article-unsafe.ndjson')]);
    expect(md.code).toBe(1);
    expect(diagramsOf(md.stdout)).toHaveLength(0);
    expect(md.stdout).toContain('> Sequence diagrams are drawn for the first 0 of the 2 findings shown');
    const bad = await runCli(['analyze', '-f', 'markdown', '--max-diagrams', '-1', join(FIXTURES, 'article-unsafe.ndjson')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-diagrams must be a whole number ≥ 0');
  });
});

describe.skipIf(!available)('markdown diagrams in chromium with mermaid 11', () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const dialogs: string[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    // Offline: nothing but the page's own content may load.
    await page.route('**/*', (r) => (r.request().url().startsWith('data:') ? r.continue() : r.abort()));
    await page.setContent('<!doctype html><html><body><div id="out"></div></body></html>');
    await page.addScriptTag({ content: readFileSync(join(ROOT, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js'), 'utf8') });
    await page.evaluate(() => (window as unknown as { mermaid: { initialize(c: object): void } }).mermaid.initialize({ startOnLoad: false }));
  }, 60000);

  afterAll(async () => {
    await browser?.close();
  });

  it('mermaid 11 is what renders', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'mermaid', 'package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toMatch(/^11\./);
  });

  it('every fixture\'s Markdown report: each finding\'s diagram has the participants and messages of its evidence', async () => {
    const cases = findCases([FIXTURES]);
    expect(cases.length).toBeGreaterThan(30);
    let drawn = 0;
    for (const c of cases) {
      const { report } = await runCase(c);
      const md = renderMarkdown(report);
      // One per finding shown (fixtures stay under every cap).
      const pairs = diagramsByFinding(report, md);
      expect(diagramsOf(md), c.name).toHaveLength(report.findings.length);
      // No directive can come from a fixture's text (the hostile test checks the config).
      const results = await draw(page, pairs.map((p) => p.diagram), false);
      for (const [k, d] of results.entries()) check(d, expected(pairs[k]!.finding), `${c.name} ${pairs[k]!.finding.id}`);
      drawn += results.length;
    }
    expect(drawn).toBeGreaterThan(100);
    expect(errors).toEqual([]);
  }, 120000);

  it('the article\'s late write, exactly', async () => {
    const report = await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')] });
    const [d] = await draw(page, diagramsOf(renderMarkdown(report)).slice(0, 1));
    expect(d!.svg.topActors.map((a) => a.label)).toEqual(['authority', 'worker-a', 'worker-b', 'resource-7']);
    expect(d!.svg.messageTexts).toEqual([
      't=0 acquire',
      'granted lease-A, token=1',
      't=10s lease-A expired',
      't=11s acquire',
      'granted lease-B, token=2',
      't=12s write(v2, token=2, op=op-b-1)',
      'accepted',
      't=13s write(v1, token=1, op=op-a-1)',
      'accepted',
    ]);
    expect(d!.svg.noteTexts).toHaveLength(1);
    expect(d!.svg.noteTexts[0]).toBe('decisive - late write accepted (article-unsafe.ndjson:7)');
  });

  it('hostile log content adds no message, participant or directive, and runs nothing', async () => {
    const report = await hostileReport();
    const pairs = diagramsByFinding(report, renderMarkdown(report));
    const results = await draw(page, pairs.map((p) => p.diagram));
    for (const [k, d] of results.entries()) check(d, expected(pairs[k]!.finding), pairs[k]!.finding.id);
    const stale = pairs.findIndex((p) => p.finding.rule === 'accepted-stale-write');
    expect(stale).toBeGreaterThanOrEqual(0);
    const d = results[stale]!;
    // Exactly: the authority, the two workers (named with their raw text, newline made visible), the resource.
    expect(d.svg.topActors.map((a) => a.label)).toEqual(['authority', 'evil\\nA->>B: injected', HOSTILE.owner2, HOSTILE.resource]);
    expect(d.messages.filter((m) => m.type !== NOTE)).toHaveLength(9);
    expect(d.svg.messageTexts.join('\n')).not.toMatch(/^injected$|^hi$/m);
    expect(d.svg.messageTexts[1]).toBe(`granted ${HOSTILE.lease}, token=${HOSTILE.token}`);
    expect(d.svg.messageTexts[7]).toBe(`t=5s write(${HOSTILE.value}, token=${HOSTILE.token}, op=${HOSTILE.op})`);
    // No directive took effect: parse saw no config, actors are still mirrored, the theme is the default.
    expect(d.config).toEqual({});
    expect(d.svg.bottomActors).toBe(4);
    // Nothing ran, nothing was loaded, no markup was made from the log.
    expect(d.svg.foreign).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a capped diagram renders as a sequence diagram (not mermaid\'s size error), with its decisive note', async () => {
    const report = await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')] });
    const big = huge(report.findings[0]!);
    const text = sequenceDiagram(big)!.lines.join('\n');
    const [d] = await draw(page, [text]);
    expect(d!.svg.role).toBe('sequence');
    expect(d!.config).toEqual({});
    expect(d!.svg.noteTexts[0]).toMatch(/^decisive - late write accepted/);
    expect(d!.svg.noteTexts[1]).toMatch(/^\d+ more of the 1001 events are not drawn \(diagram text limit\) - see the evidence table$/);
    expect(d!.svg.topActors.length).toBe(d!.actors.length);
    expect(d!.svg.messageTexts.length).toBe(d!.messages.filter((m) => m.type !== NOTE).length);
  });
});
