#!/usr/bin/env node
// `npm run bench`: whole-process throughput and peak memory, measured in the same run against
// baselines, so the ratios hold on a noisy machine. Not a test: it prints a table and target lines.
//
//   node bench/run.mjs [--mb 300] [--resources 100000] [--runs 3] [--seed 1] [--smoke]
//                      [--sizes 50,100,200,400|none] [--rss-resources 1000,10000,100000,1000000|none] [--rss-mb 100]
//                      [--rss-gb] [--flat-mb 100|none] [--long-lines 5000|none] [--long-line-kb 900]
//
// Measured, as whole processes, on one generated log (seeded, deterministic):
//   1. floor:    the project's line reader + JSON.parse, nothing else (bench/floor.mjs)
//   2. analyze:  stalewrite analyze --format json, all rules, on one thread (--jobs 1)
//   3. jq:       jq -c 'select(.type=="write")' (when jq is installed)
//   4. app-json: stalewrite analyze --profile app-json on the same incidents written pino-style
//   5. jobs:     2 with --jobs 2: two partitions on two threads, merged (its report must be 2's, byte for byte)
//   6. default:  2 with no --jobs flag: what a user gets (auto)
//   7. DuckDB:   the headline answer, accepted stale writes, as one window query (bench/duckdb.mjs)
//   8. partition: 2 with --partition 1/4: one partition of four (the cost of skipping the others' lines)
//   9. ceiling:  two runs of 2 started together, each on one half of the log split beforehand by the
//                partition hash: what any split of the work over two cores can reach on this machine
// Runs are interleaved (1 2 3 4 5 6 7 8 9, 1 2 …) and ratios are medians of per-round ratios.
// A run that crashes (any exit but 0, 1 or 3; stalewrite exits 1 on stale writes and 3 when
// inconclusive) is reported, and the targets that need it FAIL with the reason.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, createReadStream, createWriteStream, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
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
    'rss-gb': { type: 'boolean', default: false },
    'flat-mb': { type: 'string' },
    'long-lines': { type: 'string' },
    'long-line-kb': { type: 'string', default: '900' },
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
const flatMb = a['flat-mb'] === 'none' ? 0 : Number(a['flat-mb'] ?? (smoke ? 1 : 100));
const FLAT_RESOURCES = 1000;
const longLines = a['long-lines'] === 'none' ? 0 : Number(a['long-lines'] ?? (smoke ? 50 : 5000));
const longLineBytes = Number(a['long-line-kb']) * 1000;
const work = mkdtempSync(join(tmpdir(), 'stalewrite-bench-'));
const node = process.execPath;
const cli = join(root, 'bin', 'stalewrite.js');
const haveJq = spawnSync('jq', ['--version']).status === 0;

function generate(name, megabytes, resources, style = 'canonical', extra = []) {
  const file = join(work, name);
  const fd = openSync(file, 'w');
  try {
    const r = spawnSync(node, [join(here, 'generate.mjs'), '--mb', String(megabytes), '--resources', String(resources), '--seed', a.seed, '--style', style, ...extra], { stdio: ['ignore', fd, 'inherit'] });
    if (r.status !== 0) throw new Error(`generate.mjs exited ${r.status ?? r.signal}`);
  } finally {
    closeSync(fd);
  }
  return file;
}

/**
 * Long lines: valid canonical acquire/write/release events, each with a `msg` of `msgBytes`
 * characters, written streaming (the file can be several GB).
 */
async function generateLongLines(name, count, msgBytes) {
  const file = join(work, name);
  const out = createWriteStream(file, { highWaterMark: 4 << 20 });
  const unit = 'lease log line with a long message; ';
  const body = unit.repeat(Math.ceil(msgBytes / unit.length)).slice(0, msgBytes);
  const t0 = Date.UTC(2026, 2, 1, 0, 0, 0);
  const cycle = ['acquire', 'write', 'release'];
  for (let i = 0; i < count; i++) {
    const type = cycle[i % 3];
    const n = Math.floor(i / 3);
    const r = n % 10;
    const token = Math.floor(n / 10) + 1;
    const ts = new Date(t0 + i).toISOString();
    const line =
      `{"ts":"${ts}","type":"${type}","resource":"res-${r}","ownerId":"w-${n % 7}","leaseId":"l${r}-${token}","fenceToken":"${token}"` +
      `${type === 'acquire' ? ',"ttlMs":10000' : ''}${type === 'write' ? `,"operationId":"op-${n}","result":"accepted"` : ''},"msg":"${i}:${body}"}\n`;
    if (!out.write(line)) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
  return file;
}

/**
 * Run a command to completion; wall time, and peak RSS from the kernel's high-water mark. Never
 * rejects: a crash comes back as { ok: false, reason }. `stdinFile` pipes a file in through cat;
 * `capture` keeps stdout (small outputs only).
 */
function measure(cmd, args, { stdinFile, capture = false } = {}) {
  return new Promise((resolve) => {
    const start = process.hrtime.bigint();
    let cat;
    let stdin = 'ignore';
    if (stdinFile !== undefined) {
      cat = spawn('cat', [stdinFile], { stdio: ['ignore', 'pipe', 'ignore'] });
      stdin = cat.stdout;
    }
    const child = spawn(cmd, args, { stdio: [stdin, capture ? 'pipe' : 'ignore', 'pipe'] });
    if (cat !== undefined) cat.stdout.destroy(); // the child holds its own copy of the pipe
    let peak = 0;
    let cpu = 0;
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
    if (capture) child.stdout.on('data', (d) => (stdout += d));
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]) * 1024);
        cpu = Math.max(cpu, cpuOf(readFileSync(`/proc/${child.pid}/stat`, 'utf8')));
      } catch {
        // exited
      }
    }, 10);
    child.on('error', (err) => {
      clearInterval(poll);
      resolve({ ok: false, wall: NaN, peak, cpu, reason: `${cmd} did not start: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearInterval(poll);
      const wall = Number(process.hrtime.bigint() - start) / 1e9;
      if (code === 0 || code === 1 || code === 3) resolve({ ok: true, wall, peak, cpu, code, stdout });
      else {
        const why = signal !== null ? `killed by ${signal}` : `exit ${code}${code === 134 ? ' (aborted, out of memory?)' : ''}`;
        const last = stderr.trim().split('\n').filter(Boolean).slice(-2).join(' / ').slice(0, 300);
        resolve({ ok: false, wall, peak, cpu, code, reason: `${why}${last ? `: ${last}` : ''}` });
      }
    });
  });
}

/** Clock ticks a second, for /proc/PID/stat (100 on Linux everywhere this runs). */
const TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;
/** The CPU seconds (user + system, every thread) of a /proc/PID/stat line: fields 14 and 15, counted after the name's ')'. */
function cpuOf(stat) {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

/**
 * Two commands started together; the wall time until both have ended, the higher peak RSS, the sum
 * of their CPU times. A crash of either is the pair's.
 */
async function measurePair(one, two) {
  const start = process.hrtime.bigint();
  const [x, y] = await Promise.all([measure(one.cmd, one.args), measure(two.cmd, two.args)]);
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  if (!x.ok || !y.ok) return { ...(x.ok ? y : x), wall };
  return { ok: true, wall, peak: Math.max(x.peak, y.peak), cpu: x.cpu + y.cpu, code: Math.max(x.code, y.code) };
}

/**
 * The canonical log split in two by the partition hash of each line's resource, as `--partition
 * I/2` splits it (README "Scaling out"), into two files: the input of case 9, the best any split of
 * the work over two cores can do (nothing read twice, nothing shared, nothing merged). Untimed.
 */
async function splitHalves(file) {
  const { partitionOf } = await import(join(root, 'dist', 'partition', 'hash.js'));
  const names = [join(work, 'half-0.ndjson'), join(work, 'half-1.ndjson')];
  const out = names.map((n) => createWriteStream(n));
  const { createInterface } = await import('node:readline');
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (text.length === 0) continue;
    const w = out[partitionOf(JSON.parse(text).resource, 2)];
    if (!w.write(text + '\n')) await new Promise((r) => w.once('drain', r));
  }
  await Promise.all(out.map((w) => new Promise((r) => w.end(r))));
  return names;
}

const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = xs.slice().sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const lineCount = (f) => Number(spawnSync('wc', ['-l', f]).stdout.toString().trim().split(/\s+/)[0]);
const fmt = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const MiB = (b) => b / 2 ** 20;
const staleCount = (reportFile) => JSON.parse(readFileSync(reportFile, 'utf8')).summary.byRule['accepted-stale-write'] ?? 0;

try {
  console.log(`stalewrite bench: ${mb} MB, ${a.resources} resources, ${runs} run(s) each, seed ${a.seed}${smoke ? ' (smoke: sizes too small for the targets to mean anything)' : ''}`);
  const duck = spawnSync(node, ['-e', "import('@duckdb/node-api').then(async (m) => { const c = await (await m.DuckDBInstance.create(':memory:')).connect(); console.log((await c.runAndReadAll('SELECT version()')).getRows()[0][0]); })"], { cwd: root, encoding: 'utf8' });
  const duckVersion = duck.status === 0 ? duck.stdout.trim() : undefined;
  console.log(`machine: node ${process.version}, ${spawnSync('nproc').stdout.toString().trim()} cores${haveJq ? ', ' + spawnSync('jq', ['--version']).stdout.toString().trim() : ', jq not installed'}, ${duckVersion ? `DuckDB ${duckVersion} (@duckdb/node-api)` : 'DuckDB not available'}`);

  // DuckDB's answer checked against stalewrite's on a small file with many incidents, untimed.
  let duckCheck;
  if (duckVersion) {
    const f = generate('duckdb-check.ndjson', smoke ? 1 : 5, 1000, 'canonical', ['--incident-every', '10']);
    const d = await measure(node, [join(here, 'duckdb.mjs'), f], { capture: true });
    const s = await measure(node, [cli, 'analyze', '--format', 'json', '-o', join(work, 'check.json'), '-q', f]);
    if (!d.ok || !s.ok) duckCheck = { ok: false, text: `check failed to run: ${d.reason ?? s.reason}` };
    else {
      const dn = JSON.parse(d.stdout).acceptedStaleWrites;
      const sn = staleCount(join(work, 'check.json'));
      duckCheck = { ok: dn === sn, text: `DuckDB ${dn}, stalewrite ${sn} accepted-stale-write findings on ${lineCount(f).toLocaleString('en-US')} lines: ${dn === sn ? 'match' : 'MISMATCH'}` };
    }
    console.log(`DuckDB check: ${duckCheck.text}`);
  }

  const canonicalLog = generate('canonical.ndjson', mb, Number(a.resources));
  const pinoLog = generate('pino.ndjson', mb, Number(a.resources), 'pino');
  const halves = await splitHalves(canonicalLog);
  const bytes = statSync(canonicalLog).size;
  const lines = lineCount(canonicalLog);
  const pinoBytes = statSync(pinoLog).size;
  const pinoLines = lineCount(pinoLog);
  const defaultReport = join(work, 'default.json');
  const oneThreadReport = join(work, 'jobs-1.json');
  const twoJobsReport = join(work, 'jobs-2.json');

  const cases = [
    { name: '1 floor (reader + JSON.parse)', cmd: node, args: [join(here, 'floor.mjs'), canonicalLog], bytes, lines },
    { name: '2 analyze --format json', cmd: node, args: [cli, 'analyze', '--jobs', '1', '--format', 'json', '-o', oneThreadReport, '-q', canonicalLog], bytes, lines },
    ...(haveJq ? [{ name: "3 jq -c 'select(.type==\"write\")'", cmd: 'jq', args: ['-c', 'select(.type=="write")', canonicalLog], bytes, lines }] : []),
    { name: '4 analyze --profile app-json (pino)', cmd: node, args: [cli, 'analyze', '--jobs', '1', '--profile', 'app-json', '--format', 'json', '-o', '/dev/null', '-q', pinoLog], bytes: pinoBytes, lines: pinoLines },
    { name: '5 analyze --jobs 2 (two partitions, two threads)', cmd: node, args: [cli, 'analyze', '--jobs', '2', '--format', 'json', '-o', twoJobsReport, '-q', canonicalLog], bytes, lines },
    { name: '6 analyze, default (no --jobs flag)', cmd: node, args: [cli, 'analyze', '--format', 'json', '-o', defaultReport, '-q', canonicalLog], bytes, lines },
    ...(duckVersion ? [{ name: '7 DuckDB headline query (read_json + window)', cmd: node, args: [join(here, 'duckdb.mjs'), canonicalLog], bytes, lines, capture: true }] : []),
    { name: '8 analyze --partition 1/4 (one partition of four)', cmd: node, args: [cli, 'analyze', '--partition', '1/4', '--format', 'json', '-o', join(work, 'part-1.json'), '-q', canonicalLog], bytes, lines },
    { name: '9 two runs of 2 on pre-split halves, together (the 2-core ceiling)', pair: halves.map((h, k) => ({ cmd: node, args: [cli, 'analyze', '--jobs', '1', '--format', 'json', '-o', join(work, `half-${k}.json`), '-q', h] })), bytes, lines },
  ];
  const results = cases.map(() => []);
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i];
      results[i].push(c.pair !== undefined ? await measurePair(c.pair[0], c.pair[1]) : await measure(c.cmd, c.args, { capture: c.capture }));
    }
  }
  const good = (i) => results[i].filter((x) => x.ok);
  const crash = (i) => results[i].find((x) => !x.ok)?.reason;
  const tput = (i, k) => cases[i].lines / results[i][k].wall;
  const rows = cases.map((c, i) => ({
    name: c.name,
    crashed: crash(i),
    wall: median(good(i).map((x) => x.wall)),
    linesPerSec: median(good(i).map((x) => c.lines / x.wall)),
    mbPerSec: median(good(i).map((x) => c.bytes / 1e6 / x.wall)),
    peak: median(good(i).map((x) => x.peak)),
    maxPeak: Math.max(0, ...results[i].map((x) => x.peak)),
  }));
  console.log('\n| run | wall s (median) | lines/s | MB/s | peak RSS MB |\n|---|---|---|---|---|');
  for (const r of rows) {
    const cells = `${fmt(r.wall)} | ${Number.isFinite(r.linesPerSec) ? Math.round(r.linesPerSec).toLocaleString('en-US') : 'n/a'} | ${fmt(r.mbPerSec, 1)} | ${fmt(MiB(r.peak), 0)}`;
    console.log(`| ${r.name} | ${cells} |${r.crashed ? ` crashed: ${r.crashed}` : ''}`);
  }

  const idx = (prefix) => cases.findIndex((c) => c.name.startsWith(prefix));
  /** Median of per-round throughput ratios x÷y over the rounds where both ran. */
  const ratio = (x, y) => {
    if (x === -1 || y === -1) return NaN;
    return median(results[x].flatMap((_, k) => (results[x][k].ok && results[y][k].ok ? [tput(x, k) / tput(y, k)] : [])));
  };
  const floorI = idx('1');
  const analyzeI = idx('2');
  const jqI = idx('3');
  const appI = idx('4');
  const jobsI = idx('5');
  const defaultI = idx('6');
  const duckI = idx('7');
  const partI = idx('8');
  const ceilI = idx('9');
  const r21 = ratio(analyzeI, floorI);
  const r32 = jqI === -1 ? undefined : ratio(jqI, analyzeI);
  const r42 = ratio(appI, analyzeI);
  const r41 = ratio(appI, floorI);
  const r51 = ratio(jobsI, floorI);
  const r52 = ratio(jobsI, analyzeI);
  // One partition's wall time as a share of the single run's: 1 / its throughput ratio.
  const r82 = 1 / ratio(partI, analyzeI);
  // The 2-core ceiling: two single runs on pre-split halves at once, against one on the whole (same lines).
  const r92 = ratio(ceilI, analyzeI);
  /** Cores a case kept busy: median over its rounds of CPU time (every thread, user + system) ÷ wall time. */
  const busy = (i) => median(good(i).filter((x) => x.cpu > 0).map((x) => x.cpu / x.wall));
  const r67 = ratio(defaultI, duckI); // same file, so the throughput ratio is duckdb wall ÷ default wall
  console.log('\nthroughput ratios (lines/s, median of per-round ratios):');
  console.log(`  2÷1 analyze / floor       ${fmt(r21)}`);
  console.log(`  3÷2 jq / analyze          ${r32 === undefined ? 'n/a (jq not installed)' : fmt(r32)}`);
  console.log(`  4÷2 app-json / analyze    ${fmt(r42)}`);
  console.log(`  5÷2 jobs 2 / jobs 1       ${fmt(r52)}`);
  console.log(`  5÷1 jobs 2 / floor        ${fmt(r51)}`);
  console.log(`  8÷2 wall, 1 of 4 / single ${fmt(r82)}`);
  console.log(`  9÷2 pre-split pair / single ${fmt(r92)}  (the most any split over two cores gave here)`);
  console.log(`  6÷7 default / DuckDB      ${duckI === -1 ? 'n/a (DuckDB not available)' : fmt(r67)}`);
  console.log(`cores kept busy (CPU time of every thread ÷ wall): 2 analyze ${fmt(busy(analyzeI))}, 5 --jobs 2 ${fmt(busy(jobsI))}, 9 the pair ${fmt(busy(ceilI))}`);

  // --jobs 2 must write --jobs 1's report, byte for byte (the last round of each).
  let identical;
  if (results[analyzeI].at(-1).ok && results[jobsI].at(-1).ok) {
    identical = readFileSync(oneThreadReport).equals(readFileSync(twoJobsReport));
    console.log(`--jobs 2 report vs --jobs 1: ${identical ? 'byte-identical' : 'DIFFERENT'}`);
  }

  // DuckDB's count on the bench file against the default run's report of the last round.
  let bigCheck;
  if (duckI !== -1) {
    const d = results[duckI].at(-1);
    const s = results[defaultI].at(-1);
    if (d.ok && s.ok) {
      const dn = JSON.parse(d.stdout).acceptedStaleWrites;
      const sn = staleCount(defaultReport);
      bigCheck = { ok: dn === sn, text: `DuckDB ${dn}, stalewrite ${sn} accepted stale writes on the bench file: ${dn === sn ? 'match' : 'MISMATCH'}` };
      console.log(`DuckDB check: ${bigCheck.text}`);
    }
  }

  // Scaling: time against input size (should be linear), peak RSS against resources (should grow with resources only).
  console.log('\nscaling with input size (100k resources unless fewer requested):');
  console.log('| MB | lines | wall s | MB/s | peak RSS MB |\n|---|---|---|---|---|');
  for (const size of sizes) {
    const f = generate(`size-${size}.ndjson`, size, Number(a.resources));
    const m = await measure(node, [cli, 'analyze', '--jobs', '1', '-f', 'json', '-o', '/dev/null', '-q', f]);
    console.log(`| ${size} | ${lineCount(f).toLocaleString('en-US')} | ${fmt(m.wall)} | ${fmt(statSync(f).size / 1e6 / m.wall, 1)} | ${fmt(MiB(m.peak), 0)} |${m.ok ? '' : ` crashed: ${m.reason}`}`);
    if (!a.keep) rmSync(f);
  }
  /** One run of analyze --jobs 1 -f json on `f`: its measure and the resources its report saw. */
  const measureSeen = async (f) => {
    const m = await measure(node, [cli, 'analyze', '--jobs', '1', '-f', 'json', '-o', join(work, 'r.json'), '-q', f]);
    return { ...m, seen: m.ok ? JSON.parse(readFileSync(join(work, 'r.json'), 'utf8')).summary.resources : NaN };
  };
  console.log(`\npeak RSS against resources (${rssMb} MB of input each):`);
  console.log('| resources | resources seen | peak RSS MB |\n|---|---|---|');
  const rssAt = new Map();
  for (const n of rssResources) {
    const f = generate(`res-${n}.ndjson`, rssMb, n);
    const m = await measureSeen(f);
    const seen = m.seen;
    rssAt.set(n, m);
    console.log(`| ${n.toLocaleString('en-US')} | ${m.ok ? seen.toLocaleString('en-US') : 'n/a'} | ${fmt(MiB(m.peak), 0)} |${m.ok ? '' : ` crashed: ${m.reason}`}`);
    if (!a.keep) rmSync(f);
  }

  // Peak RSS at 1 GB with 100k resources: the main runs when they are that, else one extra run if asked.
  let gb;
  if (mb >= 1000 && Number(a.resources) === 100000) {
    gb = { ok: rows[analyzeI].crashed === undefined && rows[defaultI].crashed === undefined, peak: Math.max(rows[analyzeI].maxPeak, rows[defaultI].maxPeak), reason: rows[analyzeI].crashed ?? rows[defaultI].crashed, what: `${mb} MB, cases 2 and 6` };
  } else if (a['rss-gb']) {
    const f = generate('gb.ndjson', 1000, 100000);
    const m = await measure(node, [cli, 'analyze', '--format', 'json', '-o', '/dev/null', '-q', f]);
    gb = { ...m, what: '1000 MB, default run' };
    console.log(`\npeak RSS, 1000 MB with 100k resources (default run): ${fmt(MiB(m.peak), 0)} MB${m.ok ? '' : `, crashed: ${m.reason}`}`);
    if (!a.keep) rmSync(f);
  }

  // Memory flat as events grow: a fixed resource count at two sizes.
  let flat;
  if (flatMb > 0) {
    console.log(`\npeak RSS against events (${FLAT_RESOURCES.toLocaleString('en-US')} resources):`);
    console.log('| MB | lines | wall s | peak RSS MB |\n|---|---|---|---|');
    const at = [];
    for (const size of [flatMb, 2 * flatMb]) {
      const f = generate(`flat-${size}.ndjson`, size, FLAT_RESOURCES);
      const m = await measure(node, [cli, 'analyze', '--jobs', '1', '-f', 'json', '-o', '/dev/null', '-q', f]);
      at.push(m);
      console.log(`| ${size} | ${lineCount(f).toLocaleString('en-US')} | ${fmt(m.wall)} | ${fmt(MiB(m.peak), 0)} |${m.ok ? '' : ` crashed: ${m.reason}`}`);
      if (!a.keep) rmSync(f);
    }
    flat = { one: at[0], two: at[1] };
  }

  // Memory flat as line length grows: long lines piped on stdin.
  let long;
  if (longLines > 0) {
    const f = await generateLongLines('long-lines.ndjson', longLines, longLineBytes);
    const size = statSync(f).size;
    const m = await measure(node, [cli, 'analyze', '--format', 'json', '-o', join(work, 'long.json'), '-q', '-'], { stdinFile: f });
    const events = m.ok ? JSON.parse(readFileSync(join(work, 'long.json'), 'utf8')).input.events : undefined;
    long = { ...m, size, events };
    console.log(`\nlong lines on stdin (cat file | stalewrite analyze --format json -): ${longLines.toLocaleString('en-US')} lines of ${fmt(longLineBytes / 1000, 0)} KB msg, ${fmt(size / 1e9, 2)} GB, ${events ?? 'n/a'} events read, ${fmt(m.wall)} s, ${fmt(size / 1e6 / m.wall, 1)} MB/s, peak RSS ${fmt(MiB(m.peak), 0)} MB${m.ok ? '' : `, crashed: ${m.reason}`}`);
    if (!a.keep) rmSync(f);
  }

  // Start-up to first output, on a tiny file.
  const tiny = join(root, 'fixtures', 'article-unsafe.ndjson');
  const starts = [];
  await measure(node, [cli, 'analyze', '-f', 'json', tiny]); // warm-up: the big runs above leave the page cache cold for the modules
  for (let i = 0; i < Math.max(7, runs); i++) {
    const m = await measure(node, [cli, 'analyze', '-f', 'json', tiny]);
    if (m.ok) starts.push(m.wall);
  }
  const startup = median(starts);
  console.log(`\nCLI start-up to first output (analyze on a 7-line file): ${fmt(startup, 3)} s`);

  // Target lines: every one from this run's measurements. PASS, FAIL (with the reason when a run
  // crashed) or SKIP (not measured, and what it needs).
  const line = (ok, text, detail) => console.log(`${ok ? 'PASS' : 'FAIL'} ${text} (${detail})`);
  const crashedOr = (reason, detail) => (reason ? `crashed: ${reason}` : detail);
  console.log('\ntargets:');
  {
    const why = rows[analyzeI].crashed ?? rows[floorI].crashed;
    line(!why && r21 >= 1.0, "analysis vs floor: full analysis (all rules, --format json, --jobs 1) >= 1.0x the floor's throughput", crashedOr(why, `${fmt(r21)}x`));
  }
  if (duckI === -1) console.log("SKIP default run vs DuckDB: not measured (DuckDB not available: npm install)");
  else {
    const why = rows[defaultI].crashed ?? rows[duckI].crashed;
    line(!why && r67 >= 1.0, "default run vs DuckDB: default run (no --jobs flag) wall time <= DuckDB's headline query on the same file", crashedOr(why, `DuckDB ${fmt(rows[duckI].wall)} s / default ${fmt(rows[defaultI].wall)} s = ${fmt(r67)}x, median of per-round ratios`));
  }
  if (gb === undefined) console.log(`SKIP peak RSS, 1 GB with 100k resources <= 150 MB: not measured (needs --mb 1000 or --rss-gb; this run: ${fmt(MiB(rows[analyzeI].maxPeak), 0)} MB for ${mb} MB)`);
  else line(gb.ok && MiB(gb.peak) <= 150, 'peak RSS, 1 GB with 100k resources <= 150 MB', crashedOr(gb.ok ? undefined : gb.reason, `${fmt(MiB(gb.peak), 0)} MB, ${gb.what}`));
  {
    // A million resources really seen: a log that visits each once first (--cover), large enough
    // for every one (about 760 bytes a cycle). The table's 100 MB run above reaches only part of them.
    let m;
    if (rssResources.includes(1000000) && !smoke) {
      const coverMb = Math.max(rssMb, 800);
      const f = generate('res-1m-cover.ndjson', coverMb, 1000000, 'canonical', ['--cover']);
      m = { ...(await measureSeen(f)), mb: coverMb };
      console.log(`\npeak RSS, 1,000,000 resources visited (${coverMb} MB, --cover): ${fmt(MiB(m.peak), 0)} MB, ${Number.isFinite(m.seen) ? m.seen.toLocaleString('en-US') : 'n/a'} resources seen${m.ok ? '' : ` crashed: ${m.reason}`}`);
      if (!a.keep) rmSync(f);
    }
    if (m === undefined) console.log('SKIP peak RSS, 1M resources <= 400 MB: not measured (needs 1000000 in --rss-resources, not --smoke)');
    else {
      // Only a run that saw (nearly) all of them measures the target: never a pass on fewer.
      const enough = m.ok && m.seen >= 990000;
      line(enough && MiB(m.peak) <= 400, 'peak RSS, 1M resources <= 400 MB', crashedOr(m.ok ? undefined : m.reason, `${fmt(MiB(m.peak), 0)} MB; ${Number.isFinite(m.seen) ? m.seen.toLocaleString('en-US') : 'n/a'} resources seen in ${m.mb} MB${m.ok && !enough ? ': too few seen to measure the target' : ''}`));
    }
  }
  if (flat === undefined) console.log('SKIP memory flat as events grow: not measured (needs --flat-mb)');
  else {
    const { one, two } = flat;
    const limit = 1.2 * MiB(one.peak) + 10;
    const why = one.ok ? (two.ok ? undefined : two.reason) : one.reason;
    line(!why && MiB(two.peak) <= limit, `memory flat as events grow: peak RSS at 2x the events <= 1.2x peak RSS at 1x + 10 MB (${FLAT_RESOURCES.toLocaleString('en-US')} resources, ${flatMb} and ${2 * flatMb} MB)`, crashedOr(why, `${fmt(MiB(one.peak), 0)} MB -> ${fmt(MiB(two.peak), 0)} MB, limit ${fmt(limit, 0)} MB`));
  }
  if (long === undefined) console.log('SKIP memory flat as line length grows: not measured (needs --long-lines N)');
  else {
    const expected = longLines;
    const why = long.ok ? (long.events === expected ? undefined : `${long.events} events read of ${expected} lines`) : long.reason;
    line(!why && MiB(long.peak) < 200, `memory flat as line length grows: peak RSS < 200 MB on ${longLines.toLocaleString('en-US')} lines of ${fmt(longLineBytes / 1000, 0)} KB on stdin`, why && !long.ok ? `crashed: ${why}` : `${fmt(MiB(long.peak), 0)} MB for ${fmt(long.size / 1e9, 2)} GB${why ? `; ${why}` : ''}`);
  }
  {
    const why = rows[appI].crashed ?? rows[floorI].crashed;
    line(!why && r41 >= 0.6, 'app-json vs floor: app-json profile path >= 0.6x the floor', crashedOr(why, `${fmt(r41)}x`));
  }
  line(startup <= 0.3, 'start-up: CLI start-up to first output <= 0.3 s', `${fmt(startup, 3)} s`);
  if (r32 === undefined) console.log("SKIP >= 4x jq's throughput (jq not installed)");
  else line(1 / r32 >= 4, "full analysis >= 4x jq's throughput", crashedOr(rows[jqI].crashed ?? rows[analyzeI].crashed, `${fmt(1 / r32)}x`));
  {
    const why = rows[jobsI].crashed ?? rows[analyzeI].crashed ?? (identical === false ? 'the --jobs 2 report differs from --jobs 1' : undefined);
    line(!why && r52 >= 1.7 && identical === true, '--jobs 2 vs --jobs 1: >= 1.7x the throughput, byte-identical reports', crashedOr(why, `${fmt(r52)}x on ${spawnSync('nproc').stdout.toString().trim()} cores, ${identical ? 'byte-identical' : 'not compared'}; ceiling here: two single runs on pre-split halves together ${fmt(r92)}x, the single run alone keeping ${fmt(busy(analyzeI))} cores busy`));
  }
  {
    const why = rows[partI].crashed ?? rows[analyzeI].crashed;
    line(!why && r82 <= 0.4, "partition skip cost: one partition of 4 takes <= 0.4x the single run's time (canonical path)", crashedOr(why, `${fmt(r82)}x, median of per-round ratios`));
  }
  line(r51 >= 1.3, 'stretch: both cores (--jobs 2) >= 1.3x the single-thread floor', crashedOr(rows[jobsI].crashed ?? rows[floorI].crashed, `${fmt(r51)}x`));
  if (duckCheck !== undefined || bigCheck !== undefined) {
    const checks = [duckCheck, bigCheck].filter(Boolean);
    line(checks.every((c) => c.ok), "sanity: DuckDB's count of accepted stale writes equals stalewrite's", checks.map((c) => c.text).join('; '));
  }
} finally {
  if (!a.keep) rmSync(work, { recursive: true, force: true });
}
