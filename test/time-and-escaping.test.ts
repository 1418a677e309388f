/**
 * Issue 13: time sanity (clocks that go back, epoch units, leap seconds) and terminal escaping of
 * everything built from log content, with the small fixes that came with it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { parseTimestamp, parseTimeValue } from '../src/model/time.js';
import { renderJunit } from '../src/report/junit.js';
import { renderStory } from '../src/report/story.js';
import { runCli } from './helpers/run.js';

const dir = mkdtempSync(join(tmpdir(), 'stalewrite-time-'));
let n = 0;
function file(lines: readonly object[] | string, name = `log-${++n}.ndjson`): string {
  const path = join(dir, name);
  writeFileSync(path, typeof lines === 'string' ? lines : lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
}

const at = (hms: string) => `2026-03-01T${hms}Z`;
const ev = (ts: string, type: string, extra: Record<string, unknown> = {}) => ({ ts: at(ts), type, resource: 'orders/1', ...extra });

/** Lease A granted, then the clock steps back an hour; lease B takes over (all one source). */
const steppedBack = [
  ev('11:00:00.000', 'acquire', { ownerId: 'worker-a', leaseId: 'lease-A', fenceToken: 1, result: 'granted', source: 'app-1' }),
  ev('11:00:01.000', 'write', { ownerId: 'worker-a', leaseId: 'lease-A', fenceToken: 1, result: 'accepted', source: 'app-1' }),
  ev('10:00:06.000', 'expire', { ownerId: 'worker-a', leaseId: 'lease-A', source: 'app-1' }),
  ev('10:00:07.000', 'acquire', { ownerId: 'worker-b', leaseId: 'lease-B', fenceToken: 2, result: 'granted', source: 'app-1' }),
  ev('10:00:08.000', 'write', { ownerId: 'worker-b', leaseId: 'lease-B', fenceToken: 2, result: 'accepted', source: 'app-1' }),
  ev('10:00:05.000', 'write', { ownerId: 'worker-a', leaseId: 'lease-A', fenceToken: 1, result: 'accepted', source: 'app-1' }),
];

describe('epoch units', () => {
  it('refuses an epoch-seconds number given as milliseconds, with the hint', () => {
    const r = parseTimestamp(1772359200);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toBe("ts 1772359200 reads as 1970-01-21 in milliseconds; as seconds it is 2026-03-01T10:00:00Z: log epoch milliseconds, or map it with a mapping's timestamp: epoch-s");
  });

  it('keeps small millisecond numbers, and numbers that would be before 2000 in seconds, as 1970 times', () => {
    expect(parseTimestamp(1000)).toEqual({ ok: true, ms: 1000 });
    expect(parseTimestamp(946684799)).toEqual({ ok: true, ms: 946684799 });
    expect(parseTimestamp(946684800).ok).toBe(false);
    expect(parseTimestamp(1772359200000)).toEqual({ ok: true, ms: 1772359200000 });
  });

  it('mappings: auto reads the number as seconds; an explicit epoch-ms gets the hint; other units only the range check', () => {
    expect(parseTimeValue(1772359200)).toEqual({ ok: true, ms: 1772359200000 });
    const ms = parseTimeValue(1772359200, 'epoch-ms');
    expect(!ms.ok && ms.reason).toMatch(/^timestamp 1772359200 reads as 1970-01-21 in milliseconds; as seconds it is 2026-03-01T10:00:00Z/);
    expect(parseTimeValue(1772359200000, 'epoch-us')).toEqual({ ok: true, ms: 1772359200 });
  });

  it('the line is invalid with the hint in the report, and nothing is analysed from it', async () => {
    const report = await analyze({ files: [file([{ ts: 1772359200, type: 'write', resource: 'r', fenceToken: 1, result: 'accepted' }])] });
    expect(report.input.invalid).toBe(1);
    expect(report.input.problems[0]!.reason).toMatch(/as seconds it is 2026-03-01T10:00:00Z/);
  });
});

describe('years before 100', () => {
  it('are those years, outside 1970–2200, not 1900–1999 (Date.UTC reads 0–99 as 1900 on)', () => {
    for (const ts of ['0070-01-01T00:00:00Z', '0099-06-01T12:00:00.5Z', '0000-01-01T00:00:00Z', '0070-01-01T00:00:00+00:00']) {
      const t = parseTimestamp(ts);
      expect(t.ok, ts).toBe(false);
      expect(t.ok ? '' : t.reason, ts).toMatch(/outside 1970–2200/);
      // Also once its minute is cached (the fast path reads the cached minute's time).
      expect(parseTimestamp(ts).ok, ts).toBe(false);
    }
    expect(parseTimestamp('1970-01-01T00:00:00Z')).toEqual({ ok: true, ms: 0 });
  });
});

describe('leap seconds', () => {
  const ms = (s: string) => {
    const r = parseTimestamp(s);
    if (!r.ok) throw new Error(r.reason);
    return r.ms;
  };

  it('23:59:60 reads as 23:59:59.999: after the rest of :59, before the next minute, not as :59', () => {
    const leap = ms('2016-12-31T23:59:60Z');
    expect(leap).toBe(Date.UTC(2016, 11, 31, 23, 59, 59, 999));
    expect(leap).toBeGreaterThan(ms('2016-12-31T23:59:59.500Z'));
    expect(leap).not.toBe(ms('2016-12-31T23:59:59Z'));
    expect(leap).toBeLessThan(ms('2017-01-01T00:00:00Z'));
    expect(ms('2016-12-31T23:59:60.5Z')).toBe(leap);
    expect(ms('2017-01-01T00:59:60+01:00')).toBe(leap);
  });

  it('61 seconds is still refused', () => {
    expect(parseTimestamp('2016-12-31T23:59:61Z').ok).toBe(false);
  });
});

describe('clock-went-backwards', () => {
  it('reports a source whose clock stepped back, once, with the count, the largest step and the first file:line', async () => {
    const log = file([...steppedBack, ev('10:00:09.000', 'release', { ownerId: 'worker-b', leaseId: 'lease-B', result: 'released', source: 'app-1' }), ev('10:00:03.000', 'keepalive', { ownerId: 'worker-b', leaseId: 'lease-B', result: 'ok', source: 'app-1' })]);
    const report = await analyze({ files: [log] });
    const found = report.findings.filter((f) => f.rule === 'clock-went-backwards');
    expect(found).toHaveLength(1);
    const f = found[0]!;
    expect(f.severity).toBe('warning');
    expect(f.certainty).toBe('definite');
    expect(f.details).toMatchObject({ source: 'app-1', steps: 3, largestStepMs: 3_595_000, first: `${log}:3`, largest: `${log}:3` });
    expect(f.message).toMatch(/went backwards 3 times by more than --clock-skew 250ms/);
    expect(f.evidence.map((e) => e.line)).toEqual([2, 3]);
    expect(report.summary.byRule['clock-went-backwards']).toBe(1);
  });

  it('names the largest step when it is not the first', async () => {
    const log = file([
      ev('10:00:02.000', 'acquire', { ownerId: 'w', leaseId: 'L', fenceToken: 1, result: 'granted' }),
      ev('10:00:01.000', 'keepalive', { ownerId: 'w', leaseId: 'L', result: 'ok' }),
      ev('10:00:09.000', 'keepalive', { ownerId: 'w', leaseId: 'L', result: 'ok' }),
      ev('10:00:03.000', 'keepalive', { ownerId: 'w', leaseId: 'L', result: 'ok' }),
    ]);
    const f = (await analyze({ files: [log] })).findings.find((x) => x.rule === 'clock-went-backwards')!;
    expect(f.details).toMatchObject({ steps: 2, largestStepMs: 6000, first: `${log}:2`, largest: `${log}:4` });
    expect(f.evidence.map((e) => e.line)).toEqual([1, 2, 3, 4]);
  });

  it('does not compare two sources interleaved in one file, two files of one source, or steps within --clock-skew', async () => {
    const mixed = file([
      ev('10:00:05.000', 'acquire', { ownerId: 'w', leaseId: 'L', fenceToken: 1, result: 'granted', source: 'a' }),
      ev('10:00:01.000', 'write', { ownerId: 'w', leaseId: 'L', fenceToken: 1, result: 'accepted', source: 'b' }),
      ev('10:00:06.000', 'release', { ownerId: 'w', leaseId: 'L', result: 'released', source: 'a' }),
    ]);
    const one = file([ev('10:00:05.000', 'acquire', { ownerId: 'w', leaseId: 'L', fenceToken: 1, result: 'granted', source: 's' })]);
    const two = file([ev('10:00:01.000', 'write', { ownerId: 'w', leaseId: 'L', fenceToken: 1, result: 'accepted', source: 's' })]);
    const skewed = file([ev('10:00:05.000', 'acquire', { resource: 'x', fenceToken: 1, result: 'granted' }), ev('10:00:04.500', 'write', { resource: 'x', fenceToken: 1, result: 'accepted' })]);
    for (const files of [[mixed], [one, two]]) {
      expect((await analyze({ files })).findings.filter((f) => f.rule === 'clock-went-backwards')).toEqual([]);
    }
    expect((await analyze({ files: [skewed], clockSkewMs: 1000 })).findings.filter((f) => f.rule === 'clock-went-backwards')).toEqual([]);
    expect((await analyze({ files: [skewed], clockSkewMs: 100 })).findings.filter((f) => f.rule === 'clock-went-backwards')).toHaveLength(1);
  });

  it('each analysis has its own state: a second run does not inherit the first one\'s steps', async () => {
    const log = file(steppedBack);
    const clean = file([ev('10:00:00.000', 'acquire', { fenceToken: 1, result: 'granted' })]);
    await analyze({ files: [log] });
    expect((await analyze({ files: [clean] })).findings).toEqual([]);
    expect((await analyze({ files: [log] })).findings.filter((f) => f.rule === 'clock-went-backwards')).toHaveLength(1);
  });

  it('every format tells it', async () => {
    const log = file(steppedBack);
    for (const format of ['table', 'json', 'markdown', 'html', 'junit', 'github']) {
      const r = await runCli(['analyze', '-f', format, log]);
      expect(r.stdout, format).toContain('clock-went-backwards');
      expect(r.stdout, format).toMatch(/went backwards (once|\d+ times)/);
    }
  });
});

describe('stories and timelines never show a negative time', () => {
  it('stories are relative to the earliest event, and mark a line shown after a later line of its file', async () => {
    const report = await analyze({ files: [file(steppedBack)] });
    expect(report.findings.length).toBeGreaterThan(1);
    for (const f of report.findings) {
      const story = renderStory(f);
      expect(story[0]).toMatch(/^t=0 /);
      for (const line of story) expect(line).not.toMatch(/t=-/);
    }
    const stale = report.findings.find((f) => f.rule === 'accepted-stale-write')!;
    const grant = renderStory(stale).find((l) => l.includes('acquire(orders/1) -> lease-A'))!;
    expect(grant).toMatch(/\[logged before line \d above: the clock went back\]/);
    const plain = renderStory({ ...stale, evidence: stale.evidence.filter((e) => e.line >= 3 && e.line <= 5) });
    for (const line of plain) expect(line).not.toContain('clock went back');
  });

  it('the timeline command starts at the earliest event and marks the step back', async () => {
    const r = await runCli(['timeline', '-r', 'orders/1', file(steppedBack)]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/t=-/);
    expect(r.stdout).toMatch(/^t=0 .*worker-a: write\(token=1\) -> accepted.*:6 /m);
    expect(r.stdout).toMatch(/<< clock went back 59m55s/);
    expect(r.stdout.match(/clock went back/g)).toHaveLength(2); // at line 3, and line 6 is 3 s before line 5
  });
});

describe('terminal escaping of messages built from log content', () => {
  const hostile = ['evil\u001b]0;pwned\u0007', 'two\nstalewrite: fake line', 'bidi\u202egnp.exe'];
  const log = () => file(hostile.map((resource, i) => ({ ts: at(`10:00:0${i}.000`), type: 'acquire', resource, fenceToken: i + 1, result: 'granted' })));

  it('timeline -r nope lists the resources seen, each escaped, on one stderr line', async () => {
    const r = await runCli(['timeline', '-r', 'nope', log()]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^stalewrite: no events for resource "nope"; resources seen: /);
    expect(lines[0]).toContain('evil\\x1b]0;pwned\\x07');
    expect(lines[0]).toContain('two\\nstalewrite: fake line');
    expect(lines[0]).toContain('bidi\\u{202e}gnp.exe');
    expect(lines[1]).toMatch(/^Run "stalewrite timeline --help" for usage\.$/);
  });

  it('a resource asked for with control characters is escaped too', async () => {
    const r = await runCli(['timeline', '-r', 'a\u001b[2Jb\nc', log()]);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stderr).toContain('no events for resource "a\\x1b[2Jb\\nc"');
  });

  it("yargs' own multi-line messages keep their lines, each escaped and prefixed", async () => {
    const r = await runCli(['analyze', '-f', 'bogus\u001b[31m', log()]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('\u001b');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/^stalewrite: /);
    expect(r.stderr).toMatch(/bogus(\\x1b|\\u001b)\[31m/);
  });

  it('unknown options typed with control characters are escaped', async () => {
    const r = await runCli(['analyze', '--fial-on\u001b[31m', 'error', log()]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stderr).toMatch(/^stalewrite: Unknown option --fial-on\\x1b\[31m/m);
  });
});

describe('small fixes', () => {
  it('the html note names --max-drawn, the option that limits drawing', async () => {
    const lines = ['r1', 'r2', 'r3'].map((resource) => ({ ts: at('10:00:00.000'), type: 'write', resource, result: 'accepted' }));
    const r = await runCli(['analyze', '-f', 'html', '--max-drawn', '1', file(lines)]);
    expect(r.stdout).toContain('2 more resources are not drawn (raise --max-drawn).');
    expect(r.stdout).not.toContain('raise --max-resources');
  });

  it('JUnit testcase names are unique as written, after escaping', async () => {
    const names = ['a\u0001', 'a\\u{1}'];
    const lines = names.flatMap((resource) => [
      { ts: at('10:00:00.000'), type: 'write', resource, result: 'accepted' },
      { ts: at('10:00:01.000'), type: 'write', resource: `${resource}-clean`, fenceToken: 1, result: 'accepted' },
    ]);
    const report = await analyze({ files: [file(lines)] });
    const xml = renderJunit(report);
    const written = [...xml.matchAll(/<testcase [^>]*name="([^"]*)"/g)].map((m) => m[1]!);
    expect(written.length).toBe(report.findings.length + report.resources.filter((r) => r.readiness !== 'violated').length);
    expect(new Set(written).size).toBe(written.length);
    expect(written).toContain('missing-token on a\\u{1}');
    expect(written).toContain('missing-token on a\\u{1} (2)');
  });
});
