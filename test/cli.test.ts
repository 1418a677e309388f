import { mkdtempSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/run.js';

const unsafe = join('fixtures', 'article-unsafe.ndjson');
const safe = join('fixtures', 'article-safe.ndjson');
const reportSchema = JSON.parse(readFileSync(join(ROOT, 'schema', 'report.schema.json'), 'utf8')) as object;
const validateReport = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(reportSchema);

function errors(report: { findings: { rule: string; severity: string }[] }): string[] {
  return report.findings.filter((f) => f.severity === 'error').map((f) => f.rule);
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'stalewrite-'));
}

describe('stalewrite analyze', () => {
  it('finds the late write in the article incident and exits 1', async () => {
    const r = await runCli(['analyze', unsafe]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(errors(report)).toEqual(['accepted-stale-write']);
    // A's pause is visible too: its lease went longer than the TTL without renewal.
    expect(report.findings.map((f: { rule: string }) => f.rule)).toContain('keepalive-gap');
    expect(report.summary.verdict).toBe('violated');
  });

  it('says why it cannot write -o, exits 2, and leaves an earlier report alone when the input is bad', async () => {
    for (const format of ['json', 'ndjson', 'markdown']) {
      const r = await runCli(['analyze', '-f', format, '-o', join(tmp(), 'no', 'such', 'dir', 'r.json'), unsafe]);
      expect(r.code, format).toBe(2);
      expect(r.stderr).toMatch(/cannot write .*r\.json: its directory does not exist/);
      expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
    }
    const out = join(tmp(), 'r.json');
    writeFileSync(out, 'earlier report');
    const r = await runCli(['analyze', '-o', out, 'fixtures/no-such-input.ndjson']);
    expect(r.code).toBe(2);
    expect(readFileSync(out, 'utf8')).toBe('earlier report');
  });

  it('exits 0 on the safe resource and says verified', async () => {
    const r = await runCli(['analyze', safe]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(errors(report)).toEqual([]);
    expect(report.resources.map((x: { readiness: string }) => x.readiness)).toEqual(['verified']);
  });

  it('writes a JSON report that matches the published schema, with tokens as strings', async () => {
    for (const f of ['mixed-incidents.ndjson', 'big-token.ndjson', 'article-unsafe.ndjson']) {
      const r = await runCli(['analyze', '--format', 'json', join('fixtures', f)]);
      const report = JSON.parse(r.stdout);
      expect(validateReport(report), JSON.stringify(validateReport.errors)).toBe(true);
    }
    const big = JSON.parse((await runCli(['analyze', join('fixtures', 'big-token.ndjson')])).stdout);
    const tokens = big.findings.flatMap((f: { evidence: { fenceToken?: string }[] }) => f.evidence.map((e) => e.fenceToken));
    expect(tokens).toContain('9007199254740993');
    expect(tokens).toContain('9007199254740992');
  });

  it('prints a table with findings, evidence lines, readiness and input health', async () => {
    const r = await runCli(['analyze', '--format', 'table', unsafe]);
    expect(r.stdout).toContain('accepted-stale-write');
    expect(r.stdout).toContain('fixtures/article-unsafe.ndjson:7');
    expect(r.stdout).toContain('late write accepted');
    expect(r.stdout).toContain('violated');
    expect(r.stdout).toMatch(/input: 1 file, \d+ lines = \d+ events \+ \d+ blank \+ 0 ignored \+ 0 invalid/);
    // Not a TTY: no colour codes at all.
    expect(r.stdout).not.toMatch(/\u001b\[/);
  });

  it('reads stdin by default and as "-"', async () => {
    const input = readFileSync(join(ROOT, unsafe));
    for (const args of [['analyze'], ['analyze', '-']]) {
      const r = await runCli(args, { stdin: input });
      expect(r.code).toBe(1);
      const report = JSON.parse(r.stdout);
      expect(report.findings[0].evidence[0].file).toBe('stdin');
    }
  });

  it('reads gzip transparently, from a file and from stdin', async () => {
    const dir = tmp();
    const gz = gzipSync(readFileSync(join(ROOT, unsafe)));
    writeFileSync(join(dir, 'incident.log'), gz); // no .gz name: detected by magic bytes
    const a = await runCli(['analyze', join(dir, 'incident.log')]);
    expect(a.code).toBe(1);
    expect(errors(JSON.parse(a.stdout))).toEqual(['accepted-stale-write']);
    const b = await runCli(['analyze', '-'], { stdin: gz });
    expect(errors(JSON.parse(b.stdout))).toEqual(['accepted-stale-write']);
  });

  it('writes the report to a file with -o and keeps stdout empty', async () => {
    const out = join(tmp(), 'report.json');
    const r = await runCli(['analyze', unsafe, '-o', out]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(errors(JSON.parse(readFileSync(out, 'utf8')))).toEqual(['accepted-stale-write']);
  });

  it('honours --fail-on', async () => {
    expect((await runCli(['analyze', unsafe, '--fail-on', 'none'])).code).toBe(0);
    expect((await runCli(['analyze', unsafe, '--fail-on', 'warning'])).code).toBe(1);
    expect((await runCli(['analyze', safe, '--fail-on', 'error'])).code).toBe(0);
    // The safe log still shows A's pause as a warning.
    expect((await runCli(['analyze', safe, '--fail-on', 'warning'])).code).toBe(1);
  });

  it('reports invalid lines on stderr with file:line and goes on', async () => {
    const r = await runCli(['analyze', join('fixtures', 'mixed-incidents.ndjson')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/mixed-incidents\.ndjson:\d+: not valid JSON/);
    const report = JSON.parse(r.stdout);
    expect(report.input.invalid).toBe(8);
    expect(report.input.problems).toHaveLength(8);
  });

  it('--quiet keeps invalid lines off stderr', async () => {
    const r = await runCli(['analyze', '-q', join('fixtures', 'mixed-incidents.ndjson')]);
    expect(r.stderr).toBe('');
  });

  it('--strict exits 2 at the first invalid line, naming it', async () => {
    const r = await runCli(['analyze', '--strict', join('fixtures', 'mixed-incidents.ndjson')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/mixed-incidents\.ndjson:10: not valid JSON.*--strict/);
    expect(r.stdout).toBe('');
  });

  it('--max-invalid fails only past N', async () => {
    const f = join('fixtures', 'mixed-incidents.ndjson');
    expect((await runCli(['analyze', '--max-invalid', '8', f])).code).toBe(1);
    const r = await runCli(['analyze', '--max-invalid', '7', f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/more than 7 invalid lines/);
  });

  it('caps the listed problems but counts them all', async () => {
    const r = await runCli(['analyze', '-q', '--max-problems', '3', join('fixtures', 'mixed-incidents.ndjson')]);
    const report = JSON.parse(r.stdout);
    expect(report.input.problems).toHaveLength(3);
    expect(report.input.invalid).toBe(8);
    expect(report.input.problemsOmitted).toBe(5);
  });

  it('--max-line-bytes skips longer lines as invalid', async () => {
    const dir = tmp();
    const f = join(dir, 'long.ndjson');
    const ok = '{"ts":"2026-03-01T10:00:00Z","type":"write","resource":"r","fenceToken":1,"result":"accepted"}';
    writeFileSync(f, `${ok}\n{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"r","fenceToken":2,"result":"accepted","pad":"${'x'.repeat(500)}"}\n${ok}\n`);
    const r = await runCli(['analyze', '-q', '--max-line-bytes', '200', f]);
    const report = JSON.parse(r.stdout);
    // Lines 1 and 3 are one event delivered twice: counted once, as a duplicate.
    expect(report.input).toMatchObject({ lines: 3, events: 1, duplicates: 1, invalid: 1 });
    expect(report.input.problems[0]).toMatchObject({ line: 2 });
    expect(report.input.problems[0].reason).toMatch(/longer than the line-length cap/);
  });

  it('merges several files by timestamp: the split incident gives the merged findings', async () => {
    const dir = join('fixtures', 'split-mixed');
    const split = JSON.parse((await runCli(['analyze', join(dir, 'authority.ndjson'), join(dir, 'workers.ndjson'), join(dir, 'resource.ndjson')])).stdout);
    const merged = JSON.parse((await runCli(['analyze', join('fixtures', 'split-mixed.ndjson')])).stdout);
    const key = (r: { findings: { rule: string; resource: string }[] }) => r.findings.map((f) => `${f.rule}@${f.resource}`).sort();
    expect(key(split)).toEqual(key(merged));
    expect(split.resources.map((r: { readiness: string }) => r.readiness)).toEqual(merged.resources.map((r: { readiness: string }) => r.readiness));
    expect(split.input.files.map((f: { file: string }) => f.file)).toHaveLength(3);
  });

  it('exits 2 with a clear message for a missing file, a directory and an unreadable file', async () => {
    const missing = await runCli(['analyze', 'no-such-file.ndjson']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read no-such-file\.ndjson: no such file/);
    const dir = await runCli(['analyze', 'fixtures']);
    expect(dir.code).toBe(2);
    expect(dir.stderr).toMatch(/it is a directory/);
    expect(dir.stderr).not.toMatch(/at .*\.js:\d+/);
    if (process.getuid?.() !== 0) {
      const f = join(tmp(), 'locked.ndjson');
      writeFileSync(f, '{}\n');
      chmodSync(f, 0o000);
      const locked = await runCli(['analyze', f]);
      expect(locked.code).toBe(2);
      expect(locked.stderr).toMatch(/permission denied/);
    }
  });

  it('exits 2 on a truncated gzip after reporting what it read', async () => {
    const dir = tmp();
    const lines = readFileSync(join(ROOT, unsafe), 'utf8').repeat(200);
    const gz = gzipSync(Buffer.from(lines));
    writeFileSync(join(dir, 'cut.ndjson.gz'), gz.subarray(0, Math.floor(gz.length / 2)));
    const r = await runCli(['analyze', join(dir, 'cut.ndjson.gz')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cut\.ndjson\.gz/);
    const report = JSON.parse(r.stdout);
    expect(report.input.files[0].error).toMatch(/cut\.ndjson\.gz/);
  });

  it('exits 2 on usage errors', async () => {
    for (const args of [['analyze', '--format', 'xml', unsafe], ['analyze', '--fail-on', 'fatal', unsafe], ['analyze', '--clock-skew', 'soon', unsafe], ['analyze', '--bogus', unsafe], ['frobnicate'], ['analyze', '--rule', 'no-such-rule', unsafe], ['analyze', '--max-invalid', '-1', unsafe]]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^stalewrite: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('--rule runs only the named rules', async () => {
    const r = await runCli(['analyze', '--rule', 'missing-token', join('fixtures', 'mixed-incidents.ndjson'), '-q']);
    const report = JSON.parse(r.stdout);
    expect(new Set(report.findings.map((f: { rule: string }) => f.rule))).toEqual(new Set(['missing-token']));
  });

  it('escapes control characters from the log in the table', async () => {
    const f = join(tmp(), 'evil.ndjson');
    writeFileSync(
      f,
      '{"ts":"2026-03-01T10:00:00Z","type":"write","resource":"r\\u001b[2J\\u202e","ownerId":"w\\u0007","result":"accepted"}\n',
    );
    const r = await runCli(['analyze', '--format', 'table', f]);
    expect(r.stdout).not.toMatch(/[\u0007\u001b\u202e]/);
    expect(r.stdout).toContain('r\\x1b[2J\\u{202e}');
  });
});

describe('help', () => {
  it('shows examples for every command', async () => {
    for (const args of [['--help'], ['analyze', '--help'], ['rules', '--help'], ['explain', '--help'], ['timeline', '--help'], ['check', '--help'], ['map', '--help']]) {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Examples:/);
    }
    const top = await runCli(['--help']);
    expect(top.stdout).toMatch(/Exit codes: 0/);
  });

  it('prints the version', async () => {
    const r = await runCli(['--version']);
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  });
});

describe('progress', () => {
  it('is off when stderr is not a terminal, and never touches stdout when forced', async () => {
    const quiet = await runCli(['analyze', '-f', 'json', unsafe], { env: { CI: undefined } });
    expect(quiet.stderr).toBe('');
    const forced = await runCli(['analyze', '-f', 'json', '--progress', join('fixtures', 'mixed-incidents.ndjson'), '-q']);
    expect(() => JSON.parse(forced.stdout)).not.toThrow();
    expect(forced.stdout).not.toMatch(/MB\/s/);
  });
});

describe('stalewrite rules', () => {
  it('prints the table generated from the rule modules', async () => {
    const { rules } = await import('../src/rules/index.js');
    const r = await runCli(['rules', '--format', 'json']);
    expect(JSON.parse(r.stdout)).toEqual(rules.map((x) => x.meta));
    const md = await runCli(['rules', '--format', 'markdown']);
    for (const rule of rules) expect(md.stdout).toContain(`\`${rule.meta.id}\``);
    const table = await runCli(['rules']);
    expect(table.stdout).toContain('accepted-stale-write');
  });
});
