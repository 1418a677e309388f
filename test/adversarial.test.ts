/**
 * Hostile and broken input: every case gets a clear message naming file:line, or exits 2 with a
 * reason — never a crash (no stack trace), a hang, or unbounded memory.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli } from './helpers/run.js';

const dir = mkdtempSync(join(tmpdir(), 'stalewrite-adv-'));
const ok = (extra: Record<string, unknown> = {}) => JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'write', resource: 'r', fenceToken: 1, result: 'accepted', ...extra });
const STACK = /\n\s+at .*:\d+:\d+/;

function file(name: string, content: string | Buffer): string {
  const f = join(dir, name);
  writeFileSync(f, content);
  return f;
}

/** Analyse a file; the case must not crash and must name the line it complains about. */
async function analyseCase(name: string, content: string | Buffer, expectReason: RegExp, line?: number) {
  const f = file(name, content);
  const r = await runCli(['analyze', '-f', 'json', f]);
  expect(r.stderr, name).not.toMatch(STACK);
  expect([0, 1, 2], name).toContain(r.code);
  if (r.code === 2) {
    expect(r.stderr).toMatch(expectReason);
    return r;
  }
  const report = JSON.parse(r.stdout);
  const i = report.input;
  expect(i.lines + i.expanded).toBe(i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined);
  const p = report.input.problems.find((x: { reason: string }) => expectReason.test(x.reason));
  expect(p, `${name}: ${JSON.stringify(report.input.problems)}`).toBeDefined();
  if (line !== undefined) expect(p.line).toBe(line);
  expect(r.stderr).toContain(`${f}:${p.line}:`);
  return r;
}

describe('broken JSON', () => {
  it.each([
    ['truncated', `${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"wri\n`, /not valid JSON/, 2],
    ['array', `${ok()}\n[1,2,3]\n`, /expected a JSON object, got an array/, 2],
    ['string', `"just a string"\n`, /expected a JSON object, got string/, 1],
    ['number', `42\n`, /expected a JSON object, got number/, 1],
    ['null', `null\n`, /expected a JSON object, got null/, 1],
    ['duplicate keys', `${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"r","fenceToken":1,"fenceToken":5,"result":"accepted"}\n`, /key "fenceToken" appears more than once/, 2],
    ['escaped duplicate result', `${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"r","fenceToken":"1","result":"accepted","res\\u0075lt":"rejected-stale-fence"}\n`, /key "result" appears more than once in the line with different values \(once written "res\\u0075lt"\)/, 2],
    ['escaped duplicate resource', `${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"r","fenceToken":"1","result":"accepted","\\u0072esource":"other"}\n`, /key "resource" appears more than once/, 2],
    ['deep nesting', `${ok()}\n${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}\n`, /missing required field|not valid JSON/, 2],
  ])('%s', async (name, content, reason, line) => {
    await analyseCase(`${name}.ndjson`, content, reason, line);
  });
});

describe('bad bytes', () => {
  it('NUL bytes', async () => {
    await analyseCase('nul.ndjson', `${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"write"\u0000,"resource":"r"}\n`, /NUL byte/, 2);
  });

  it('invalid UTF-8, but not a U+FFFD written on purpose', async () => {
    const bad = Buffer.concat([Buffer.from(`${ok()}\n{"ts":"2026-03-01T10:00:01Z","type":"write","resource":"r`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(`","fenceToken":2,"result":"accepted"}\n`)]);
    await analyseCase('utf8.ndjson', bad, /not valid UTF-8/, 2);
    const r = await runCli(['analyze', '-f', 'json', file('fffd.ndjson', `${ok({ ownerId: 'a\ufffdb' })}\n`)]);
    expect(JSON.parse(r.stdout).input.invalid).toBe(0);
  });

  it('a BOM in the middle of a file', async () => {
    await analyseCase('bom.ndjson', `\ufeff${ok()}\n\ufeff${ok({ fenceToken: 2 })}\n`, /byte-order mark/, 2);
  });

  it('CR-only line ends', async () => {
    await analyseCase('cr.ndjson', `${ok()}\r${ok({ fenceToken: 2 })}\r${ok({ fenceToken: 3 })}\r`, /CR-only line ends/, 1);
  });
});

describe('size', () => {
  it('a 100 MB line with no newline is skipped with bounded memory', async () => {
    const f = join(dir, 'huge.ndjson');
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const parts = [Buffer.from(`${ok()}\n{"pad":"`)];
    for (let i = 0; i < 100; i++) parts.push(chunk);
    writeFileSync(f, Buffer.concat(parts));
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string; peak: number }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'analyze', '-f', 'json', f]);
      let stdout = '';
      let stderr = '';
      let peak = 0;
      const poll = setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) peak = Math.max(peak, Number(m[1]) * 1024);
        } catch {
          // exited
        }
      }, 20);
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => {
        clearInterval(poll);
        resolve({ code, stdout, stderr, peak });
      });
    });
    expect(r.stderr).toMatch(/huge\.ndjson:2: line is longer than the line-length cap/);
    const report = JSON.parse(r.stdout);
    expect(report.input).toMatchObject({ lines: 2, events: 1, invalid: 1 });
    // The 100 MB line was never held whole (the cap is 1 MiB).
    if (r.peak > 0) expect(r.peak).toBeLessThan(150 * 1024 * 1024);
  }, 60000);

  it('an empty file and a file of blank lines', async () => {
    for (const [name, content, blank] of [['empty.ndjson', '', 0], ['blank.ndjson', '\n  \n\t\n\r\n', 4]] as const) {
      // Nothing analysed is never a pass: exit 2 with a message, unless the pipeline says empty is fine.
      const r = await runCli(['analyze', '-f', 'json', file(name, content)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/no events in the input/);
      expect(JSON.parse(r.stdout).input).toMatchObject({ lines: blank, blank, events: 0, invalid: 0 });
      const ok = await runCli(['analyze', '-f', 'json', '--allow-empty', file(name, content)]);
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout).summary).toMatchObject({ verdict: 'untested', reasons: [{ id: 'no-events' }] });
    }
  });
});

describe('bad field values', () => {
  it.each([
    ['fenceToken above 2^53 as a number is read exactly', ok({ fenceToken: '__BIG__' }).replace('"__BIG__"', '9007199254740993'), null],
    ['leaseId above 2^53 as a number is read exactly', ok({ leaseId: '__BIG__' }).replace('"__BIG__"', '7587869104436101437'), null],
    ['negative token', ok({ fenceToken: -3 }), /negative/],
    ['fractional token', ok({ fenceToken: 2.5 }), /not an integer/],
    ['prototype keys', ok().replace('{', '{"__proto__":{"polluted":1},"constructor":{"prototype":1},"prototype":2,'), null],
    ['far past', ok({ ts: '1900-01-01T00:00:00Z' }), /outside 1970–2200/],
    ['far future', ok({ ts: '9999-12-31T23:59:59Z' }), /outside 1970–2200/],
    ['epoch in seconds where ms were meant is refused as a unit mistake, with a hint', ok({ ts: 1772359200 }), /ts 1772359200 reads as 1970-01-21 in milliseconds; as seconds it is 2026-03-01T10:00:00Z: log epoch milliseconds, or map it with a mapping's timestamp: epoch-s/],
    ['unparseable ts', ok({ ts: 'last tuesday' }), /not RFC 3339/],
    ['a token of 81 digits', ok({ fenceToken: '1'.repeat(81) }), /81 digits; tokens of more than 80 digits are refused/],
    ['a token of 80 digits and leading zeros is exact', ok({ fenceToken: '000' + '7'.repeat(80) }), null],
  ])('%s', async (name, line, reason) => {
    const f = file(`${name.replace(/\W+/g, '-')}.ndjson`, line + '\n');
    const r = await runCli(['analyze', '-f', 'json', f]);
    expect(r.stderr).not.toMatch(STACK);
    const report = JSON.parse(r.stdout);
    if (reason === null) expect(report.input.invalid, JSON.stringify(report.input.problems)).toBe(0);
    else expect(report.input.problems[0].reason).toMatch(reason);
    if (name.startsWith('fenceToken')) expect(report.resources[0].highestAcceptedToken).toBe('9007199254740993');
    if (name.startsWith('leaseId')) expect(report.resources[0]).toBeDefined();
    if (name.startsWith('a token of 80')) expect(report.resources[0].highestAcceptedToken).toBe('7'.repeat(80));
  });

  it('500,000-digit tokens, as strings and as numbers, are refused quickly with bounded memory', async () => {
    const digits = '9'.repeat(500_000);
    const lines = Array.from({ length: 20 }, (_, i) => ok({ ts: `2026-03-01T10:00:${String(i).padStart(2, '0')}Z`, fenceToken: '__T__' }).replace('"__T__"', i % 2 === 0 ? `"${digits}"` : digits));
    const f = file('huge-tokens.ndjson', lines.join('\n') + '\n');
    // This took 15 s and 630 MB before the cap; the test's own timeout guards against a return of that.
    const r = await runCli(['analyze', '-f', 'json', '--allow-empty', '--max-line-bytes', '2000000', '-q', f]);
    const report = JSON.parse(r.stdout);
    expect(report.input.invalid).toBe(20);
    for (const p of report.input.problems) expect(p.reason).toMatch(/tokens of more than 80 digits are refused/);
  });

  it('prototype keys in a mapping file are refused by name, and pollute nothing', async () => {
    const m = file('proto-mapping.json', '{"match":[{"when":{"a":1},"type":"acquire"}],"__proto__":{"x":1}}');
    const r = await runCli(['analyze', '--mapping', m, file('one.ndjson', ok() + '\n')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown key "__proto__"/);
    expect(r.stderr).not.toMatch(STACK);
  });
});

describe('files and streams', () => {
  it('a truncated gzip and gzip with trailing garbage exit 2 with a reason, after analysing what was read', async () => {
    const body = Array.from({ length: 3000 }, (_, i) => ok({ fenceToken: i + 1 })).join('\n') + '\n';
    const gz = gzipSync(Buffer.from(body));
    for (const [name, content, reason] of [
      ['cut.ndjson.gz', gz.subarray(0, gz.length - 100), /cannot decompress .*cut\.ndjson\.gz: unexpected end/],
      ['garbage.ndjson.gz', Buffer.concat([gz, Buffer.from('this is not gzip')]), /cannot decompress .*garbage\.ndjson\.gz: corrupt gzip data or bytes that are not gzip after it/],
    ] as const) {
      const r = await runCli(['analyze', '-f', 'json', file(name, content)]);
      expect(r.code, name).toBe(2);
      expect(r.stderr).toMatch(reason);
      expect(r.stderr).not.toMatch(STACK);
      expect(JSON.parse(r.stdout).input.files[0].error).toMatch(/cannot decompress/);
    }
  });

  it('a directory or an unreadable file', async () => {
    const d = join(dir, 'a-dir');
    mkdirSync(d, { recursive: true });
    const r = await runCli(['analyze', d]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/it is a directory/);
    if (process.getuid?.() !== 0) {
      const f = file('locked.ndjson', ok());
      chmodSync(f, 0);
      expect((await runCli(['analyze', f])).stderr).toMatch(/permission denied/);
    }
  });

  it('stdout closed early (| head -1) exits quietly', async () => {
    const big = file('many.ndjson', Array.from({ length: 5000 }, (_, i) => ok({ resource: `r${i}` })).join('\n') + '\n');
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn('sh', ['-c', `node ${JSON.stringify(BIN)} analyze -f json ${JSON.stringify(big)} | head -1 >/dev/null; exit \${PIPESTATUS:-0}`], { cwd: ROOT });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(r.stderr).toBe('');
  });

  it('SIGINT mid-stream ends quietly with 130', async () => {
    const child = spawn(process.execPath, [BIN, 'analyze', '-f', 'json', '-'], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.write(ok() + '\n');
    // Long enough for the CLI to start and install its handlers on a loaded machine.
    await new Promise((r) => setTimeout(r, 1500));
    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(/interrupted \(SIGINT\)/);
    expect(stderr).not.toMatch(STACK);
  });

  // Patterns that backtrack super-linearly on V8 (nested, adjacent or overlapping unbounded
  // quantifiers) run on the linear-time engine: a hostile line costs milliseconds, not hours.
  // The timeout is the hang guard (on V8, \w*\w*\w*! against 4096 "a" does not finish).
  it.each(['^(a+)+$', '\\w*\\w*\\w*!', '.*lock.*acquired', '(a|aa)+!', 'x*x*x*x*x*y'])('a hostile line against %s in a mapping finishes', async (pattern) => {
    const m = file('redos.json', JSON.stringify({ match: [{ when: { msg: { regex: pattern, flags: 'i' } }, type: 'acquire' }] }));
    const hostile = [
      JSON.stringify({ ts: '2026-03-01T10:00:00Z', resource: 'r', msg: 'a'.repeat(4096) }),
      JSON.stringify({ ts: '2026-03-01T10:00:00Z', resource: 'r', msg: 'lock '.repeat(2000) }),
      JSON.stringify({ ts: '2026-03-01T10:00:00Z', resource: 'r', msg: 'x'.repeat(4096) }),
    ];
    const r = await runCli(['analyze', '--mapping', m, '-f', 'json', file('hostile.ndjson', hostile.join('\n') + '\n')]);
    expect(r.stderr).not.toMatch(STACK);
    expect(JSON.parse(r.stdout).input).toMatchObject({ lines: 3 });
  }, 20_000);

  it('a 2 MB regular expression is refused at load without being echoed', async () => {
    const m = file('huge.json', JSON.stringify({ match: [{ when: { msg: { regex: 'a'.repeat(2 * 1024 * 1024) } }, type: 'acquire' }] }));
    const r = await runCli(['analyze', '--mapping', m, file('x.ndjson', ok() + '\n')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\/match\/0\/when\/msg: regular expression is 2097152 characters long; at most 1000 are allowed/);
    expect(r.stderr.length).toBeLessThan(500);
  });

  it('a lookahead in a mapping is refused at load, naming its path', async () => {
    const m = file('look.json', JSON.stringify({ match: [{ when: { msg: { regex: '^(?!.*ok).*lock' } }, type: 'acquire' }] }));
    const r = await runCli(['analyze', '--mapping', m, file('x.ndjson', ok() + '\n')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\/match\/0\/when\/msg: regular expression .* uses a lookahead, which cannot be matched in linear time/);
  });
});

describe('limits', () => {
  it('past --max-resources the run says so loudly and exits 2', async () => {
    const f = file('resources.ndjson', Array.from({ length: 10 }, (_, i) => ok({ resource: `r${i}` })).join('\n') + '\n');
    const r = await runCli(['analyze', '-f', 'json', '--max-resources', '3', f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/7 events of further resources were NOT analysed \(raise --max-resources\)/);
    expect(JSON.parse(r.stdout).summary).toMatchObject({ resources: 3, untrackedEvents: 7 });
    const t = await runCli(['analyze', '-f', 'table', '--max-resources', '3', f]);
    expect(t.stdout).toMatch(/LIMIT: more than 3 resources; 7 events/);
  });

  it('--max-problems keeps the count exact', async () => {
    const f = file('garbage.ndjson', 'x\n'.repeat(500));
    const r = await runCli(['analyze', '-f', 'json', '-q', '--max-problems', '5', f]);
    expect(JSON.parse(r.stdout).input).toMatchObject({ invalid: 500, problemsOmitted: 495 });
  });
});

describe('table output stays linear', () => {
  it('a 100 KB owner id is elided in table cells (layout cost grew faster than the text: 100 KB ran for minutes)', async () => {
    const owner = 'w'.repeat(100_000);
    const f = file('long-owner.ndjson', [ok({ ts: '2026-03-01T10:00:01Z', ownerId: 'b', fenceToken: '2' }), ok({ ts: '2026-03-01T10:00:02Z', ownerId: owner, fenceToken: '1' })].join('\n') + '\n');
    const r = await runCli(['analyze', '-f', 'table', f]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/more characters\)…/);
    const report = JSON.parse((await runCli(['analyze', '-f', 'json', f])).stdout);
    expect(report.findings[0].message).toContain(owner); // the JSON report keeps it whole
  });

  it('10k findings: the table lists 200 and says where the rest are', async () => {
    const lines = [ok({ ts: '2026-03-01T10:00:00Z', fenceToken: '10000000' })];
    for (let i = 0; i < 10_000; i++) lines.push(ok({ ts: `2026-03-01T10:${String(1 + Math.floor(i / 600)).padStart(2, '0')}:${String(Math.floor((i % 600) / 10)).padStart(2, '0')}.${String(i % 10)}00Z`, fenceToken: String(i + 1), ownerId: `w${i}` }));
    const f = file('many-findings.ndjson', lines.join('\n') + '\n');
    const r = await runCli(['analyze', '-f', 'table', '-q', f]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/… 9800 more findings in --format json, markdown or html/);
  }, 60_000);
});

describe('long histories', () => {
  it('timeline of 130k events on one resource (min/max of a spread list overflowed the stack)', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 130_000; i++) lines.push(ok({ ts: new Date(Date.UTC(2026, 2, 1, 10) + i).toISOString(), fenceToken: String(i + 1), ownerId: 'w' }));
    const f = file('long-history.ndjson', lines.join('\n') + '\n');
    const r = await runCli(['timeline', '-r', 'r', '--max-events', '300000', f]);
    expect(r.stderr).not.toMatch(/internal error|RangeError/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^r \(untested\): 130000 events/);
  }, 120_000);
});

describe('untrusted content in terminal outputs', () => {
  const evil = 'x\u001b[2J\u001b]0;pwned\u0007\u202eevil\u0085\u009b31m::error::boom]]>';
  const log = () =>
    file(
      'evil-terminal.ndjson',
      [
        JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'acquire', resource: `res${evil}`, ownerId: `A${evil}`, leaseId: `L1${evil}`, fenceToken: 1 }),
        JSON.stringify({ ts: '2026-03-01T10:00:01Z', type: 'write', resource: `res${evil}`, ownerId: 'B', leaseId: 'L2', fenceToken: 2, result: 'accepted' }),
        JSON.stringify({ ts: '2026-03-01T10:00:02Z', type: 'write', resource: `res${evil}`, ownerId: `A${evil}`, leaseId: `L1${evil}`, fenceToken: 1, result: 'accepted', value: evil }),
      ].join('\n') + '\n',
    );
  const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

  it.each([
    ['table', ['analyze', '-f', 'table']],
    ['timeline', ['timeline', '--resource', 'res' + 'x\u001b[2J\u001b]0;pwned\u0007\u202eevil\u0085\u009b31m::error::boom]]>']],
    ['map', ['map', '-n', '3']],
  ])('%s shows control characters visibly and never raw', async (name, args) => {
    const f = log();
    const r = await runCli([...args, f]);
    expect(r.stdout.length).toBeGreaterThan(0);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stderr).not.toMatch(RAW);
    if (name === 'map') {
      // map prints JSON, where they stay escaped as \u001b.
      expect(r.stdout).toContain('\\u001b[2J');
    } else {
      expect(r.stdout).toContain('\\x1b[2J');
      expect(r.stdout).toContain('\\u{202e}');
    }
  });
});
