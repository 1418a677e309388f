/**
 * The HTML report in a real browser (Debian's chromium, driven headless by playwright-core): one
 * browser for the file, one page reused. Measured, not assumed: bounding boxes of marks and labels
 * on every fixture and on the two real etcd runs, hover and pin, the focus on the evidence,
 * filters, the size and load of a 10 000-resource incident, and that log content never runs.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import { SCRIPT } from '../src/generated/html-page.js';
import { renderHtml } from '../src/report/html.js';
import { FIXTURES } from './helpers/run.js';
import { articleIncidents } from '../bench/incidents.mjs';

const CHROMIUM = process.env.STALEWRITE_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
// In CI the browser is installed by .ci/run: its absence is a failure there, not a skip.
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);

const ETCD = ['etcd-unsafe', 'etcd-safe'].map((m) => join(FIXTURES, 'real', m));

/** Every fixture case (files and the options its expectation asks for), the real etcd runs among them. */
function cases(): { name: string; files: string[]; options: Partial<AnalyzeOptions> }[] {
  return findCases([FIXTURES]).map((c) => ({ name: c.name.slice(FIXTURES.length + 1), files: c.files, options: analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined) }));
}

/** In the page: every pair of overlapping boxes among marks, labels, axis labels and lane names, and every bar outside its axis. */
function problemsInPage(): string[] {
  const out: string[] = [];
  document.querySelectorAll('.card svg.pic').forEach((svg, n) => {
    const boxes: { what: string; r: DOMRect }[] = [];
    const add = (sel: string, what: (e: Element) => string) =>
      svg.querySelectorAll(sel).forEach((e) => {
        const r = e.getBoundingClientRect();
        if (r.width > 0 || r.height > 0) boxes.push({ what: what(e), r });
      });
    add('.mk', (e) => `mark ${e.getAttribute('aria-label')}`);
    add('text.lbl', (e) => `label ${e.textContent}`);
    add('text.tick', (e) => `axis label ${e.textContent}`);
    add('text.lname', (e) => `lane ${e.textContent}`);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i]!.r;
        const b = boxes[j]!.r;
        if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push(`svg ${n} (${(svg as SVGElement).dataset.view}): ${boxes[i]!.what} overlaps ${boxes[j]!.what}`);
      }
    }
    const axis = Array.from(svg.querySelectorAll('line.axis')).map((l) => l.getBoundingClientRect());
    const lo = Math.min(...axis.map((r) => r.left));
    const hi = Math.max(...axis.map((r) => r.right));
    svg.querySelectorAll('rect.lease').forEach((bar) => {
      const r = bar.getBoundingClientRect();
      if (r.left < lo - 0.5 || r.right > hi + 0.5) out.push(`svg ${n}: a lease bar (${bar.textContent}) runs outside the axis ${lo}..${hi}: ${r.left}..${r.right}`);
    });
  });
  return out;
}

describe.skipIf(!available)('html report in chromium', () => {
  let browser: Browser;
  let page: Page;
  const dir = mkdtempSync(join(tmpdir(), 'stalewrite-html-'));
  const dialogs: string[] = [];
  const requests: string[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) requests.push(r.url());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
  }, 60000);

  afterAll(async () => {
    await browser?.close();
  });

  /** Write the page, open it, wait for its script to have drawn what is on screen. */
  async function open(name: string, html: string): Promise<void> {
    const file = join(dir, name);
    writeFileSync(file, html);
    await page.goto(pathToFileURL(file).href);
    await page.waitForFunction(() => document.documentElement.dataset.ready !== undefined);
    expect(await page.evaluate(() => document.documentElement.dataset.ready)).toBe('yes');
  }

  const report = (files: string[], options: Partial<AnalyzeOptions> = {}) => analyze({ files, timelines: { all: true }, ...options });

  it("the article's incident: lanes, the late write ringed, a strict CSP, nothing fetched, the reader's colour scheme and white paper", async () => {
    await open('unsafe.html', renderHtml(await report([join(FIXTURES, 'article-unsafe.ndjson')])));
    expect(await page.locator('.card svg.pic').count()).toBe(1);
    expect(await page.locator('.card svg text.lname').allTextContents()).toEqual(['worker-a', 'worker-b']);
    expect(await page.locator('.card svg text.lbl').allTextContents()).toEqual(['#1', '#1', '#2', '#2']);
    expect(await page.locator('.card svg rect.lease').count()).toBe(2);
    const ring = page.locator('.card .mk', { has: page.locator('.ring') });
    expect(await ring.count()).toBe(1);
    expect(await ring.getAttribute('aria-label')).toBe('write accepted, t=13s, worker-a, token 1, article-unsafe.ndjson:7');
    // The CSP allows exactly the page's own script and style, by hash.
    const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    const hash = `'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`;
    expect(csp).toContain(`script-src ${hash};`);
    expect(csp).toMatch(/default-src 'none'; script-src 'sha256-[^']+'; style-src 'sha256-[^']+';/);
    expect(csp).not.toContain('unsafe-inline');
    // A blank page compresses to a few KB; this one has text, tables and a drawing.
    const shot = await page.screenshot({ fullPage: true, path: join(dir, 'unsafe.png') });
    expect(shot.length).toBeGreaterThan(30000);
    // It follows the reader's colour scheme, and prints on white.
    const colours = () => page.evaluate(() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.querySelector('.card .lane0')!).fill]);
    const light = await colours();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await colours();
    expect(dark[0]).not.toBe(light[0]);
    expect(dark[1]).not.toBe(light[1]);
    await page.emulateMedia({ colorScheme: 'dark', media: 'print' });
    expect(await colours()).toEqual(light);
    await page.emulateMedia({ colorScheme: 'light', media: 'screen' });
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
  }, 60000);

  it('no overlaps: on every fixture and the two real etcd runs, marks and labels never overlap and bars stay inside the axis, in both views', async () => {
    let pictures = 0;
    let marks = 0;
    for (const c of cases()) {
      const r = await report(c.files, c.options);
      await open('fixture.html', renderHtml(r));
      await page.evaluate(() => window.dispatchEvent(new Event('beforeprint'))); // draws every card
      pictures += await page.locator('.card svg.pic').count();
      marks += await page.locator('.card .mk').count();
      expect(await page.evaluate(problemsInPage), `${c.name}, default view`).toEqual([]);
      const wholes = page.locator('.card .views button[data-view=whole]');
      for (let i = 0; i < (await wholes.count()); i++) await wholes.nth(i).click();
      expect(await page.evaluate(problemsInPage), `${c.name}, whole span`).toEqual([]);
    }
    expect(pictures).toBeGreaterThan(60);
    expect(marks).toBeGreaterThan(500);
    expect(errors).toEqual([]);
  }, 240000);

  it('focus: the etcd race opens on its evidence, quiet stretches broken out and marked; the whole span groups it', async () => {
    const r = await report(ETCD.slice(0, 1).flatMap((d) => ['worker-a.log', 'worker-b.log'].map((f) => join(d, f))), cases().find((c) => c.name.startsWith('real/etcd-unsafe'))!.options);
    // The accepted stale write's finding (ids are content ids: README "JSON report").
    const stale = r.findings.find((f) => f.rule === 'accepted-stale-write')!.id;
    await open('etcd-unsafe.html', renderHtml(r));
    const card = page.locator('.card').first();
    expect(await card.locator('.views button[aria-pressed=true]').textContent()).toBe('Focus on the evidence');
    expect(await card.locator('svg rect.brk').count()).toBeGreaterThanOrEqual(3);
    expect(await card.locator('svg text.tick.brl').allTextContents()).toEqual(expect.arrayContaining(['+3.324s']));
    // Every evidence row leads to a mark of its own (not a group), and back.
    const x = async (button: number) => {
      await card.locator('button.goto').nth(button).click();
      const label = await page.evaluate(() => document.activeElement?.getAttribute('aria-label'));
      expect(label).not.toMatch(/events at one spot/);
      return (await page.locator('.mk:focus').boundingBox())!.x;
    };
    // The stale write's rows: late writer granted, its lease's inferred end, newer writer granted, newer write, late write.
    const f2 = await card.locator(`article#${stale} button.goto`).count();
    expect(f2).toBe(5);
    const first = await card.locator(`article#${stale} button.goto`).first().evaluate((b) => Array.from(document.querySelectorAll('button.goto')).indexOf(b as HTMLButtonElement));
    const xs: number[] = [];
    for (let i = 0; i < f2; i++) xs.push(await x(first + i));
    // In time order, and apart: at true proportions B's grant, B's write and A's late write would
    // sit within 1.3 s of a 6.7 s axis, A's grant and its lease's end 2 s apart at the far left.
    for (let i = 1; i < xs.length; i++) expect(xs[i]! - xs[i - 1]!, `evidence ${i} and ${i + 1} of ${stale}`).toBeGreaterThan(40);
    await card.locator('.views button[data-view=whole]').click();
    expect(await card.locator('svg rect.brk').count()).toBe(0);
    const groups = await card.locator('.mk[aria-label*="events at one spot"]').count();
    expect(groups).toBeGreaterThan(0); // coincident events grouped, with a count
    expect(await card.locator('.mk .cnt').allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^\d+×$/)]));
    await page.locator('.card .views button[data-view=focus]').first().click();
    expect(await card.locator('svg rect.brk').count()).toBeGreaterThanOrEqual(3);
  }, 60000);

  it('focus: a 2 s race at the end of an hour of keepalives opens on the race, the hour left out behind a marked break', async () => {
    const t0 = Date.UTC(2026, 2, 1, 9, 0, 0);
    const iso = (ms: number) => new Date(ms).toISOString();
    const lines = [{ ts: iso(t0), type: 'acquire', resource: 'ledger/1', ownerId: 'worker-a', leaseId: 'L-a', fenceToken: 7, ttlMs: 90000 }];
    for (let m = 1; m < 60; m++) lines.push({ ts: iso(t0 + m * 60000), type: 'keepalive', resource: 'ledger/1', ownerId: 'worker-a', leaseId: 'L-a', ttlMs: 90000, result: 'ok' } as never);
    const end = t0 + 3_600_000;
    lines.push(
      { ts: iso(end - 1900), type: 'expire', resource: 'ledger/1', leaseId: 'L-a', observer: 'authority' } as never,
      { ts: iso(end - 1500), type: 'acquire', resource: 'ledger/1', ownerId: 'worker-b', leaseId: 'L-b', fenceToken: 8, ttlMs: 90000 },
      { ts: iso(end - 1000), type: 'write', resource: 'ledger/1', ownerId: 'worker-b', leaseId: 'L-b', fenceToken: 8, result: 'accepted' } as never,
      { ts: iso(end - 999), type: 'write', resource: 'ledger/1', ownerId: 'worker-a', leaseId: 'L-a', fenceToken: 7, result: 'accepted' } as never,
      { ts: iso(end), type: 'release', resource: 'ledger/1', ownerId: 'worker-b', leaseId: 'L-b', fenceToken: 8, result: 'released' } as never,
    );
    const log = join(dir, 'hour.ndjson');
    writeFileSync(log, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = await report([log]);
    expect(r.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
    await open('hour.html', renderHtml(r));
    const card = page.locator('.card').first();
    // The grant an hour earlier is evidence too: it and the race are drawn, the keepalives between left out.
    expect(await card.locator('svg text.tick.brl').allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^\+5\d ev$/)]));
    expect(await card.locator('.vnote').textContent()).toMatch(/Not in this view: 5\d events in left-out stretches \(Whole span shows them\)/);
    // Each event of the race has a mark of its own, a second apart or 1 ms apart.
    for (const what of ['lease expired or revoked', 'lease granted, t=59m58.5s', 'write accepted, t=59m59s, worker-b', 'write accepted, t=59m59.001s, worker-a', 'lease released']) {
      expect(await card.locator(`.mk[aria-label^="${what}"]`).count(), what).toBe(1);
    }
    const plot = (await card.locator('svg line.axis').last().boundingBox())!;
    const expire = (await card.locator('.mk[aria-label^="lease expired"]').boundingBox())!;
    const release = (await card.locator('.mk[aria-label^="lease released"]').boundingBox())!;
    expect(release.x - expire.x).toBeGreaterThan(150); // the race's 1.9 s over a good part of the plot
    expect(plot.width).toBeGreaterThan(0);
    await card.locator('.views button[data-view=whole]').click();
    // At true proportions the whole race is one spot at the end of the hour.
    expect(await card.locator('.mk[aria-label^="write accepted"]').count()).toBe(0);
    expect(await card.locator('.mk[aria-label*="events at one spot"]').count()).toBeGreaterThan(0);
  }, 60000);

  it('details in place: hover shows an event, a click pins it, Esc unpins; keyboard focus too; evidence rows and marks link both ways', async () => {
    const r = await report(['worker-a.log', 'worker-b.log'].map((f) => join(ETCD[0]!, f)), cases().find((c) => c.name.startsWith('real/etcd-unsafe'))!.options);
    const stale = r.findings.find((f) => f.rule === 'accepted-stale-write')!.id;
    await open('etcd-unsafe-2.html', renderHtml(r));
    const tip = page.locator('#tip');
    const late = page.locator('.card .mk[aria-label^="write accepted, t=6.664s"]');
    expect(await late.count()).toBe(1);
    await late.hover();
    await expect.poll(() => tip.isVisible()).toBe(true);
    const text = (await tip.textContent())!;
    expect(text).toContain('write accepted');
    expect(text).toContain('t=6.664s');
    expect(text).toMatch(/2026-12-01T15:46:14\.034Z/);
    expect(text).toContain('fixtures/real/etcd-unsafe/worker-a.log:4');
    expect(text).toContain('rowCount'); // a field of the line
    expect(text).toContain(`${stale} accepted-stale-write: late write accepted`);
    await page.mouse.move(5, 5);
    await expect.poll(() => tip.isVisible()).toBe(false);
    // A click pins: the tooltip stays when the pointer leaves; Esc closes it.
    await late.click();
    await page.mouse.move(5, 5);
    expect(await tip.isVisible()).toBe(true);
    expect(await tip.locator('button.x').count()).toBe(1);
    await page.keyboard.press('Escape');
    expect(await tip.isVisible()).toBe(false);
    // Keyboard: Tab reaches the marks; focus shows, Enter pins.
    await page.locator('.card .views button').first().focus();
    await page.keyboard.press('Tab'); // the second view button
    await page.keyboard.press('Tab'); // the first mark
    expect(await page.evaluate(() => document.activeElement?.classList.contains('mk'))).toBe(true);
    expect(await tip.isVisible()).toBe(true);
    expect(await tip.textContent()).toContain('keepalive ok');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    expect(await tip.textContent()).toContain('keepalive ok'); // still pinned on the first
    await page.keyboard.press('Escape');
    expect(await tip.isVisible()).toBe(false);
    // Row → mark: the late write's row focuses its mark and pins its details.
    await page.locator(`tr#${stale}-e5 button.goto`).click();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toMatch(/^write accepted, t=6\.664s/);
    expect(await tip.textContent()).toContain('late write accepted');
    // Mark → row: the link in the details scrolls to the row and marks it.
    await tip.locator('a.torow', { hasText: stale }).click();
    expect(await page.locator(`tr#${stale}-e5`).getAttribute('class')).toContain('flash');
    expect(await tip.isVisible()).toBe(false);
    // A link to a finding's evidence row, from outside the page, opens on it.
    await page.goto(`${page.url().split('#')[0]}#${stale}-e5`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'yes');
    await expect.poll(() => page.locator(`tr#${stale}-e5.flash`).count()).toBe(1);
    expect(await page.locator(`tr#${stale}-e5`).isVisible()).toBe(true);
    // Cells of the evidence tables do not wrap (the role may, between words): each text is on one line.
    const wrapped = await page.locator('table.ev td:not(.role)').evaluateAll((tds) => {
      const out: string[] = [];
      for (const td of tds) {
        const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
          const range = document.createRange();
          range.selectNodeContents(n);
          if (new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size > 1) out.push(n.textContent ?? '');
        }
      }
      return out;
    });
    expect(await page.locator('table.ev td:not(.role)').count()).toBeGreaterThan(40);
    expect(wrapped).toEqual([]);
    // The legend explains each symbol in words.
    const legend = await page.locator('.legend li').allTextContents();
    expect(legend.length).toBeGreaterThan(15);
    expect(legend.join('\n')).not.toMatch(/timeout \(#n/);
    expect(await page.locator('.legend li svg').count()).toBe(legend.length);
    expect(errors).toEqual([]);
  }, 60000);

  it('filters by rule, severity, certainty and readiness, and search by resource; print draws every card the filters show', async () => {
    const r = await report([join(FIXTURES, 'mixed-incidents.ndjson'), join(FIXTURES, 'rule-busy-rate-rising.ndjson'), join(FIXTURES, 'rule-clock-derived-token.ndjson')]);
    const resources = new Set(r.findings.map((f) => f.resource));
    expect(resources.size).toBeGreaterThan(4);
    await open('mixed.html', renderHtml(r));
    const visible = () => page.locator('#cards > .card:not([hidden])').count();
    const total = await page.locator('#cards > .card').count();
    expect(total).toBe(r.timelines!.length);
    expect(await visible()).toBe(total);
    const shown = page.locator('#shown');
    const pick = async (name: string, value: string) => {
      await page.locator(`#filters select[name=${name}]`).selectOption(value);
    };
    // Rule.
    const rule = 'accepted-stale-write';
    await pick('rule', rule);
    const withRule = new Set(r.findings.filter((f) => f.rule === rule).map((f) => f.resource));
    expect(await visible()).toBe(withRule.size);
    expect(await shown.textContent()).toBe(`Showing ${withRule.size} of ${total} resources, ${r.findings.filter((f) => f.rule === rule).length} of ${r.findings.length} findings`);
    await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
    const articles = await page.locator('#cards > .card:not([hidden]) article.finding:not([hidden]) h4 code').allTextContents();
    expect(new Set(articles)).toEqual(new Set([rule]));
    // Severity and certainty together with it.
    await pick('severity', 'error');
    await pick('certainty', 'definite');
    const strict = r.findings.filter((f) => f.rule === rule && f.severity === 'error' && f.certainty === 'definite');
    expect(await visible()).toBe(new Set(strict.map((f) => f.resource)).size);
    await page.locator('#filters button[type=reset]').click();
    await expect.poll(visible).toBe(total);
    // Readiness.
    await pick('readiness', 'verified');
    const verified = r.timelines!.filter((t) => t.readiness === 'verified').length;
    expect(verified).toBeGreaterThan(0);
    expect(await visible()).toBe(verified);
    for (const t of await page.locator('#cards > .card:not([hidden]) h3 span').allTextContents()) expect(t).toBe('verified');
    await page.locator('#filters button[type=reset]').click();
    // Search by resource.
    const one = [...resources][1]!;
    await page.locator('#filters input[name=q]').fill(one.slice(1, -1).toUpperCase());
    expect(await visible()).toBeGreaterThanOrEqual(1);
    const names = await page.locator('#cards > .card:not([hidden]) h3').allTextContents();
    expect(names.some((n) => n.startsWith(`${one} `))).toBe(true);
    for (const n of names) expect(n.toLowerCase()).toContain(one.slice(1, -1).toLowerCase());
    await page.locator('#filters input[name=q]').fill('no such resource at all');
    expect(await visible()).toBe(0);
    expect(await shown.textContent()).toMatch(/nothing matches/);
    await page.locator('#filters button[type=reset]').click();
    await expect.poll(visible).toBe(total);
    // Printing draws every card shown.
    await page.emulateMedia({ media: 'print' });
    await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
    expect(await page.locator('#cards > .card svg.pic').count()).toBe(total);
    expect(await page.locator('#filters').isVisible()).toBe(false);
    await page.emulateMedia({ media: 'screen' });
    expect(errors).toEqual([]);
  }, 60000);

  it('a 10 000-resource incident, every resource drawn: under 5 MB, opens and draws lazily (load time printed), search finds the last one', async () => {
    const log = join(dir, 'big.ndjson');
    const lines = articleIncidents(10_000);
    writeFileSync(log, lines.join('\n') + '\n');
    const r = await analyze({ files: [log], maxFindings: 20_000, timelines: { maxResources: 10_000 } });
    expect(r.timelines!.length).toBe(10_000);
    expect(r.timelinesOmitted).toBe(0);
    expect(r.findings.length).toBe(20_000);
    const html = renderHtml(r);
    const bytes = Buffer.byteLength(html);
    expect(bytes).toBeLessThan(5 * 1024 * 1024);
    const file = join(dir, 'big.html');
    writeFileSync(file, html);
    const started = Date.now();
    await page.goto(pathToFileURL(file).href);
    await page.waitForFunction(() => document.documentElement.dataset.ready !== undefined, undefined, { timeout: 60000 });
    const wall = Date.now() - started;
    expect(await page.evaluate(() => document.documentElement.dataset.ready)).toBe('yes');
    const ready = await page.evaluate(() => performance.getEntriesByName('stalewrite-ready')[0]!.startTime);
    console.log(`10 000-resource page: ${(bytes / 1024 / 1024).toFixed(2)} MB, ready ${ready.toFixed(0)} ms after navigation (${wall} ms wall, this machine, under load from other sessions)`);
    expect(await page.locator('#cards > .card').count()).toBe(10_000);
    await page.locator('#cards').scrollIntoViewIfNeeded();
    await expect.poll(() => page.locator('#cards svg.pic').count()).toBeGreaterThan(0);
    expect(await page.locator('#cards svg.pic').count()).toBeLessThan(50); // only what is near the screen
    await page.locator('#filters input[name=q]').fill('orders/9999');
    expect(await page.locator('#cards > .card:not([hidden])').count()).toBe(1);
    await page.locator('#cards > .card:not([hidden])').scrollIntoViewIfNeeded();
    await expect.poll(() => page.locator('#cards > .card:not([hidden]) svg.pic').count()).toBe(1);
    expect(await page.locator('#cards > .card:not([hidden]) h3').textContent()).toContain('orders/9999');
    expect(errors).toEqual([]);
  }, 180000);

  it('shows injected markup in every field as text and executes nothing, in plain and compressed data blocks', async () => {
    const evil = `<script>window.__pwned=1;alert(1)</script>"><img src=x onerror="window.__pwned=2;alert(2)"><svg onload="alert(3)"></script><!--`;
    const rec = (o: Record<string, unknown>) => JSON.stringify({ resource: `res-${evil}`, ownerId: `own-${evil}`, leaseId: `lease-${evil}`, operationId: `op-${evil}`, value: evil, msg: evil, [`k${evil}`]: evil, ...o });
    const incident = (n: number) => [
      rec({ ts: '2026-03-01T10:00:00Z', type: 'acquire', fenceToken: 1, ttlMs: 1000, resource: `res-${n}-${evil}` }),
      rec({ ts: '2026-03-01T10:00:01Z', type: 'write', ownerId: 'B', leaseId: 'L2', fenceToken: 2, result: 'accepted', resource: `res-${n}-${evil}` }),
      rec({ ts: '2026-03-01T10:00:03Z', type: 'write', fenceToken: 1, result: 'accepted', resource: `res-${n}-${evil}` }),
    ];
    for (const [name, n] of [['plain', 1], ['compressed', 60]] as const) {
      const file = join(dir, `evil-${name}-${'"><script>alert(4)</script>'.replace(/[/]/g, '_')}.ndjson`);
      writeFileSync(file, Array.from({ length: n }, (_, i) => incident(i)).flat().join('\n') + '\n');
      const r = await report([file]);
      expect(r.findings.length).toBeGreaterThan(0);
      const html = renderHtml(r);
      expect(html.includes('application/x-gzip-base64'), name).toBe(name === 'compressed');
      await open(`evil-${name}.html`, html);
      await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
      // Hover every mark (tooltips show fields of the lines), and switch every view.
      const marks = page.locator('.card .mk');
      for (let i = 0; i < Math.min(await marks.count(), 12); i++) await marks.nth(i).hover();
      const wholes = page.locator('.card .views button[data-view=whole]');
      for (let i = 0; i < Math.min(await wholes.count(), 3); i++) await wholes.nth(i).click();
      expect(dialogs).toEqual([]);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      // The scripts: data blocks, and the one constant script.
      const scripts = await page.locator('script').evaluateAll((els) => els.map((e) => ({ type: e.getAttribute('type'), text: e.textContent ?? '' })));
      const code = scripts.filter((x) => x.type === null);
      expect(code).toEqual([{ type: null, text: SCRIPT }]);
      for (const x of scripts.filter((s) => s.type !== null)) expect(['application/json', 'application/x-gzip-base64']).toContain(x.type);
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.evaluate(() => Array.from(document.querySelectorAll('*')).filter((e) => Array.from(e.attributes).some((a) => a.name.startsWith('on'))).length)).toBe(0);
      const text = await page.locator('body').textContent();
      expect(text).toContain('<script>window.__pwned=1;alert(1)</script>');
      expect(await page.locator('.card h3').first().textContent()).toContain(`<img src=x onerror=`);
      expect(requests).toEqual([]);
    }
  }, 90000);
});
