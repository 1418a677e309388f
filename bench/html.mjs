#!/usr/bin/env node
// The HTML report of a big incident: page size, and how long Chromium takes to open it. Not a test:
// it prints a table and target lines (PASS/FAIL/SKIP), like bench/run.mjs.
//
//   node bench/html.mjs [--resources 10000] [--runs 3] [--print]
//
// 1. generates the article's unsafe incident on N resources (bench/incidents.mjs: 2 findings each);
// 2. runs `stalewrite analyze -f html --max-drawn N --max-findings 2N` (every resource drawn,
//    every finding listed) and times it;
// 3. opens the page N times in Debian's chromium (playwright-core), and reads the page's own
//    performance marks: its script starting, the cards laid out, the first screen drawn
//    (`stalewrite-ready`, the load time) and every data block decoded;
// 4. with --print, times drawing every card for a printout (the beforeprint handler), once, last.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { articleIncidents } from './incidents.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({ options: { resources: { type: 'string', default: '10000' }, runs: { type: 'string', default: '3' }, print: { type: 'boolean', default: false } } });
const n = Number(a.resources);
const runs = Number(a.runs);
const CHROMIUM = process.env.STALEWRITE_CHROMIUM ?? '/usr/bin/chromium';
const dir = mkdtempSync(join(tmpdir(), 'stalewrite-bench-html-'));
const median = (xs) => xs.slice().sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)];

try {
  const log = join(dir, 'incident.ndjson');
  writeFileSync(log, articleIncidents(n).join('\n') + '\n');
  const out = join(dir, 'report.html');
  const started = Date.now();
  const r = spawnSync(process.execPath, [join(root, 'bin', 'stalewrite.js'), 'analyze', '-f', 'html', '--max-drawn', String(n), '--max-findings', String(2 * n), '-o', out, log], { encoding: 'utf8' });
  const render = Date.now() - started;
  if (r.status !== 1) throw new Error(`stalewrite exited ${r.status}: ${r.stderr}`);
  const mb = statSync(out).size / 1024 / 1024;
  console.log(`HTML report of ${n} resources, ${2 * n} findings: ${mb.toFixed(2)} MB, written in ${render} ms (analysis included)\n`);
  if (!existsSync(CHROMIUM)) {
    console.log(`PASS page size < 5 MB: ${mb.toFixed(2)} MB`);
    console.log(`SKIP opens in Chromium < 2 s: not measured (${CHROMIUM} is missing)`);
    process.exit(0);
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  const rows = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
    page.setDefaultTimeout(300000);
    for (let i = 0; i < runs; i++) {
      await page.goto(pathToFileURL(out).href);
      await page.waitForFunction(() => document.documentElement.dataset.decoded === 'yes', undefined, { timeout: 120000 });
      const m = await page.evaluate(() => {
        const at = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN;
        const nav = performance.getEntriesByType('navigation')[0];
        return { parsed: nav.domInteractive, script: at('stalewrite-start'), cards: at('stalewrite-cards'), ready: at('stalewrite-ready'), decoded: at('stalewrite-decoded'), heap: performance.memory?.usedJSHeapSize ?? NaN };
      });
      if (a.print && i === runs - 1) {
        m.print = await page.evaluate(() => {
          const t = performance.now();
          window.dispatchEvent(new Event('beforeprint'));
          return performance.now() - t;
        });
      }
      rows.push(m);
    }
  } finally {
    await browser.close();
  }
  const col = (k) => median(rows.map((x) => x[k]));
  console.log('| run | HTML parsed | script starts | cards laid out | first screen drawn (ready) | all data decoded | JS heap |' + (a.print ? ' print: every card drawn |' : ''));
  console.log('|---|---|---|---|---|---|---|' + (a.print ? '---|' : ''));
  const row = (name, x) => `| ${name} | ${x.parsed.toFixed(0)} ms | ${x.script.toFixed(0)} ms | ${x.cards.toFixed(0)} ms | ${x.ready.toFixed(0)} ms | ${x.decoded.toFixed(0)} ms | ${(x.heap / 1024 / 1024).toFixed(0)} MB |` + (a.print ? ` ${x.print === undefined ? '' : `${x.print.toFixed(0)} ms`} |` : '');
  rows.forEach((x, i) => console.log(row(String(i + 1), x)));
  console.log(row('median', { parsed: col('parsed'), script: col('script'), cards: col('cards'), ready: col('ready'), decoded: col('decoded'), heap: col('heap'), print: rows[rows.length - 1].print }));
  console.log('');
  console.log(`${mb < 5 ? 'PASS' : 'FAIL'} page size < 5 MB: ${mb.toFixed(2)} MB`);
  console.log(`${col('ready') < 2000 ? 'PASS' : 'FAIL'} opens in Chromium < 2 s: first screen drawn ${col('ready').toFixed(0)} ms after navigation (median of ${runs})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
