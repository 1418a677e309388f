/**
 * A job's summaries in columns (src/partition/wire-resources.ts): what the main thread walks is
 * what the job had, field for field and in order, and the merge of several jobs' columns is the
 * order a single run sorts them in (by key, as `<` compares UTF-16 code units).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PLAIN_SUMMARIES, READINESS, type ResourceSummaries, type ResourceSummary } from '../src/model/report.js';
import { isWireResources, mergedResources, wireResources, wireTransfer } from '../src/partition/wire-resources.js';

const count = fc.oneof(fc.nat(5), fc.nat(), fc.constant(2 ** 40));
const summaryArb = fc.record({
  resource: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', 'a', 'é', '\ud83d\ude00', '\ud800', 'ﬀ', 'z')),
  readiness: fc.constantFrom(...READINESS),
  reason: fc.oneof(fc.constantFrom('no write was seen', 'token 2 accepted; 1 stale write got rejected-stale-fence'), fc.string()),
  highestAcceptedToken: fc.option(fc.oneof(fc.constantFrom('1', '18446744073709551617'), fc.bigInt({ min: 0n, max: 2n ** 80n }).map(String))),
  events: count,
  writes: fc.record({ accepted: count, rejectedStaleFence: count, rejectedOther: count, withoutToken: count }),
  staleWrites: count,
  oldHandleReleases: count,
  findings: count,
});

/** A list as Engine.resourceList() gives it: sorted by key, distinct keys, marked plain. */
function plain(list: ResourceSummary[]): ResourceSummaries {
  const sorted = [...new Map(list.map((r) => [r.resource, r])).values()].sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
  return Object.assign([...sorted], { [PLAIN_SUMMARIES]: true as const });
}

describe('summaries in columns', () => {
  it('give back each summary as it was, in ResourceSummary field order', () => {
    fc.assert(
      fc.property(fc.array(summaryArb, { maxLength: 40 }), (list) => {
        const given = plain(list);
        const wire = wireResources(given)!;
        expect(isWireResources(wire)).toBe(true);
        const back = [...mergedResources([wire])];
        expect(JSON.stringify(back)).toBe(JSON.stringify([...given]));
        expect(back.length).toBe(given.length);
        expect(wireTransfer(wire)).toHaveLength(6);
      }),
      { seed: 7, numRuns: 300 },
    );
  });

  it('merged from several jobs in the order the union sorts in', () => {
    fc.assert(
      fc.property(fc.array(summaryArb, { maxLength: 60 }), fc.array(fc.nat(3), { maxLength: 60 }), (list, parts) => {
        const all = [...plain(list)];
        const byJob: ResourceSummary[][] = [[], [], [], []];
        all.forEach((r, i) => byJob[parts[i] ?? 0]!.push(r));
        const wires = byJob.map((l) => wireResources(plain(l))!);
        const merged = mergedResources(wires);
        expect(merged.length).toBe(all.length);
        expect(JSON.stringify([...merged])).toBe(JSON.stringify(all));
        // Walked again, the same.
        expect(JSON.stringify([...merged])).toBe(JSON.stringify(all));
      }),
      { seed: 8, numRuns: 300 },
    );
  });

  it('are never taken from a report read from a file', () => {
    const wire = wireResources(plain([]))!;
    expect(isWireResources(JSON.parse(JSON.stringify(wire)))).toBe(false);
    expect(isWireResources({ ...wire, n: 1 })).toBe(false);
  });

  it('are not made of a list that may have other fields', () => {
    expect(wireResources([{ resource: 'r', readiness: 'untested', reason: '', highestAcceptedToken: null, events: 1, writes: { accepted: 0, rejectedStaleFence: 0, rejectedOther: 0, withoutToken: 0 }, staleWrites: 0, oldHandleReleases: 0, findings: 0 }])).toBeUndefined();
  });
});
