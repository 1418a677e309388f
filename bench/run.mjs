#!/usr/bin/env node
// `npm run bench`: whole-process throughput and peak memory, measured in the same run against
// baselines, so the ratios hold on a noisy machine. Not a test: it prints a table and target lines.
//
//   node bench/run.mjs [--mb 300] [--resources 100000] [--runs 3] [--seed 1] [--smoke]
//                      [--sizes 50,100,200,400|none] [--rss-resources 1000,10000,100000,1000000|none] [--rss-mb 100]
//
// Measured, as whole processes, on one generated log (seeded, deterministic):
//   1. floor:    the project's line reader + JSON.parse, nothing else (bench/floor.mjs)
//   2. analyze:  stalewrite analyze --format json, all rules, on one thread (--workers off)
//   3. jq:       jq -c 'select(.type=="write")' (when jq is installed)
//   4. app-json: stalewrite analyze --profile app-json on the same incidents written pino-style
//   5. workers:  2 with --workers on: the file parsed on a second thread (the stretch goal)
// Runs are interleaved (1 2 3 4 5, 1 2 3 4 5, …) and ratios are medians of per-round ratios.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    mb: { type: 'string' },
    resources: { type: 'string', default: '100000' },
    runs: { type: 'string' },
    seed: { type: 'string', default: '1' },
    smoke: { type: 'boolean', default: false },
    sizes: { type: 'string' },
    'rss-resources': { type: 'string' },
    'rss-mb': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const smoke = a.smoke;
const mb = Number(a.mb ?? (smoke ? 2 : 300));
const runs = Number(a.runs ?? (smoke ? 1 : 3));
const list = (v) => (v === 'none' ? [] : v.split(',').map(Number));
const sizes = list(a.sizes ?? (smoke ? '1,2' : '50,100,200,400'));
const rssResources = list(a['rss-resources'] ?? (smoke ? '100,1000' : '1000,10000,100000,1000000'));
const rssMb = Number(a['rss-mb'] ?? (smoke ? 2 : 100));
const work = mkdtempSync(join(tmpdir(), 'stalewrite-bench-'));
const node = process.execPath;
const cli = join(root, 'bin', 'stalewrite.js');
const haveJq = spawnSync('jq', ['--version']).status === 0;

function generate(name, megabytes, resources, style = 'canonical') {
  const file = join(work, name);
  const out = createWriteStream(file);
  const r = spawnSync(node, [join(here, 'generate.mjs'), '--mb', String(megabytes), '--resources', String(resources), '--seed', a.seed, '--style', style], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
  out.end(r.stdout);
  return new Promise((resolve) => out.on('finish', () => resolve(file)));
}

/** Run a command to completion; wall time, and peak RSS from the kernel's high-water mark. */
function measure(cmd, args) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let peak = 0;
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]) * 1024);
      } catch {
        // exited
      }
    }, 10);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(poll);
      const wall = Number(process.hrtime.bigint() - start) / 1e9;
      if (code !== 0 && code !== 1 && code !== 3) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr.slice(-300)}`));
      else resolve({ wall, peak });
    });
  });
}

const median = (xs) => {
  const s = xs.slice().sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const lineCount = (f) => Number(spawnSync('wc', ['-l', f]).stdout.toString().trim().split(/\s+/)[0]);
const fmt = (n, d = 2) => n.toFixed(d);

try {
  console.log(`stalewrite bench: ${mb} MB, ${a.resources} resources, ${runs} run(s) each, seed ${a.seed}${smoke ? ' (smoke: sizes too small for the targets to mean anything)' : ''}`);
  console.log(`machine: node ${process.version}, ${spawnSync('nproc').stdout.toString().trim()} cores${haveJq ? ', ' + spawnSync('jq', ['--version']).stdout.toString().trim() : ', jq not installed'}`);
  const canonicalLog = await generate('canonical.ndjson', mb, Number(a.resources));
  const pinoLog = await generate('pino.ndjson', mb, Number(a.resources), 'pino');
  const bytes = statSync(canonicalLog).size;
  const lines = lineCount(canonicalLog);
  const pinoBytes = statSync(pinoLog).size;
  const pinoLines = lineCount(pinoLog);

  const cases = [
    { name: '1 floor (reader + JSON.parse)', cmd: node, args: [join(here, 'floor.mjs'), canonicalLog], bytes, lines },
    { name: '2 analyze --format json', cmd: node, args: [cli, 'analyze', '--workers', 'off', '--format', 'json', '-o', '/dev/null', '-q', canonicalLog], bytes, lines },
    ...(haveJq ? [{ name: "3 jq -c 'select(.type==\"write\")'", cmd: 'jq', args: ['-c', 'select(.type=="write")', canonicalLog], bytes, lines }] : []),
    { name: '4 analyze --profile app-json (pino)', cmd: node, args: [cli, 'analyze', '--workers', 'off', '--profile', 'app-json', '--format', 'json', '-o', '/dev/null', '-q', pinoLog], bytes: pinoBytes, lines: pinoLines },
    { name: '5 analyze --workers on (parsing thread)', cmd: node, args: [cli, 'analyze', '--workers', 'on', '--format', 'json', '-o', '/dev/null', '-q', canonicalLog], bytes, lines },
  ];
  const results = cases.map(() => []);
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < cases.length; i++) results[i].push(await measure(cases[i].cmd, cases[i].args));
  }
  const tput = (i, k) => cases[i].lines / results[i][k].wall;
  const rows = cases.map((c, i) => ({
    name: c.name,
    wall: median(results[i].map((x) => x.wall)),
    linesPerSec: median(results[i].map((_, k) => tput(i, k))),
    mbPerSec: median(results[i].map((x) => c.bytes / 1e6 / x.wall)),
    peak: median(results[i].map((x) => x.peak)),
  }));
  console.log('\n| run | wall s (median) | lines/s | MB/s | peak RSS MB |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${fmt(r.wall)} | ${Math.round(r.linesPerSec).toLocaleString('en-US')} | ${fmt(r.mbPerSec, 1)} | ${fmt(r.peak / 2 ** 20, 0)} |`);

  const idx = (prefix) => cases.findIndex((c) => c.name.startsWith(prefix));
  const ratio = (x, y) => median(results[x].map((_, k) => tput(x, k) / tput(y, k)));
  const floorI = idx('1');
  const analyzeI = idx('2');
  const jqI = idx('3');
  const appI = idx('4');
  const r21 = ratio(analyzeI, floorI);
  const r32 = jqI === -1 ? undefined : ratio(jqI, analyzeI);
  const r42 = ratio(appI, analyzeI);
  const r41 = ratio(appI, floorI);
  const workersI = idx('5');
  const r51 = ratio(workersI, floorI);
  const r52 = ratio(workersI, analyzeI);
  console.log('\nthroughput ratios (lines/s, median of per-round ratios):');
  console.log(`  2÷1 analyze / floor       ${fmt(r21)}`);
  console.log(`  3÷2 jq / analyze          ${r32 === undefined ? 'n/a (jq not installed)' : fmt(r32)}`);
  console.log(`  4÷2 app-json / analyze    ${fmt(r42)}`);
  console.log(`  5÷2 workers / analyze     ${fmt(r52)}`);
  console.log(`  5÷1 workers / floor       ${fmt(r51)}`);

  // Scaling: time against input size (should be linear), peak RSS against resources (should grow with resources only).
  console.log('\nscaling with input size (100k resources unless fewer requested):');
  console.log('| MB | lines | wall s | MB/s | peak RSS MB |\n|---|---|---|---|---|');
  for (const size of sizes) {
    const f = await generate(`size-${size}.ndjson`, size, Number(a.resources));
    const m = await measure(node, [cli, 'analyze', '--workers', 'off', '-f', 'json', '-o', '/dev/null', '-q', f]);
    console.log(`| ${size} | ${lineCount(f).toLocaleString('en-US')} | ${fmt(m.wall)} | ${fmt(statSync(f).size / 1e6 / m.wall, 1)} | ${fmt(m.peak / 2 ** 20, 0)} |`);
    if (!a.keep) rmSync(f);
  }
  console.log(`\npeak RSS against resources (${rssMb} MB of input each):`);
  console.log('| resources | resources seen | peak RSS MB |\n|---|---|---|');
  for (const n of rssResources) {
    const f = await generate(`res-${n}.ndjson`, rssMb, n);
    const m = await measure(node, [cli, 'analyze', '--workers', 'off', '-f', 'json', '-o', join(work, 'r.json'), '-q', f]);
    const seen = JSON.parse(readFileSync(join(work, 'r.json'), 'utf8')).summary.resources;
    console.log(`| ${n.toLocaleString('en-US')} | ${seen.toLocaleString('en-US')} | ${fmt(m.peak / 2 ** 20, 0)} |`);
    if (!a.keep) rmSync(f);
  }

  // Start-up to first output, on a tiny file.
  const tiny = join(root, 'fixtures', 'article-unsafe.ndjson');
  const starts = [];
  await measure(node, [cli, 'analyze', '-f', 'json', tiny]); // warm-up: the big runs above leave the page cache cold for the modules
  for (let i = 0; i < Math.max(7, runs); i++) starts.push((await measure(node, [cli, 'analyze', '-f', 'json', tiny])).wall);
  const startup = median(starts);
  console.log(`\nCLI start-up to first output (analyze on a 7-line file): ${fmt(startup, 3)} s`);

  const analyzePeak = rows[analyzeI].peak / 2 ** 20;
  const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
  console.log('\ntargets:');
  console.log(`${verdict(r21 >= 0.75)} full analysis >= 0.75x the floor's throughput (${fmt(r21)}x)`);
  console.log(r32 === undefined ? 'SKIP >= 4x jq\'s throughput (jq not installed)' : `${verdict(1 / r32 >= 4)} full analysis >= 4x jq's throughput (${fmt(1 / r32)}x)`);
  console.log(`${verdict(r41 >= 0.6)} app-json profile path >= 0.6x the floor (${fmt(r41)}x)`);
  if (mb >= 1000 && Number(a.resources) === 100000) console.log(`${verdict(analyzePeak <= 150)} peak RSS <= 150 MB for ${mb} MB with 100k resources (${fmt(analyzePeak, 0)} MB)`);
  else console.log(`SKIP peak RSS <= 150 MB for 1 GB with 100k resources (this run: ${fmt(analyzePeak, 0)} MB for ${mb} MB; run with --mb 1000)`);
  console.log(`${verdict(startup <= 0.35)} CLI start-up to first output <= 0.35 s (${fmt(startup, 3)} s)`);
  console.log(`${verdict(r51 >= 1.3)} stretch: both cores (--workers on) >= 1.3x the single-thread floor (${fmt(r51)}x)`);
} finally {
  if (!a.keep) rmSync(work, { recursive: true, force: true });
}
