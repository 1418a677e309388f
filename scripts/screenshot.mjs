#!/usr/bin/env node
// The README's picture of the HTML report: the article's incident (fixtures/article-unsafe.ndjson)
// drawn by the built report in Debian's chromium, with the late write's details pinned, saved as
// docs/report-article-unsafe.png. Run after `npm run build`; check the result by looking at it.
//
//   node scripts/screenshot.mjs [--input LOG] [--out PNG] [--dark]
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: a } = parseArgs({ options: { input: { type: 'string', default: 'fixtures/article-unsafe.ndjson' }, out: { type: 'string', default: 'docs/report-article-unsafe.png' }, dark: { type: 'boolean', default: false } } });
const { analyze } = await import(pathToFileURL(join(root, 'dist', 'analyze.js')).href);
const { renderHtml } = await import(pathToFileURL(join(root, 'dist', 'report', 'html.js')).href);

const dir = mkdtempSync(join(tmpdir(), 'stalewrite-shot-'));
const browser = await chromium.launch({ executablePath: process.env.STALEWRITE_CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  // Relative to the clone, as a reader would run it: file names in the page are short.
  process.chdir(root);
  const report = await analyze({ files: [a.input], timelines: {} });
  const file = join(dir, 'report.html');
  writeFileSync(file, renderHtml(report));
  const page = await browser.newPage({ viewport: { width: 1040, height: 900 }, deviceScaleFactor: 1, colorScheme: a.dark ? 'dark' : 'light' });
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'yes');
  // The picture, the first finding's story and evidence; the late write's details pinned beside it.
  await page.evaluate(() => document.querySelector('.legend')?.removeAttribute('open'));
  // A viewport as tall as the page: nothing scrolls, nothing sticks.
  await page.setViewportSize({ width: 1040, height: await page.evaluate(() => document.documentElement.scrollHeight + 50) });
  const card = page.locator('.card').first();
  await card.locator('.mk', { has: page.locator('.ring') }).first().click();
  const box = await card.boundingBox();
  const story = await card.locator('article.finding').first().locator('table.ev').boundingBox();
  const tip = await page.locator('#tip').boundingBox();
  const top = box.y - 8;
  const bottom = Math.max(story.y + story.height, tip.y + tip.height) + 10;
  await page.screenshot({ path: join(root, a.out), clip: { x: 0, y: top, width: 1040, height: bottom - top } });
  console.log(`${a.out}: ${(statSync(join(root, a.out)).size / 1024).toFixed(0)} KB`);
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
