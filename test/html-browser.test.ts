/** The HTML report in a real browser (Debian's chromium, driven headless by playwright-core). */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { renderHtml } from '../src/report/html.js';
import { FIXTURES } from './helpers/run.js';

const CHROMIUM = process.env.STALEWRITE_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
// In CI the browser is installed by .ci/run: its absence is a failure there, not a skip.
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);

describe.skipIf(!available)('html report in chromium', () => {
  let browser: Browser;
  const dir = mkdtempSync(join(tmpdir(), 'stalewrite-html-'));

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 60000);

  afterAll(async () => {
    await browser?.close();
  });

  async function open(name: string, html: string) {
    const file = join(dir, name);
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width: 1100, height: 1400 } });
    const dialogs: string[] = [];
    const requests: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) requests.push(r.url());
    });
    await page.goto(pathToFileURL(file).href);
    await page.waitForLoadState('load');
    return { page, dialogs, requests };
  }

  it('renders lanes with the late write highlighted and linked to its finding, and a non-blank screenshot', async () => {
    const report = await analyze({ files: [join(FIXTURES, 'article-unsafe.ndjson')], timelines: {} });
    const { page, requests } = await open('unsafe.html', renderHtml(report));
    expect(await page.locator('svg').count()).toBe(1);
    expect(await page.locator('svg text.lname').allTextContents()).toEqual(['worker-a', 'worker-b']);
    // The late write is ringed, and the ring links to the accepted-stale-write finding.
    const ring = page.locator('svg a circle.ring');
    expect(await ring.count()).toBeGreaterThan(0);
    const href = await page.locator('svg a', { has: page.locator('circle.ring') }).first().getAttribute('href');
    const target = page.locator(`article${href}`);
    expect(await target.locator('code').first().textContent()).toBe('accepted-stale-write');
    const box = await ring.first().boundingBox();
    expect(box!.width).toBeGreaterThan(5);
    // Lease bars, keepalive ticks and token labels are drawn.
    expect(await page.locator('svg rect.lease').count()).toBe(2);
    expect(await page.locator('svg line.ka').count()).toBe(2);
    expect(await page.locator('svg text.tok').allTextContents()).toEqual(['#2', '#1']);
    const shot = await page.screenshot({ fullPage: true, path: join(dir, 'unsafe.png') });
    // A blank page compresses to a few KB; this one has text, tables and a drawing.
    expect(shot.length).toBeGreaterThan(30000);
    const colours = await page.evaluate(() => {
      const seen = new Set<string>();
      for (const el of Array.from(document.querySelectorAll('svg *'))) seen.add(getComputedStyle(el).fill);
      return seen.size;
    });
    expect(colours).toBeGreaterThan(3);
    expect(requests).toEqual([]);
    await page.close();
  }, 60000);

  it('shows injected markup in every field as text and executes nothing', async () => {
    const evil = `<script>window.__pwned=1;alert(1)</script>"><img src=x onerror="window.__pwned=2;alert(2)"><svg onload="alert(3)">`;
    const rec = (o: Record<string, unknown>) => JSON.stringify({ resource: `res-${evil}`, ownerId: `own-${evil}`, leaseId: `lease-${evil}`, operationId: `op-${evil}`, value: evil, msg: evil, ...o });
    const log = [
      rec({ ts: '2026-03-01T10:00:00Z', type: 'acquire', fenceToken: 1, ttlMs: 1000 }),
      rec({ ts: '2026-03-01T10:00:01Z', type: 'write', ownerId: 'B', leaseId: 'L2', fenceToken: 2, result: 'accepted' }),
      rec({ ts: '2026-03-01T10:00:03Z', type: 'write', fenceToken: 1, result: 'accepted' }),
    ].join('\n');
    const file = join(dir, `evil-${'"><script>alert(4)</script>'.replace(/[/]/g, '_')}.ndjson`);
    writeFileSync(file, log + '\n');
    const report = await analyze({ files: [file], timelines: { all: true } });
    expect(report.findings.length).toBeGreaterThan(0);
    const { page, dialogs, requests } = await open('evil.html', renderHtml(report));
    expect(dialogs).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('[onerror], [onload]').count()).toBe(0);
    const text = await page.locator('body').textContent();
    expect(text).toContain('<script>window.__pwned=1;alert(1)</script>');
    expect(requests).toEqual([]);
    await page.close();
  }, 60000);
});
