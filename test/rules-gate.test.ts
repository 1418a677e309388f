/**
 * The rules' gates (Rule.when): the engine skips a handler for the events its gate says it cannot
 * act on. A gate must be exact, so every report must be the same with and without the gates: each
 * rule alone and all of them together, on every fixture, on the partition tests' random histories
 * and on random events of every type and result (busy answers, failed renewals, rejected releases,
 * writes seen by the worker and by the resource).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, Engine, type AnalyzeOptions, type Report } from '../src/index.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import { rules } from '../src/rules/index.js';
import type { Rule } from '../src/rules/types.js';
import { EVENT_TYPES, RESULTS } from '../src/model/event.js';
import { historyArb } from './helpers/histories.js';
import { FIXTURES } from './helpers/run.js';

const ids = rules.map((r) => r.meta.id);

/** The report without the parts that differ between any two runs. */
function comparable(r: Report): unknown {
  return { ...r, input: { ...r.input, elapsedMs: undefined, files: r.input.files.map((f) => ({ ...f })) }, resources: [...r.resources] };
}

/** A run with the gates taken off every rule (restored after). */
async function ungated(options: AnalyzeOptions): Promise<Report> {
  const saved = rules.map((r) => r.when);
  for (const r of rules) (r as { when?: Rule['when'] }).when = undefined;
  try {
    return await analyze(options);
  } finally {
    rules.forEach((r, i) => ((r as { when?: Rule['when'] }).when = saved[i]));
  }
}

async function same(options: AnalyzeOptions, ruleSets: readonly (readonly string[] | undefined)[]): Promise<number> {
  let findings = 0;
  for (const set of ruleSets) {
    const o = { ...options, rules: set };
    const gated = await analyze(o);
    const plain = await ungated(o);
    expect(JSON.stringify(comparable(gated))).toBe(JSON.stringify(comparable(plain)));
    findings += gated.findings.length;
  }
  return findings;
}

/** Every rule alone, and all together. */
const EACH: readonly (readonly string[] | undefined)[] = [undefined, ...ids.map((id) => [id])];

describe('rule gates (Rule.when)', () => {
  it('name only event types the rule handles, and results those types have', () => {
    let gates = 0;
    for (const r of rules) {
      for (const [type, gate] of Object.entries(r.when ?? {})) {
        expect(EVENT_TYPES).toContain(type);
        expect(r.on[type as keyof Rule['on']], `${r.meta.id} gates ${type}, which it does not handle`).toBeTypeOf('function');
        for (const result of gate?.results ?? []) expect(RESULTS[type as keyof typeof RESULTS]).toContain(result);
        if (gate?.slot === true) expect(r.state, `${r.meta.id} gates ${type} on a slot it never has`).toBeTypeOf('function');
        gates++;
      }
    }
    expect(gates).toBeGreaterThan(10);
  });

  it('change no report on any fixture: all rules on every one, each rule alone on the top-level ones', async () => {
    let findings = 0;
    for (const c of findCases([FIXTURES])) {
      const options = { files: c.files, ...analysisOptions(c, readExpectation(c.expectPath)) };
      // (The other directories are the same incidents in other log forms.)
      findings += await same(options, dirname(c.name) === FIXTURES ? EACH : [undefined]);
    }
    // Worth something only if the fixtures do produce findings.
    expect(findings).toBeGreaterThan(100);
  }, 120_000);

  const dir = mkdtempSync(join(tmpdir(), 'sw-gate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('change no report on random histories', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(historyArb(), async (h) => {
        const files = h.files.map((f) => {
          const path = join(dir, `${n++}-${f.name}`);
          writeFileSync(path, f.lines.join('\n') + '\n');
          return path;
        });
        await same({ files, clockSkewMs: 100 }, EACH);
      }),
      { seed: 61, numRuns: 12 },
    );
  }, 120_000);

  it('change no report on random events of every type and result', async () => {
    const T0 = Date.UTC(2026, 2, 1, 10);
    const eventArb = fc.record({
      dt: fc.integer({ min: -300, max: 2500 }),
      type: fc.constantFrom(...EVENT_TYPES),
      r: fc.nat({ max: 2 }),
      owner: fc.nat({ max: 3 }),
      lease: fc.option(fc.nat({ max: 3 }), { freq: 4 }),
      token: fc.option(fc.nat({ max: 3 }), { freq: 6 }),
      result: fc.nat({ max: 4 }),
      ttl: fc.option(fc.constantFrom(1000, 5000)),
      op: fc.option(fc.nat({ max: 3 })),
      observer: fc.option(fc.constantFrom('worker', 'resource', 'authority')),
      source: fc.constantFrom('a', 'b'),
    });
    let findings = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 30, maxLength: 90 }), async (list) => {
        let t = T0;
        const events = list.map((e) => {
          t += e.dt;
          const results = RESULTS[e.type];
          const rec: Record<string, unknown> = { ts: new Date(t).toISOString(), type: e.type, resource: `r${e.r}`, ownerId: `w${e.owner}`, source: e.source, result: results[e.result % results.length] };
          if (e.lease !== null) rec.leaseId = `l${e.lease}`;
          if (e.token !== null) rec.fenceToken = String(e.token);
          if (e.ttl !== null && (e.type === 'acquire' || e.type === 'keepalive')) rec.ttlMs = e.ttl;
          if (e.op !== null && e.type === 'write') rec.operationId = `op${e.op}`;
          if (e.observer !== null && (e.type === 'write' || e.type === 'acquire')) rec.observer = e.observer;
          return rec;
        });
        findings += await same({ events, clockSkewMs: 100, busyWindowMs: 5000 }, EACH);
      }),
      { seed: 62, numRuns: 40 },
    );
    expect(findings).toBeGreaterThan(50);
  }, 120_000);
});

describe('a rule whose handlers or gates name what does not exist is refused', () => {
  const base = { meta: rules[0]!.meta, messages: {} } as const;
  const bad: [string, Partial<Rule>, RegExp][] = [
    ['a handler for no event type', { on: { writ: () => {} } as Rule['on'] }, /handler for "writ", which is not an event type/],
    ['a gate for no event type', { on: { write: () => {} }, when: { writ: { results: ['accepted'] } } as Rule['when'] }, /gate \(when\) for "writ"/],
    ['a gate with no handler', { on: { write: () => {} }, when: { acquire: { results: ['granted'] } } }, /gate \(when\) for "acquire" but no handler/],
    ['a gate with no result', { on: { write: () => {} }, when: { write: { results: [] } } }, /must name at least one result/],
    ['a result of another type', { on: { write: () => {} }, when: { write: { results: ['granted'] } } }, /names "granted", which is not a result of write/],
    ['a slot gate that is not true', { on: { write: () => {} }, when: { write: { slot: false as unknown as true } } }, /slot must be true/],
  ];
  for (const [what, rule, message] of bad) {
    it(what, () => {
      const r = { ...base, ...rule } as Rule;
      expect(() => new Engine({ rules: [r] })).toThrow(message);
      expect(() => new Engine({ rules: [r] })).toThrow(expect.objectContaining({ name: 'OptionError', option: 'rules' }));
    });
  }
  it('every built-in rule passes the check', () => {
    expect(new Engine({ rules })).toBeInstanceOf(Engine);
  });
});
