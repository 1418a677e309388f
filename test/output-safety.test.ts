/**
 * Output safety (issue 13): an input is never written, every report file is replaced atomically,
 * and every write error is one line and exit 2 — never a stack trace, a truncated input, a partial
 * report or a leftover temporary file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, FIXTURES, ROOT, runCli, type RunResult } from './helpers/run.js';

const STACK = /\n\s+at .*:\d+:\d+/;
const UNSAFE = join(FIXTURES, 'article-unsafe.ndjson');
const FORMATS = ['json', 'ndjson', 'table', 'markdown', 'html', 'junit', 'github'];

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'stalewrite-out-'));
  chmodSync(d, 0o777); // world-readable and writable, for the runs as an unprivileged user
  return d;
}

/** An incident log copied into a fresh directory. */
function incident(dir = tmp(), name = 'incident.ndjson'): string {
  const f = join(dir, name);
  cpSync(UNSAFE, f);
  chmodSync(f, 0o644);
  return f;
}

/** Run the CLI with file descriptors as stdin / stdout (a redirect: `< x`, `> /dev/full`, `>> x`). */
function runFds(args: string[], fds: { stdin?: number; stdout?: number }, env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const e: Record<string, string | undefined> = { ...process.env, ...env };
    delete e.FORCE_COLOR;
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: e, stdio: [fds.stdin ?? 'ignore', fds.stdout ?? 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One line on stderr, exit 2, no stack trace. */
function expectOneLine(r: RunResult, reason: RegExp, what: string): void {
  expect(r.code, `${what}: ${r.stderr}`).toBe(2);
  expect(r.stderr, what).not.toMatch(STACK);
  expect(r.stderr, what).not.toMatch(/internal error/);
  expect(r.stderr, what).toMatch(reason);
  expect(r.stderr.trimEnd().split('\n').filter((l) => reason.test(l)), what).toHaveLength(1);
}

const temporaries = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('adversarial: output safety — an input is never written', () => {
  it('refuses -o that is an input, through any spelling, symlink or hard link, for every format', async () => {
    const dir = tmp();
    const log = incident(dir);
    const original = readFileSync(log);
    symlinkSync(log, join(dir, 'link.ndjson'));
    linkSync(log, join(dir, 'hard.ndjson'));
    const spellings = [log, join(dir, '.', 'incident.ndjson'), join(dir, '..', dir.split('/').at(-1)!, 'incident.ndjson'), join(dir, 'link.ndjson'), join(dir, 'hard.ndjson')];
    const cases = [...FORMATS.map((format) => [format, log] as const), ...spellings.slice(1).flatMap((out) => (['json', 'ndjson'] as const).map((format) => [format, out] as const))];
    for (const [format, out] of cases) {
      {
        const r = await runCli(['analyze', '-f', format, '-o', out, log]);
        expectOneLine(r, /refusing to write .*: it is the input/, `${format} -o ${out}`);
        expect(readFileSync(log).equals(original), `${format} -o ${out}`).toBe(true);
      }
    }
    // An input among several, and a gzip-detected one, too.
    const other = incident(dir, 'other.ndjson');
    const r = await runCli(['analyze', '-f', 'ndjson', '-o', other, log, other]);
    expectOneLine(r, /refusing to write .*other\.ndjson: it is the input/, 'second input');
    expect(readFileSync(other).equals(original)).toBe(true);
    expect(temporaries(dir)).toEqual([]);
  });

  it('refuses -o that is the mapping file read', async () => {
    const dir = tmp();
    const mapping = join(dir, 'mapping.json');
    const text = JSON.stringify({ version: 1 });
    writeFileSync(mapping, text);
    const r = await runCli(['analyze', '-m', mapping, '-o', mapping, UNSAFE]);
    expectOneLine(r, /refusing to write .*mapping\.json: it is the input/, 'mapping');
    expect(readFileSync(mapping, 'utf8')).toBe(text);
  });

  it('refuses -o that is the file redirected to stdin (`-o x < x`)', async () => {
    const dir = tmp();
    const log = incident(dir);
    const original = readFileSync(log);
    for (const format of ['ndjson', 'json']) {
      for (const args of [['analyze', '-f', format, '-o', log], ['analyze', '-f', format, '-o', log, '-']]) {
        const fd = openSync(log, 'r');
        try {
          const r = await runFds(args, { stdin: fd });
          expectOneLine(r, /refusing to write .*incident\.ndjson: it is the input stdin/, args.join(' '));
        } finally {
          closeSync(fd);
        }
        expect(readFileSync(log).equals(original)).toBe(true);
      }
    }
  });

  it('refuses stdout appended to an input (`analyze x >> x`), which would feed the report back in', async () => {
    const log = incident();
    const original = readFileSync(log);
    const fd = openSync(log, 'a');
    try {
      const r = await runFds(['analyze', '-f', 'ndjson', log], { stdout: fd });
      expectOneLine(r, /refusing to write the report to stdout: it is the input/, '>>');
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(log).equals(original)).toBe(true);
  });

  it('refuses $GITHUB_STEP_SUMMARY that is an input, before printing anything', async () => {
    const log = incident();
    const original = readFileSync(log);
    const r = await runCli(['analyze', '-f', 'github', log], { env: { GITHUB_STEP_SUMMARY: log } });
    expectOneLine(r, /refusing to write GITHUB_STEP_SUMMARY .*: it is the input/, 'summary');
    expect(r.stdout).toBe('');
    expect(readFileSync(log).equals(original)).toBe(true);
  });

  it('check --update refuses an expectation file that is the case log (a symlink to it)', async () => {
    const dir = tmp();
    // One line: valid NDJSON and a valid (still empty) expectation, so the run gets as far as writing.
    const log = join(dir, 'incident.ndjson');
    writeFileSync(log, JSON.stringify({ ts: '2026-03-01T10:00:00Z', type: 'write', resource: 'r', fenceToken: 1, result: 'accepted' }) + '\n');
    const original = readFileSync(log);
    symlinkSync(log, join(dir, 'incident.expect.json'));
    const r = await runCli(['check', '--update', log]);
    expectOneLine(r, /refusing to write .*incident\.expect\.json: it is the input/, 'check --update');
    expect(readFileSync(log).equals(original)).toBe(true);
  });
});

describe('adversarial: output safety — reports are written atomically', () => {
  it('replaces a regular file by rename (a new inode, the old mode), leaving no temporary file', async () => {
    const dir = tmp();
    const out = join(dir, 'report.json');
    writeFileSync(out, 'earlier report');
    chmodSync(out, 0o600);
    const before = statSync(out);
    const r = await runCli(['analyze', '-o', out, UNSAFE]);
    expect(r.code).toBe(1);
    const after = statSync(out);
    expect(after.ino).not.toBe(before.ino); // renamed over, not truncated and rewritten
    expect(after.mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(out, 'utf8')).summary.verdict).toBe('violated');
    expect(temporaries(dir)).toEqual([]);
  });

  it('replaces the file a symlink points to, keeping the link', async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'real'));
    const real = join(dir, 'real', 'report.md');
    writeFileSync(real, 'earlier');
    symlinkSync(real, join(dir, 'link.md'));
    const r = await runCli(['analyze', '-f', 'markdown', '-o', join(dir, 'link.md'), UNSAFE]);
    expect(r.code).toBe(1);
    expect(readFileSync(real, 'utf8')).toMatch(/^# stalewrite report/);
    expect(readdirSync(dir).includes('link.md') && statSync(join(dir, 'link.md')).ino === statSync(real).ino).toBe(true);
    expect([...temporaries(dir), ...temporaries(join(dir, 'real'))]).toEqual([]);
  });

  it('writes /dev/null and a FIFO in place, never replacing them', async () => {
    const r = await runCli(['analyze', '-o', '/dev/null', UNSAFE]);
    expect(r.code).toBe(1);
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
    const dir = tmp();
    const fifo = join(dir, 'fifo');
    const made = spawnSync('mkfifo', [fifo]);
    if (made.status !== 0) return; // no mkfifo: /dev/null above still covers a device
    const reader = new Promise<string>((resolve) => {
      const cat = spawn('cat', [fifo]);
      let text = '';
      cat.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
      cat.on('close', () => resolve(text));
    });
    const w = await runCli(['analyze', '-o', fifo, UNSAFE]);
    expect(w.code).toBe(1);
    expect(JSON.parse(await reader).summary.verdict).toBe('violated');
    expect(statSync(fifo).isFIFO()).toBe(true);
    expect(temporaries(dir)).toEqual([]);
  });

  it('two concurrent runs writing the same -o each leave a complete report', async () => {
    const dir = tmp();
    const out = join(dir, 'r.json');
    const big = join(dir, 'big.ndjson');
    writeFileSync(big, Array.from({ length: 20000 }, (_, i) => JSON.stringify({ ts: new Date(Date.UTC(2026, 2, 1) + i).toISOString(), type: 'write', resource: `r${i}`, fenceToken: 1, result: 'accepted' })).join('\n') + '\n');
    const runs = await Promise.all([runCli(['analyze', '-o', out, big]), runCli(['analyze', '-o', out, UNSAFE]), runCli(['analyze', '-o', out, big]), runCli(['analyze', '-o', out, UNSAFE])]);
    expect(runs.map((r) => r.code)).toEqual([0, 1, 0, 1]);
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(['verified', 'untested', 'unconfirmed', 'violated']).toContain(report.summary.verdict);
    expect(temporaries(dir)).toEqual([]);
  });

  it('SIGTERM while the report is being written leaves the earlier report and no temporary file', async () => {
    const dir = tmp();
    const big = join(dir, 'big.ndjson');
    // Enough resources that writing the JSON report takes a while (tens of MB).
    writeFileSync(big, Array.from({ length: 120000 }, (_, i) => JSON.stringify({ ts: new Date(Date.UTC(2026, 2, 1) + i).toISOString(), type: 'write', resource: `resource-${i}`, fenceToken: 1, result: 'accepted' })).join('\n') + '\n');
    const out = join(dir, 'report.json');
    writeFileSync(out, 'earlier report');
    const child = spawn(process.execPath, [BIN, 'analyze', '-o', out, big], { cwd: ROOT });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let sawTemporary = false;
    const watcher = watch(dir, (_event, name) => {
      if (!sawTemporary && typeof name === 'string' && name.startsWith('.report.json.') && name.endsWith('.tmp')) {
        sawTemporary = true;
        child.kill('SIGTERM');
      }
    });
    const code = await new Promise((resolve) => child.on('close', resolve));
    watcher.close();
    expect(sawTemporary).toBe(true);
    expect(code).toBe(143);
    expect(stderr).toMatch(/interrupted \(SIGTERM\); no report written \(.*report\.json left as it was\)/);
    expect(readFileSync(out, 'utf8')).toBe('earlier report');
    expect(temporaries(dir)).toEqual([]);
  });

  it('an interrupted analysis leaves the earlier report alone', async () => {
    const dir = tmp();
    const out = join(dir, 'report.json');
    writeFileSync(out, 'earlier report');
    const child = spawn(process.execPath, [BIN, 'analyze', '-o', out, '-'], { cwd: ROOT });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.write(readFileSync(UNSAFE));
    await new Promise((resolve) => setTimeout(resolve, 500));
    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(/interrupted \(SIGINT\); no report written/);
    expect(readFileSync(out, 'utf8')).toBe('earlier report');
    expect(temporaries(dir)).toEqual([]);
  });

  it('a live ndjson stream to -o is written in place as it goes', async () => {
    const dir = tmp();
    const out = join(dir, 'live.ndjson');
    const child = spawn(process.execPath, [BIN, 'analyze', '-f', 'ndjson', '-o', out, '-'], { cwd: ROOT });
    child.stdin.write(readFileSync(UNSAFE));
    let first = '';
    for (let i = 0; i < 100 && first === ''; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (existsSync(out)) first = readFileSync(out, 'utf8').split('\n')[0]!;
    }
    expect(child.exitCode).toBeNull(); // the input is still open
    expect(JSON.parse(first)).toMatchObject({ kind: 'finding', rule: 'accepted-stale-write' });
    expect(temporaries(dir)).toEqual([]);
    child.stdin.end();
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(1);
    expect(JSON.parse(readFileSync(out, 'utf8').trimEnd().split('\n').at(-1)!)).toMatchObject({ kind: 'summary' });
  });
});

describe('adversarial: output safety — write errors are one line and exit 2', () => {
  it('stdout on a full device (> /dev/full), every format', async () => {
    for (const format of FORMATS) {
      const fd = openSync('/dev/full', 'w');
      try {
        const r = await runFds(['analyze', '-f', format, UNSAFE], { stdout: fd });
        expectOneLine(r, /^stalewrite: cannot write stdout: no space left on device$/m, format);
      } finally {
        closeSync(fd);
      }
    }
    for (const args of [['rules'], ['timeline', '-r', 'resource-7', UNSAFE], ['explain', 'accepted-stale-write']]) {
      const fd = openSync('/dev/full', 'w');
      try {
        expectOneLine(await runFds(args, { stdout: fd }), /^stalewrite: cannot write stdout: no space left on device$/m, args[0]!);
      } finally {
        closeSync(fd);
      }
    }
  });

  it('-o on a full device, every format', async () => {
    for (const format of FORMATS) {
      const r = await runCli(['analyze', '-f', format, '-o', '/dev/full', UNSAFE]);
      expectOneLine(r, /^stalewrite: cannot write \/dev\/full: no space left on device$/m, format);
    }
  });

  it('$GITHUB_STEP_SUMMARY on a full device or in a missing directory', async () => {
    const full = await runCli(['analyze', '-f', 'github', UNSAFE], { env: { GITHUB_STEP_SUMMARY: '/dev/full' } });
    expectOneLine(full, /^stalewrite: cannot write GITHUB_STEP_SUMMARY \/dev\/full: no space left on device$/m, 'full');
    expect(full.stdout).toMatch(/^::error /m); // the annotations were printed first
    const missing = join(tmp(), 'no', 'such', 'summary.md');
    const r = await runCli(['analyze', '-f', 'github', UNSAFE], { env: { GITHUB_STEP_SUMMARY: missing } });
    expectOneLine(r, /cannot write GITHUB_STEP_SUMMARY .*summary\.md: its directory does not exist/, 'missing');
  });

  it('check on a directory with a symlink loop', async () => {
    const dir = tmp();
    incident(dir);
    symlinkSync(join(dir, 'b'), join(dir, 'a'));
    symlinkSync(join(dir, 'a'), join(dir, 'b'));
    for (const args of [['check', dir], ['check', '--update', dir], ['check', join(dir, 'a')]]) {
      expectOneLine(await runCli(args), /cannot read .*: too many levels of symbolic links/, args.join(' '));
    }
  });

  it('a -o that is a directory, or in a missing directory, fails before the analysis', async () => {
    const dir = tmp();
    expectOneLine(await runCli(['analyze', '-o', dir, UNSAFE]), /cannot write .*: it is a directory/, 'directory');
    expectOneLine(await runCli(['analyze', '-f', 'ndjson', '-o', join(dir, 'x', 'r.ndjson'), UNSAFE]), /cannot write .*r\.ndjson: its directory does not exist/, 'missing');
  });

  const runuser = spawnSync('runuser', ['--help']).status === 0 && process.getuid?.() === 0;
  it.skipIf(!runuser)('permission errors, as an unprivileged user (skipped without runuser as root)', async () => {
    const asNobody = (args: string[]) =>
      new Promise<RunResult>((resolve) => {
        const child = spawn('runuser', ['-u', 'nobody', '--', process.execPath, BIN, ...args], { cwd: tmpdir() });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const dir = tmp();
    const ro = join(dir, 'ro');
    mkdirSync(ro);
    const log = incident(ro);
    chmodSync(ro, 0o555);
    for (const format of ['json', 'ndjson', 'html']) {
      expectOneLine(await asNobody(['analyze', '-f', format, '-o', join(ro, 'r.out'), log]), /cannot write .*r\.out: permission denied/, format);
    }
    expect(readdirSync(ro)).toEqual(['incident.ndjson']);
    expectOneLine(await asNobody(['check', '--update', ro]), /cannot write .*incident\.expect\.json: permission denied/, 'check --update');
    expect(readdirSync(ro)).toEqual(['incident.ndjson']);
    // A read-only report in a writable directory is not replaced behind its owner's back.
    const locked = join(dir, 'locked.json');
    writeFileSync(locked, 'earlier');
    chmodSync(locked, 0o444);
    expectOneLine(await asNobody(['analyze', '-o', locked, log]), /cannot write .*locked\.json: permission denied/, 'read-only file');
    expect(readFileSync(locked, 'utf8')).toBe('earlier');
    expect(temporaries(dir)).toEqual([]);
  });
});
