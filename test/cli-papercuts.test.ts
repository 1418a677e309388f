// First-contact papercuts of the CLI (issue 12, point 7): suggestions for mistyped commands and
// options, the command's own --help, JSON errors in mappings by line and column, a note when
// stdin is a terminal, and `check --update` on an expectation that holds only description/options.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, FIXTURES, ROOT, runCli } from './helpers/run.js';
import { editDistance, nearest, unknownOptions } from '../src/cli/did-you-mean.js';
import { describeJsonError, jsonErrorOffset, lineColumn } from '../src/profiles/json-error.js';

const unsafe = join('fixtures', 'article-unsafe.ndjson');
const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'stalewrite-papercuts-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('mistyped commands and options', () => {
  it('accepts "analyse" as an alias of analyze', async () => {
    const r = await runCli(['analyse', unsafe]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).findings.map((f: { rule: string }) => f.rule)).toContain('accepted-stale-write');
  });

  it('suggests the nearest command for a word that is no file', async () => {
    for (const [typed, meant] of [['anlyze', 'analyze'], ['rule', 'rules'], ['explian', 'explain'], ['timelien', 'timeline'], ['chekc', 'check']]) {
      const r = await runCli([typed!, 'x']);
      expect(r.code, typed).toBe(2);
      expect(r.stderr).toBe(`stalewrite: Unknown command ${typed}; did you mean ${meant}?\nRun "stalewrite --help" for usage.\n`);
    }
  });

  it('still reads a file whose name looks like a command, and says "cannot read" for other words', async () => {
    const dir = tmp();
    copyFileSync(join(FIXTURES, 'article-unsafe.ndjson'), join(dir, 'anlyze'));
    const r = await runCli(['anlyze'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/did you mean/);
    const other = await runCli(['no-such-log']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/cannot read no-such-log/);
    expect(other.stderr).not.toMatch(/did you mean/);
  });

  it('names an unknown option as typed and suggests the nearest option of the command', async () => {
    const cases: [string[], string, string][] = [
      [['analyze', '--fial-on', 'warning', unsafe], 'Unknown option --fial-on; did you mean --fail-on?', 'analyze'],
      [['--fial-on', 'warning', unsafe], 'Unknown option --fial-on; did you mean --fail-on?', 'analyze'],
      [['analyse', '--clok-skew', '1s', unsafe], 'Unknown option --clok-skew; did you mean --clock-skew?', 'analyze'],
      [['rules', '--fromat', 'json'], 'Unknown option --fromat; did you mean --format?', 'rules'],
      [['check', '--updat', 'fixtures'], 'Unknown option --updat; did you mean --update?', 'check'],
      [['timeline', '--resurce', 'r', unsafe], 'Unknown option --resurce; did you mean --resource?', 'timeline'],
      [['map', '--line', '3', unsafe], 'Unknown option --line; did you mean --lines?', 'map'],
    ];
    for (const [args, message, command] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(`stalewrite: ${message}\nRun "stalewrite ${command} --help" for usage.\n`);
    }
    // Nothing near: no guess; several unknown options: one line each.
    const r = await runCli(['analyze', '--zzzzzz', '-z', unsafe]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('stalewrite: Unknown option --zzzzzz\nstalewrite: Unknown option -z\nRun "stalewrite analyze --help" for usage.\n');
  });

  it('accepts the spellings yargs accepts: camelCase, --no-X, --X=v, negative numbers', async () => {
    const r = await runCli(['analyze', '--failOn', 'error', '--no-strict', '--clock-skew=1s', '-q', unsafe]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
  });

  it('points other usage errors at the command\'s own --help', async () => {
    const cases: [string[], RegExp, string][] = [
      [['analyze', '--clock-skew', 'soon', unsafe], /--clock-skew "soon" is not a duration/, 'analyze'],
      [['timeline', unsafe], /Missing required argument: resource/, 'timeline'],
      [['explain'], /Not enough non-option arguments/, 'explain'],
      [['map', '-n', '0', unsafe], /--lines must be a whole number/, 'map'],
      [['--max-findings', '-1', unsafe], /--max-findings must be a whole number/, 'analyze'],
    ];
    for (const [args, message, command] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain(`Run "stalewrite ${command} --help" for usage.`);
      expect(r.stderr).not.toContain('Run "stalewrite --help"');
    }
  });

  it('computes edit distances with transpositions, and guesses only near words', () => {
    expect(editDistance('fial-on', 'fail-on')).toBe(1);
    expect(editDistance('analyze', 'analyze')).toBe(0);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearest('fial-on', ['format', 'fail-on', 'output'])).toBe('fail-on');
    expect(nearest('fail', ['fail-on', 'format'])).toBe('fail-on'); // the only one it starts
    expect(nearest('xyz', ['fail-on', 'format'])).toBeUndefined();
    expect(nearest('q', ['quiet'])).toBeUndefined();
    expect(unknownOptions(['--fial-on', 'x', '-qz', '--no-strict', '--failOn=error', '-', '-0.5', '--', '--after'], ['fail-on', 'strict', 'quiet', 'q'])).toEqual(['--fial-on', '-z']);
  });
});

describe('mapping files with a JSON syntax error', () => {
  it('say line and column, not a character offset', async () => {
    const dir = tmp();
    const mapping = join(dir, 'm.json');
    writeFileSync(mapping, '{\n  "fields": {\n    "ownerId" "who"\n  },\n  "match": []\n}\n');
    for (const command of [['analyze', unsafe], ['map', unsafe]]) {
      const r = await runCli([...command, '--mapping', mapping]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`stalewrite: mapping ${mapping} is not valid JSON: line 3, column 15: `);
      expect(r.stderr).not.toMatch(/position \d+/);
    }
  });

  it('find the offset where V8 gives none, and agree with JSON.parse on what is valid', () => {
    // V8 (Node 20) says only `Unexpected token ']', "[1,]" is not valid JSON` here.
    const text = '{\n  "match": [1,]\n}';
    let err: unknown;
    try {
      JSON.parse(text);
    } catch (e) {
      err = e;
    }
    expect(describeJsonError(text, err)).toBe("line 2, column 15: Unexpected token ']'");
    expect(lineColumn('ab\r\ncd', 5)).toEqual({ line: 2, column: 2 });
    const samples = ['{}', '[1, 2.5e-3, "a\\u00e9", true, null, {"a": []}]', '{"a":1}}', '{"a" 1}', '"\\x"', '-', '01', '[[[', '{"a":"x\ny"}', ' ', 'nul', '{"a":1,}'];
    const alphabet = ['{', '}', '[', ']', ',', ':', '"a"', '1', '-', '.', 'e', ' ', '\n', 'true', '"'];
    let seed = 12345;
    for (let n = 0; n < 3000; n++) {
      let s = '';
      for (let k = 0; k < 1 + (n % 7); k++) s += alphabet[(seed = (seed * 1103515245 + 12345) % 2147483648) % alphabet.length];
      samples.push(s);
    }
    for (const s of samples) {
      let valid = true;
      let position: number | undefined;
      try {
        JSON.parse(s);
      } catch (e) {
        valid = false;
        const m = /at position (\d+)/.exec((e as Error).message);
        if (m !== null) position = Number(m[1]);
      }
      const offset = jsonErrorOffset(s);
      expect(offset === undefined, JSON.stringify(s)).toBe(valid);
      if (position !== undefined) expect(offset, JSON.stringify(s)).toBe(position);
    }
  });
});

describe('stdin on a terminal', () => {
  const python = spawnSync('python3', ['-c', 'import pty'], { encoding: 'utf8' });
  it.skipIf(python.status !== 0)('says it reads stdin before waiting, then reads what is typed until Ctrl-D', () => {
    const r = spawnSync('python3', [join(ROOT, 'test', 'helpers', 'pty-stdin.py'), join(FIXTURES, 'article-unsafe.ndjson'), process.execPath, BIN, 'analyze', '-f', 'json'], { cwd: ROOT, encoding: 'utf8', timeout: 60000 });
    expect(r.status, r.stderr).toBe(0);
    const run = JSON.parse(r.stdout) as { code: number; stdout: string; stderr: string; before: string };
    // The note came before anything was typed: the command did not wait silently.
    expect(run.before).toBe('stalewrite: reading stdin (a terminal); pipe a log in or give a file (end typed input with Ctrl-D) — see "stalewrite analyze --help"\n');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.findings.map((f: { rule: string }) => f.rule)).toContain('accepted-stale-write');
    expect(report.input.files[0].file).toBe('stdin');
  });

  it.skipIf(python.status !== 0)('timeline and map say the same, naming their own --help', () => {
    for (const args of [['timeline', '-r', 'resource-7'], ['map', '-']]) {
      const r = spawnSync('python3', [join(ROOT, 'test', 'helpers', 'pty-stdin.py'), join(FIXTURES, 'article-unsafe.ndjson'), process.execPath, BIN, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60000 });
      expect(r.status, r.stderr).toBe(0);
      const run = JSON.parse(r.stdout) as { code: number; stdout: string; before: string };
      expect(run.before).toBe(`stalewrite: reading stdin (a terminal); pipe a log in or give a file (end typed input with Ctrl-D) — see "stalewrite ${args[0]} --help"\n`);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(args[0] === 'timeline' ? /resource-7 \(violated\)/ : /^1: /);
    }
  });

  it('says nothing when stdin is a pipe or a file is given', async () => {
    const piped = await runCli(['analyze'], { stdin: readFileSync(join(ROOT, unsafe)) });
    expect(piped.code).toBe(1);
    expect(piped.stderr).toBe('');
    const file = await runCli(['analyze', unsafe]);
    expect(file.stderr).toBe('');
  });
});

describe('check --update on an expectation with only description and options', () => {
  it('fails the case without --update, then fills in findings, readiness and input, keeping both', async () => {
    const dir = tmp();
    copyFileSync(join(FIXTURES, 'article-unsafe.ndjson'), join(dir, 'incident.ndjson'));
    const expectPath = join(dir, 'incident.expect.json');
    writeFileSync(expectPath, JSON.stringify({ description: 'the article, unsafe', options: { clockSkewMs: 100 } }));
    const before = await runCli(['check', dir]);
    expect(before.code).toBe(1);
    expect(before.stdout).toContain('has no "findings" yet (run with --update');
    const update = await runCli(['check', '--update', dir]);
    expect(update.code, update.stderr).toBe(0);
    const written = JSON.parse(readFileSync(expectPath, 'utf8'));
    expect(written.description).toBe('the article, unsafe');
    expect(written.options).toEqual({ clockSkewMs: 100 });
    expect(written.findings).toContainEqual(expect.objectContaining({ rule: 'accepted-stale-write', resource: 'resource-7' }));
    expect(written.readiness).toEqual({ 'resource-7': 'violated' });
    expect(written.input).toEqual(expect.objectContaining({ lines: 7, events: 7, invalid: 0 }));
    const after = await runCli(['check', dir]);
    expect(after.code).toBe(0);
  });

  it('still rejects an expectation that is not an object or has findings that are not an array', async () => {
    const dir = tmp();
    copyFileSync(join(FIXTURES, 'article-unsafe.ndjson'), join(dir, 'a.ndjson'));
    for (const [text, message] of [['[]', /must be a JSON object/], ['{"findings": {}}', /"findings" must be an array/], ['{"description": "x",\n "options" {}}', /is not valid JSON: line 2, column 12/]] as const) {
      writeFileSync(join(dir, 'a.expect.json'), text);
      const r = await runCli(['check', '--update', dir]);
      expect(r.code, text).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});
