/**
 * Immutable once emitted (issue "Core v2", item 1): on every fixture, the findings streamed live
 * (onFinding, what `-f ndjson` prints) are the report's findings, byte for byte; turning capture
 * on (`-f html`, `timeline`) changes no finding; a finding cannot be changed once emitted; events
 * given to the engine frozen are never written to. Worker views join a finding within the
 * clock-skew bound of its write, a later one joins none, and live input that goes quiet still
 * gets its waiting finding out.
 */
import { existsSync, readFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { analysisOptions, findCases } from '../src/check/cases.js';
import { Engine } from '../src/engine.js';
import { EventCapture } from '../src/timeline/capture.js';
import { canonical } from '../src/profiles/canonical.js';
import { rules } from '../src/rules/index.js';
import type { Finding } from '../src/model/report.js';
import type { LockEvent } from '../src/model/event.js';
import { OptionError } from '../src/model/options.js';
import { FIXTURES } from './helpers/run.js';

const cases = findCases([FIXTURES]);

function expectationOf(path: string): { options?: Record<string, unknown> } | undefined {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { options?: Record<string, unknown> }) : undefined;
}

describe('findings are final when emitted, on every fixture', () => {
  it.each(cases.map((c) => [c.name.slice(FIXTURES.length + 1), c] as const))('%s', async (_name, c) => {
    const options = { files: c.files, ...analysisOptions(c, expectationOf(c.expectPath) as never) };
    const streamed: string[] = [];
    const live = await analyze({ ...options, onFinding: (f) => streamed.push(JSON.stringify(f)) });
    expect(streamed).toEqual(live.findings.map((f) => JSON.stringify(f)));
    const captured = await analyze({ ...options, timelines: { all: true } });
    expect(JSON.stringify(captured.findings)).toBe(JSON.stringify(live.findings));
    expect(JSON.stringify(captured.resources)).toBe(JSON.stringify(live.resources));
    for (const f of live.findings) {
      expect(Object.isFrozen(f)).toBe(true);
      expect(Object.isFrozen(f.evidence)).toBe(true);
      expect(() => {
        (f as { message: string }).message = 'changed';
      }).toThrow(TypeError);
    }
  });
});

const T0 = Date.UTC(2026, 2, 22, 11, 0, 0);
const line = (ms: number, rec: Record<string, unknown>) => JSON.stringify({ ts: new Date(T0 + ms).toISOString(), resource: 'orders/71', ...rec });
const grant = line(0, { type: 'acquire', source: 'authority', ownerId: 'a', leaseId: 'L1', fenceToken: 3, ttlMs: 5000 });
const dbWrite = line(400, { type: 'write', source: 'db', observer: 'resource', ownerId: 'a', leaseId: 'L1', operationId: 'op1', result: 'accepted' });
const view = (ms: number) => line(ms, { type: 'write', source: 'worker-a', observer: 'worker', ownerId: 'a', leaseId: 'L1', operationId: 'op1', fenceToken: 3, result: 'accepted' });
const later = (ms: number) => line(ms, { type: 'keepalive', source: 'authority', ownerId: 'a', leaseId: 'L1', result: 'ok' });

async function run(lines: string[], clockSkewMs = 250) {
  const streamed: Finding[] = [];
  const report = await analyze({ streams: [{ name: 'log', stream: Readable.from([Buffer.from(lines.join('\n') + '\n')]) }], clockSkewMs, onFinding: (f) => streamed.push(f) });
  return { report, streamed };
}

describe('worker views and the clock-skew bound', () => {
  it('a view within the bound joins the finding before it is emitted, in the stream and the report alike', async () => {
    const { report, streamed } = await run([grant, dbWrite, view(440), later(2000)]);
    const f = report.findings.find((x) => x.rule === 'missing-token')!;
    expect(f.message).toContain('dropped in transit');
    expect(f.evidence.some((e) => e.role.startsWith("worker's view"))).toBe(true);
    expect(streamed).toEqual(report.findings);
  });

  it('a view past the bound joins no finding: both outputs keep the finding as emitted', async () => {
    const { report, streamed } = await run([grant, dbWrite, later(1000), view(1100)]);
    const f = report.findings.find((x) => x.rule === 'missing-token')!;
    expect(f.message).not.toContain('dropped in transit');
    expect(f.evidence.some((e) => e.role.startsWith("worker's view"))).toBe(false);
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(report.findings));
  });

  it('a wider bound waits longer for the view', async () => {
    const { report } = await run([grant, dbWrite, later(1000), view(1100)], 1000);
    expect(report.findings.find((x) => x.rule === 'missing-token')!.message).toContain('dropped in transit');
  });

  it('live input that goes quiet emits a waiting finding without waiting for the next line', async () => {
    const stream = new PassThrough();
    const seen: Finding[] = [];
    const done = analyze({ streams: [{ name: 'stdin', stream }], onFinding: (f) => seen.push(f) });
    stream.write([grant, dbWrite].join('\n') + '\n');
    const start = Date.now();
    while (seen.length === 0 && Date.now() - start < 5000) await new Promise((r) => setTimeout(r, 50));
    expect(seen.map((f) => f.rule)).toContain('missing-token');
    stream.end();
    const report = await done;
    expect(JSON.stringify(report.findings)).toBe(JSON.stringify(seen));
  });
});

describe('live input that trickles', () => {
  it('emits a finding of its first lines before its eighth line comes (the wrapper waits at most QUIET_FLUSH_MS)', async () => {
    // A line every 250 ms, never quiet for 500 ms: the first lines wait for the wrapper's decision
    // at most 500 ms from the first, not for the eighth line (1.75 s).
    const stream = new PassThrough();
    const seen: { rule: string; before: number }[] = [];
    let written = 0;
    const done = analyze({ streams: [{ name: 'stdin', stream }], onFinding: (f) => seen.push({ rule: f.rule, before: written }) });
    const lines = [grant, dbWrite, ...Array.from({ length: 8 }, (_, k) => later(2000 + 1000 * k))];
    for (const l of lines) {
      stream.write(l + '\n');
      written++;
      await new Promise((r) => setTimeout(r, 250));
    }
    stream.end();
    const report = await done;
    const f = seen.find((x) => x.rule === 'missing-token');
    expect(f).toBeDefined();
    expect(f!.before).toBeLessThan(8);
    expect(report.input.events).toBe(lines.length);
  });
});

describe('events are values', () => {
  it('frozen events go through the engine, with capture, and give the findings of unfrozen ones', () => {
    const text = readFileSync(`${FIXTURES}/views.ndjson`, 'utf8') + '\n' + readFileSync(`${FIXTURES}/mixed-incidents.ndjson`, 'utf8');
    const events = (freeze: boolean): LockEvent[] =>
      text
        .split('\n')
        .flatMap((l, i) => {
          let record: Record<string, unknown>;
          try {
            record = JSON.parse(l) as Record<string, unknown>;
          } catch {
            return []; // blank, or one of the fixture's invalid lines
          }
          const ev = canonical.toEvent(record, { file: 'f', line: i + 1, source: 'f' });
          if (ev === null || typeof ev !== 'object') return [];
          return [freeze ? Object.freeze(ev) : ev];
        })
        .sort((a, b) => a.ts - b.ts);
    const findings = (freeze: boolean) => {
      const engine = new Engine({ rules, capture: new EventCapture() });
      for (const ev of events(freeze)) engine.push(ev);
      engine.finish();
      return JSON.stringify(engine.findings);
    };
    expect(findings(true)).toBe(findings(false));
    expect(JSON.parse(findings(true)).length).toBeGreaterThan(3);
  });
});

describe('options are checked in the library', () => {
  it.each([
    [{ busyWindowMs: 0 }, 'busyWindowMs'],
    [{ maxFindings: -1 }, 'maxFindings'],
    [{ clockSkewMs: Number.NaN }, 'clockSkewMs'],
    [{ busyThreshold: 2 }, 'busyThreshold'],
    [{ maxResources: 0 }, 'maxResources'],
    [{ maxLineBytes: 1.5 }, 'maxLineBytes'],
    [{ workers: 'sometimes' }, 'workers'],
    [{ timelines: { perResource: 1 } }, 'timelines.perResource'],
    [{ ringSize: 5 }, 'ringSize'],
    [{ maxFinding: 3 }, 'maxFinding'],
  ])('%j is refused with an OptionError', async (bad, option) => {
    const err = await analyze({ events: [], ...(bad as object) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OptionError);
    expect((err as OptionError).option).toBe(option);
  });

  it('an option it does not know is refused by name, and one left undefined is not', async () => {
    const err = await analyze({ events: [], ringSize: 5 } as never).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^analyze\(\) has no option "ringSize" \(removed in 0\.2\.0, with the ring buffer\); it takes files, streams, events, /);
    expect((await analyze({ events: [], extra: undefined } as never)).input.events).toBe(0);
  });

  it('the engine refuses them too', () => {
    expect(() => new Engine({ rules, busyWindowMs: 0 })).toThrow(OptionError);
  });
});
