/**
 * adversarial: cases a review of the second hardening round found, each a reproducer from it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { compileMapping } from '../src/profiles/mapping.js';
import { RecentEvents } from '../src/ingest/duplicates.js';
import { BIN, FIXTURES, runCli } from './helpers/run.js';

const dir = mkdtempSync(join(tmpdir(), 'stalewrite-followups-'));
afterAll(() => {
  // The full-disk tests' small file system, also when a filter (-t) ran none of them, whose own hook then did not run.
  if (process.getuid?.() === 0) spawnSync('umount', [join(dir, 'small')], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
});
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('adversarial: mapping regexes', () => {
  it('escapes that JavaScript and RE2 read differently are refused at load (\\u{0,} is u* to V8 and backtracked for a minute)', () => {
    for (const regex of ['\\u{0,}\\u{0,}\\u{0,}!', '\\p{0,}\\p{0,}!', '\\x41+.{0,999}!', '\\u0041+.{0,999}!', '\\cA+.{0,999}!', 'x.*[\\c1]', 'x.*\\z']) {
      const spec = { fields: { resource: 'res', ts: 'time' }, match: [{ when: { msg: { regex } }, type: 'acquire' }] };
      expect(() => compileMapping(spec, 'm.json'), regex).toThrow(/uses the escape \\.+ which JavaScript and RE2 .* read differently/);
    }
    // An escaped backslash, punctuation and word boundaries stay fine.
    expect(() => compileMapping({ fields: { resource: 'res', ts: 'time' }, match: [{ when: { msg: { regex: '\\\\u\\.x\\b' } }, type: 'acquire' }] }, 'm.json')).not.toThrow();
  });
});

describe('adversarial: nothing is appended to an input', () => {
  it('timeline, map, map --suggest and check refuse a stdout that is one of their inputs', () => {
    const a = join(dir, 'a.ndjson');
    copyFileSync(join(FIXTURES, 'article-unsafe.ndjson'), a);
    const before = readFileSync(a, 'utf8');
    for (const args of [['timeline', '-r', 'resource-7', a], ['map', a], ['map', '--suggest', a], ['check', '--update', a]]) {
      const r = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" ${args.map((x) => `"${x}"`).join(' ')} >> "${a}"`], { encoding: 'utf8' });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/refusing to write the report to stdout: it is the input/);
    }
    expect(readFileSync(a, 'utf8')).toBe(before);
  });
});

describe('adversarial: stdout on a full file system', () => {
  const small = join(dir, 'small');
  mkdirSync(small);
  const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4k', 'tmpfs', small]).status === 0;
  afterAll(() => {
    if (mounted) spawnSync('umount', [small]);
  });
  it.skipIf(!mounted)('a report cut short by a full disk exits 2 with one line, for every format (a short write was dropped silently)', () => {
    const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'write', resource: `res-${i}`, fenceToken: '5', result: 'accepted' }));
    const input = file('safe-2000.ndjson', lines.join('\n') + '\n');
    for (const format of ['table', 'markdown', 'html', 'junit', 'json']) {
      const out = join(small, `out.${format}`);
      const r = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" analyze -f ${format} "${input}" > "${out}"`], { encoding: 'utf8' });
      expect(r.status, format).toBe(2);
      expect(r.stderr).toMatch(/^stalewrite: cannot write stdout: no space left on device$/m);
      rmSync(out, { force: true });
    }
  });

  it.skipIf(!mounted)('a live ndjson stream whose finding cannot be written exits 2 at once, not at the next finding (stdin kept open; -o and stdout)', async () => {
    const out = join(small, 'live.ndjson');
    const ways = [
      { how: '-o', cmd: process.execPath, args: [BIN, 'analyze', '-f', 'ndjson', '-o', out, '-'], says: /^stalewrite: cannot write .*live\.ndjson: no space left on device$/m },
      { how: 'stdout', cmd: 'bash', args: ['-c', `exec "${process.execPath}" "${BIN}" analyze -f ndjson - > "${out}"`], says: /^stalewrite: cannot write stdout: no space left on device$/m },
    ];
    for (const way of ways) {
      // Fill the small file system, so that the stream file is made but nothing can be written to it.
      const filler = join(small, 'filler');
      spawnSync('bash', ['-c', `head -c 65536 /dev/zero > "${filler}"`]);
      const child = spawn(way.cmd, way.args, { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      // A stale write, then silence: the input stays open, so no later finding or line comes.
      child.stdin.write(readFileSync(join(FIXTURES, 'article-unsafe.ndjson')));
      const code = await Promise.race([ended, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 8_000))]);
      if (code === 'waiting') child.kill('SIGKILL');
      child.stdin.destroy();
      rmSync(filler, { force: true });
      rmSync(out, { force: true });
      expect(code, `${way.how}: still running 8 s after its finding could not be written; stderr: ${stderr}`).toBe(2);
      expect(stderr, way.how).toMatch(way.says);
    }
  });
});

describe('adversarial: wrappers and repeated keys', () => {
  it('in a docker-wrapped input, an application line with `log` and `time` fields of its own is read as it is', async () => {
    const wrapped = JSON.stringify({ log: JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'acquire', resource: 'r', leaseId: 'L1', fenceToken: 5 }) + '\n', stream: 'stdout', time: '2026-03-01T10:00:00.000Z' });
    const own = JSON.stringify({ ts: '2026-03-01T10:00:01Z', type: 'write', resource: 'r', ownerId: 'a', leaseId: 'L1', fenceToken: 5, result: 'accepted', log: JSON.stringify({ ts: '2026-03-01T10:00:01Z', type: 'write', resource: 'r', fenceToken: 4, result: 'accepted' }) + '\n', time: '2026-03-01T10:00:01.000Z' });
    const r = await analyze({ files: [file('mixed-docker.log', `${wrapped}\n${own}\n`)] });
    expect(r.resources[0]!.highestAcceptedToken).toBe('5'); // not the 4 inside its `log` field
  });

  it('a repeated key of a carried field makes the line invalid, and nothing of it is carried', async () => {
    const { loadMapping } = await import('../src/profiles/mapping.js');
    const m = file('carry.json', JSON.stringify({ fields: { resource: 'lock', ts: 'time', ownerId: 'who', fenceToken: 'rev' }, carry: ['resource'], match: [{ when: { step: 'update' }, type: 'write', set: { result: 'accepted' } }] }));
    const log = file('carry.log', '{"time":"2026-03-01T10:00:00Z","step":"context","lock":"orders/1","lock":"orders/2"}\n{"time":"2026-03-01T10:00:01Z","step":"update","who":"w1","rev":"3"}\n');
    const r = await analyze({ files: [log], profile: loadMapping(m) });
    expect(r.input.problems.map((p) => [p.line, p.reason.slice(0, 40)])).toEqual([
      [1, 'key "lock" appears more than once in the'],
      [2, 'no resource (looked in lock)'],
    ]);
  });

  it('a repeated nested `host` (the clock domain) with different values is invalid', async () => {
    const r = await analyze({ files: [file('host.ndjson', '{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","leaseId":"L1","fenceToken":5,"host":{"name":"h1"},"host":{"name":"h2"}}\n')] });
    expect(r.input.problems[0]!.reason).toMatch(/key "host" appears more than once/);
  });
});

describe('adversarial: many inputs', () => {
  it('past 32 inputs, a pipe among them is read (it cannot be reopened at an offset)', () => {
    const names: string[] = [];
    for (let i = 0; i < 40; i++) names.push(file(`g${i}.ndjson`, JSON.stringify({ ts: `2026-03-01T10:00:${String(i).padStart(2, '0')}Z`, type: 'write', resource: `r${i}`, fenceToken: '1', result: 'accepted' }) + '\n'));
    const r = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" analyze -f json ${names.map((n) => `"${n}"`).join(' ')} <(cat "${join(FIXTURES, 'article-unsafe.ndjson')}")`], { encoding: 'utf8' });
    expect(r.stderr).not.toMatch(/ESPIPE/);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).input).toMatchObject({ lines: 47, events: 47 });
  });
});

describe('adversarial: bounded state', () => {
  it('clock-went-backwards follows at most 10 000 clock domains (a source per line took 770 MB for 1M lines)', async () => {
    const { MAX_DOMAINS } = await import('../src/rules/clock-went-backwards.js');
    expect(MAX_DOMAINS).toBe(10_000);
    const lines = Array.from({ length: 30_000 }, (_, i) => JSON.stringify({ ts: new Date(Date.UTC(2026, 2, 1, 10) + i).toISOString(), type: 'keepalive', resource: `r${i % 10}`, leaseId: 'L', source: `s${i}` }));
    const r = await analyze({ files: [file('sources.ndjson', lines.join('\n') + '\n')], rules: ['clock-went-backwards'] });
    expect(r.input.events).toBe(30_000);
    expect(r.findings).toEqual([]);
  });

  it('clock-went-backwards lets go of the domain followed longest, and keeps each file\'s domains apart', async () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 2, 1, 10) + ms).toISOString();
    const line = (ms: number, source: string, r = 'r') => JSON.stringify({ ts: at(ms), type: 'keepalive', resource: r, leaseId: 'L', source });
    const run = async (others: number) => {
      // Domain `a` first, then `others` further domains, then `a` again 100 s earlier: a step back, if `a` is still followed.
      const lines = [line(100_000, 'a'), ...Array.from({ length: others }, (_, i) => line(100_001 + i, `s${i}`)), line(0, 'a')];
      const r = await analyze({ files: [file(`domains-${others}.ndjson`, lines.join('\n') + '\n')], rules: ['clock-went-backwards'] });
      return r.findings.map((f) => f.rule);
    };
    expect(await run(9_999)).toEqual(['clock-went-backwards']);
    expect(await run(10_000)).toEqual([]);
    // One source in two files: two domains, whose lines interleaved are no step back.
    const f1 = file('one.ndjson', [line(50_000, 'h'), line(50_002, 'h')].join('\n') + '\n');
    const f2 = file('two.ndjson', [line(10_000, 'h'), line(10_003, 'h')].join('\n') + '\n');
    expect((await analyze({ files: [f1, f2], rules: ['clock-went-backwards'] })).findings).toEqual([]);
    const f3 = file('three.ndjson', [line(50_000, 'h'), line(10_000, 'h')].join('\n') + '\n');
    expect((await analyze({ files: [f3, f2], rules: ['clock-went-backwards'] })).findings.map((f) => f.rule)).toEqual(['clock-went-backwards']);
  });

  it('a run stopped by --strict or --max-invalid closes the files it was reading (Linux: open descriptors counted)', async () => {
    if (!existsSync('/proc/self/fd')) return;
    const fds = () => readdirSync('/proc/self/fd').length;
    // Several read chunks, a bad line in the first: the reader is still open when the run stops.
    const good = JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'keepalive', resource: 'r', leaseId: 'L', msg: 'x'.repeat(200) });
    const f = file('strict-stop.ndjson', ['not json', ...Array.from({ length: 20_000 }, () => good)].join('\n') + '\n');
    const g = file('strict-stop-2.ndjson', [good, good].join('\n') + '\n');
    const small = join(FIXTURES, 'invalid-lines.ndjson');
    for (const options of [{ files: [f], strict: true }, { files: [small], strict: true }, { files: [g, f], maxInvalid: 0 }, { files: [f], strict: true, workers: 'on' as const }]) {
      const before = fds();
      await expect(analyze(options)).rejects.toThrow();
      // Right after the run (a descriptor left open would be closed only when collected).
      expect(fds(), JSON.stringify(options)).toBe(before);
    }
  });

  it('duplicates: the remembered window holds no more than its bound', () => {
    const recent = new RecentEvents(1000, 500);
    for (let i = 0; i < 5000; i++) recent.seen({ ts: 7, type: 'write', resource: `r${i}`, result: 'accepted', observer: 'resource', source: 'f', file: 'f', line: i + 1 });
    expect(recent.size).toBe(500);
    expect(statSync(dir).isDirectory()).toBe(true);
  });
});
