import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { analyze, defineRule, Engine, rules, type Finding } from '../src/index.js';
import { canonical } from '../src/profiles/canonical.js';
import { MAX_LEASES, ResourceTimeline, StaleLeaseViewError } from '../src/timeline/timeline.js';
import type { LockEvent } from '../src/model/event.js';

const T0 = Date.UTC(2026, 2, 1, 10);
type Rec = Record<string, unknown>;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

/** The article's incident as records (no TTLs, so no keepalive-gap); `late` is the result of A's late write. */
function article(late: string, resource = 'resource-7'): Rec[] {
  return [
    { ts: at(0), type: 'acquire', resource, ownerId: 'A', leaseId: 'lease-A', fenceToken: 1 },
    { ts: at(10), type: 'expire', resource, leaseId: 'lease-A' },
    { ts: at(11), type: 'acquire', resource, ownerId: 'B', leaseId: 'lease-B', fenceToken: 2 },
    { ts: at(12), type: 'write', resource, ownerId: 'B', leaseId: 'lease-B', fenceToken: 2, result: 'accepted' },
    { ts: at(13), type: 'write', resource, ownerId: 'A', leaseId: 'lease-A', fenceToken: 1, result: late },
  ];
}

const ndjson = (recs: Rec[]) => recs.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('analyze() library API', () => {
  it('takes event objects', async () => {
    const report = await analyze({ events: article('accepted') });
    expect(report.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
    expect(report.findings[0]!.evidence.map((e) => [e.file, e.line, e.role])).toEqual([
      ['events', 1, 'late writer granted'],
      ['events', 2, "late writer's lease ended (expire)"],
      ['events', 3, 'newer writer granted'],
      ['events', 4, 'newer accepted write; highest=2'],
      ['events', 5, 'late write accepted'],
    ]);
    const safe = await analyze({ events: article('rejected-stale-fence') });
    expect(safe.findings).toEqual([]);
    expect(safe.resources[0]).toMatchObject({ resource: 'resource-7', readiness: 'verified', highestAcceptedToken: '2', staleWrites: 1 });
  });

  it('takes named streams and reports file:line from them', async () => {
    const report = await analyze({ streams: [{ name: 'db.log', stream: Readable.from([Buffer.from(ndjson(article('accepted')))]) }] });
    expect(report.findings[0]!.evidence.at(-1)).toMatchObject({ file: 'db.log', line: 5, source: 'db.log', fenceToken: '1', ownerId: 'A' });
  });

  it('counts invalid event objects and keeps going', async () => {
    const recs = [...article('accepted'), { ts: 'soon', type: 'write', resource: 'x', result: 'accepted' }];
    const report = await analyze({ events: recs });
    expect(report.input).toMatchObject({ lines: 6, events: 5, invalid: 1 });
    expect(report.input.problems[0]).toMatchObject({ file: 'events', line: 6 });
  });

  it('emits a finding while the input is still open', async () => {
    const stream = new PassThrough();
    const seen: Finding[] = [];
    let resolveFirst!: () => void;
    const first = new Promise<void>((r) => (resolveFirst = r));
    const done = analyze({
      streams: [{ name: 'live', stream }],
      onFinding: (f) => {
        seen.push(f);
        resolveFirst();
      },
    });
    stream.write(ndjson(article('accepted')));
    await first; // would hang if findings waited for the end of input
    expect(seen.map((f) => f.rule)).toEqual(['accepted-stale-write']);
    stream.end();
    const report = await done;
    expect(report.findings).toHaveLength(1);
  });

  it('merges sources by timestamp, ties going to the earlier source', async () => {
    const w = (token: number, s: number): Rec => ({ ts: at(s), type: 'write', resource: 'r', fenceToken: token, result: 'accepted' });
    const one = Readable.from([ndjson([w(2, 5)])]);
    const two = Readable.from([ndjson([w(1, 5)])]);
    const a = await analyze({ streams: [{ name: 'one', stream: one }, { name: 'two', stream: two }] });
    expect(a.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
    const b = await analyze({ streams: [{ name: 'two', stream: Readable.from([ndjson([w(1, 5)])]) }, { name: 'one', stream: Readable.from([ndjson([w(2, 5)])]) }] });
    expect(b.findings).toEqual([]);
  });

  it("keeps each source's own order even when it is not sorted", async () => {
    const w = (token: number, s: number): Rec => ({ ts: at(s), type: 'write', resource: 'r', fenceToken: token, result: 'accepted' });
    // The single source says token 2 then token 1 (its clock went backwards): still a late write.
    const report = await analyze({ streams: [{ name: 'db', stream: Readable.from([ndjson([w(2, 5), w(1, 4)])]) }] });
    // …and the step back (1 s, more than the clock-skew bound) is reported once, as a warning.
    expect(report.findings.map((f) => f.rule)).toEqual(['accepted-stale-write', 'clock-went-backwards']);
  });

  it('caps listed findings but counts every one, for the exit code too', async () => {
    const recs: Rec[] = [{ ts: at(0), type: 'write', resource: 'r', fenceToken: 100, result: 'accepted' }];
    for (let i = 1; i <= 5; i++) recs.push({ ts: at(i), type: 'write', resource: 'r', fenceToken: i, result: 'accepted' });
    const report = await analyze({ events: recs, maxFindings: 2, rules: ['accepted-stale-write'] });
    expect(report.findings).toHaveLength(2);
    expect(report.summary).toMatchObject({ findings: 5, findingsOmitted: 3, bySeverity: { error: 5, warning: 0, info: 0 } });
    expect(report.resources[0]!.findings).toBe(5);
  });

  it('selects rules by id and rejects unknown ones', async () => {
    const report = await analyze({ events: article('accepted'), rules: ['missing-token'] });
    expect(report.findings).toEqual([]);
    await expect(analyze({ events: [], rules: ['nope'] })).rejects.toThrow(/unknown rule "nope"/);
  });

  it('refuses to run on nothing', async () => {
    await expect(analyze({})).rejects.toThrow(/nothing to analyze/);
  });

  it('strict mode throws on the first invalid line', async () => {
    await expect(analyze({ events: [{ ts: 'x' }], strict: true })).rejects.toThrow(/events:1: .*--strict/);
  });
});

describe('observers', () => {
  it('a write logged by both the worker and the resource is judged once, by the resource', async () => {
    const recs = article('accepted');
    recs.push({ ...recs[4]!, ts: at(13.1), observer: 'worker' }); // the worker logs the same late write
    const report = await analyze({ events: recs });
    expect(report.findings).toHaveLength(1);
    const late = report.findings[0]!.evidence.find((e) => e.role === 'late write accepted')!;
    expect(late.observer).toBe('resource');
  });

  it('when only workers log outcomes, their accepted results stand for the resource', async () => {
    const recs = article('accepted').map((r) => (r.type === 'write' ? { ...r, observer: 'worker' } : r));
    const report = await analyze({ events: recs });
    expect(report.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
  });

  it('certainty: definite within one source, likely or possible across sources by the skew bound', async () => {
    const recs = article('accepted');
    const cross = recs.map((r, i) => (i === 4 ? { ...r, source: 'worker-a-host' } : r));
    const likely = await analyze({ events: cross, clockSkewMs: 250 });
    expect(likely.findings[0]!.certainty).toBe('likely'); // 1 s apart, bound 250 ms
    const possible = await analyze({ events: cross, clockSkewMs: 5000 });
    expect(possible.findings[0]!.certainty).toBe('possible');
    const same = await analyze({ events: recs });
    expect(same.findings[0]!.certainty).toBe('definite');
  });
});

describe('stale releases', () => {
  const base = (resource = 'q'): Rec[] => [
    { ts: at(0), type: 'acquire', resource, ownerId: 'A', leaseId: 'l-A', fenceToken: 1 },
    { ts: at(5), type: 'expire', resource, leaseId: 'l-A' },
    { ts: at(6), type: 'acquire', resource, ownerId: 'B', leaseId: 'l-B', fenceToken: 2 },
  ];

  it('an old release that succeeds while B holds is a finding, and B loses its hold', async () => {
    const recs = [...base(), { ts: at(7), type: 'release', resource: 'q', ownerId: 'A', leaseId: 'l-A', fenceToken: 1 }];
    const report = await analyze({ events: recs });
    expect(report.findings.map((f) => f.rule)).toEqual(['stale-release']);
    expect(report.findings[0]!.evidence.map((e) => e.role)).toEqual(['old handle granted', 'old handle ended', 'current holder granted', 'old handle released the lock']);
    // A second old release after B lost its hold finds no holder: no second finding.
    const again = await analyze({ events: [...recs, { ts: at(8), type: 'release', resource: 'q', leaseId: 'l-A' }] });
    expect(again.findings).toHaveLength(1);
  });

  it('a rejected old release is correct behaviour and makes the resource verified', async () => {
    const report = await analyze({ events: [...base(), { ts: at(7), type: 'release', resource: 'q', leaseId: 'l-A', result: 'rejected' }] });
    expect(report.findings).toEqual([]);
    expect(report.resources[0]).toMatchObject({ readiness: 'verified', oldHandleReleases: 1 });
  });

  it("the holder's own release is fine", async () => {
    const report = await analyze({ events: [...base(), { ts: at(7), type: 'release', resource: 'q', leaseId: 'l-B' }] });
    expect(report.findings).toEqual([]);
    expect(report.resources[0]!.readiness).toBe('untested');
  });
});

describe('granted-token window', () => {
  it('tells granted from never granted exactly around 2^53, where tokens change form', () => {
    const t = new ResourceTimeline('r');
    const grant = (token: bigint, i: number): LockEvent => ({ ts: T0 + i, type: 'acquire', resource: 'r', leaseId: `l${i}`, fenceToken: token, result: 'granted', observer: 'authority', source: 's', file: 'f', line: i });
    const safe = BigInt(Number.MAX_SAFE_INTEGER); // 2^53 - 1: kept as a number
    t.apply(grant(safe - 1n, 1));
    t.apply(grant(safe, 2));
    t.apply(grant(safe + 2n, 3)); // 2^53 + 1: kept as a BigInt
    expect(t.grantStatus(safe)).toBe('granted');
    expect(t.grantStatus(safe + 2n)).toBe('granted');
    expect(t.grantStatus(safe + 1n)).toBe('never'); // 2^53: between two granted tokens, as a double it would equal neither or both
    expect(t.grantStatus(safe + 3n)).toBe('never');
    expect(t.grantStatus(safe - 2n)).toBe('unknown'); // below the window
  });

  it('keeps a single granted token inline, exactly, until a second distinct one', () => {
    const t = new ResourceTimeline('r');
    const grant = (token: bigint, i: number): LockEvent => ({ ts: T0 + i, type: 'acquire', resource: 'r', leaseId: `l${i}`, fenceToken: token, result: 'granted', observer: 'authority', source: 's', file: 'f', line: i });
    const big = 2n ** 60n + 1n; // not a double
    expect(t.grantStatus(big)).toBe('unknown'); // nothing granted yet
    t.apply(grant(big, 1));
    t.apply(grant(big, 2)); // the same token again: still one
    expect(t.grantedTokens).toBe(big);
    expect(t.grantStatus(big)).toBe('granted');
    expect(t.grantStatus(big + 1n)).toBe('never');
    expect(t.grantStatus(big - 1n)).toBe('unknown');
    t.apply(grant(big + 2n, 3));
    expect(Array.isArray(t.grantedTokens) && t.grantedTokens.length).toBe(2);
    expect(t.grantStatus(big + 1n)).toBe('never');
    expect(t.grantStatus(big + 2n)).toBe('granted');
    expect(t.grantStatus(big)).toBe('granted');
    for (let i = 0; i < 70; i++) t.apply(grant(big + 3n + BigInt(i), 4 + i));
    const window = t.grantedTokens as bigint[];
    expect(window.length).toBe(64);
    expect(t.grantStatus(big)).toBe('unknown'); // fell out of the window
    expect(t.grantStatus(big + 72n)).toBe('granted');
    expect(t.grantStatus(big + 73n)).toBe('never');
  });
});

describe('compact per-resource state', () => {
  it('allocates the rare facts only when one happens, and rule slots only for rules that keep state', () => {
    const engine = new Engine({ rules });
    const ev = (i: number, type: LockEvent['type'], extra: Partial<LockEvent>): LockEvent => ({ ts: T0 + i, type, resource: 'r', result: 'granted', observer: 'authority', source: 's', file: 'f', line: i, ...extra });
    engine.push(ev(1, 'acquire', { leaseId: 'a', fenceToken: 1n, ttlMs: 1000 }));
    engine.push(ev(2, 'keepalive', { leaseId: 'a', result: 'ok', file: 'g' }));
    engine.push(ev(3, 'write', { leaseId: 'a', fenceToken: 1n, result: 'accepted', observer: 'resource' }));
    const t = engine.timeline('r')!;
    expect(t.rare).toBeUndefined();
    expect(t.staleWrites).toBe(0);
    // No rule keeps a slot here: busy-rate-rising's windows are typed columns of its own.
    expect(t.store.slots.get(t.id)).toBeUndefined();
    const lease = t.newest!;
    expect(lease.lastRenew).toMatchObject({ type: 'keepalive', file: 'g', source: 's', line: 2, ttlMs: 1000 });
    expect(lease.grant).toMatchObject({ type: 'acquire', file: 'f', source: 's', line: 1, ttlMs: 1000 });
    expect(lease.grant).toEqual(lease.grant);
    expect(lease.id).toBe(t.findLease({ leaseId: 'a' } as LockEvent)!.id); // one lease, two views
    engine.push(ev(4, 'keepalive', { leaseId: 'a', result: 'ok', ttlMs: 5000 }));
    expect(lease.grant.ttlMs).toBe(1000); // the grant's own ttl, though the lease's changed
    expect(lease.ttlMs).toBe(5000);
    expect(lease.lastRenew).toMatchObject({ file: 'f', line: 4, ttlMs: 5000 });
    engine.push(ev(5, 'acquire', { leaseId: 'b', fenceToken: 2n }));
    engine.push(ev(6, 'write', { leaseId: 'b', fenceToken: 2n, result: 'accepted', observer: 'resource' }));
    expect(t.staleWrites).toBe(0);
    engine.push(ev(7, 'write', { leaseId: 'a', fenceToken: 1n, result: 'timeout', observer: 'resource' }));
    expect(t.rare).toBeDefined();
    expect(t.staleWrites).toBe(1);
    expect(t.firstNotExplicit).toEqual({ token: 1n, highest: 2n, result: 'timeout' });
    expect([...t.notExplicitResults!]).toEqual(['timeout']);
    engine.push(ev(6000, 'release', { leaseId: 'a', result: 'released' })); // a expired by ttl at 5004: an old handle
    // A view is valid until the next event: both leases have ended, so the state is a summary record now, rebuilt when read.
    expect(t.store.isCompact(t.id)).toBe(true);
    expect(t.oldHandleReleasesSucceeded).toBe(1);
    expect(t.findLease({ leaseId: 'b' } as LockEvent)!.endKind).toBe('released-by-old-handle');
    expect(t.findLease({ leaseId: 'a' } as LockEvent)!.endKind).toBe('release');
    expect(t.findLease({ leaseId: 'a' } as LockEvent)!.id).toBe(lease.id);
    // The view held across the events: its slot was let go when the state shrank, so using it is an error, not another lease's data.
    expect(() => lease.leaseId).toThrow(StaleLeaseViewError);
    expect(() => lease.endsAt()).toThrow(/used after the event it was made for/);
  });
});

describe('bounded state', () => {
  it('per-resource state does not grow with the number of events', () => {
    const engine = new Engine({ rules });
    const mk = (i: number, type: LockEvent['type'], extra: Partial<LockEvent> = {}): LockEvent => ({
      ts: T0 + i,
      type,
      resource: 'hot',
      result: type === 'write' ? 'accepted' : type === 'acquire' ? 'granted' : type === 'release' ? 'released' : 'ok',
      observer: type === 'write' ? 'resource' : 'authority',
      source: 's',
      file: 'f',
      line: i,
      ...extra,
    });
    for (let i = 0; i < 50000; i++) {
      const token = BigInt(i);
      engine.push(mk(4 * i, 'acquire', { leaseId: `l${i}`, ownerId: `w${i % 7}`, fenceToken: token }));
      engine.push(mk(4 * i + 1, 'keepalive', { leaseId: `l${i}` }));
      engine.push(mk(4 * i + 2, 'write', { leaseId: `l${i}`, fenceToken: token }));
      if (i % 3 !== 0) engine.push(mk(4 * i + 3, 'release', { leaseId: `l${i}` })); // some leases never end
    }
    const t = engine.timeline('hot')!;
    expect(t.leases.length).toBeLessThanOrEqual(MAX_LEASES);
    // Leases that never end, with no TTL, overlap the next grant: only "possible" findings of that rule.
    expect(engine.findings.filter((f) => f.rule !== 'overlapping-leases')).toEqual([]);
    expect(new Set(engine.findings.map((f) => f.certainty))).toEqual(new Set(['possible']));
    expect(t.grantedTokens!.length).toBeLessThanOrEqual(64);
    expect(t.leases.filter((l) => l.end !== undefined).length).toBeLessThanOrEqual(3);
    expect(t.highest!.fenceToken).toBe(49999n);
  });

  it('the canonical profile output does not keep the raw line', () => {
    const text = JSON.stringify({ ts: at(0), type: 'write', resource: 'r', fenceToken: 1, result: 'accepted' });
    const ev = canonical.toEvent(JSON.parse(text) as Rec, { file: 'f', line: 1, source: 'f', text }) as LockEvent;
    expect(Object.values(ev)).not.toContain(text);
  });
});

describe('a stateful rule written as README "Adding a rule" says', () => {
  /** Per resource: the owners granted so far (at most 8, the bound this rule says), and whether it reported. */
  interface Owners {
    owners: string[];
    reported: boolean;
  }
  const ownerFlaps = defineRule<Owners>({
    meta: { id: 'owner-flaps', severity: 'info', title: 'The lock moved between three owners', symptom: 's', cause: 'c', check: 'k', action: 'a' },
    messages: { third: '{owner} is the third owner of {resource}' },
    state: () => ({ owners: [], reported: false }),
    when: { acquire: { results: ['granted'] } },
    on: {
      acquire(event, context) {
        const s = context.slot();
        if (event.ownerId === undefined || s.owners.includes(event.ownerId)) return;
        if (s.owners.length >= 8) s.owners.shift();
        s.owners.push(event.ownerId);
        if (s.owners.length === 3 && !s.reported) {
          s.reported = true;
          context.report({ messageId: 'third', data: { owner: event.ownerId, resource: event.resource }, evidence: [{ event, role: 'third grant' }] });
        }
      },
    },
    end(context) {
      // peek() reads the slot without making one: resources that never had a grant have none.
      if (context.peek() === undefined) seenWithout.push(context.timeline.resource);
    },
  });
  const seenWithout: string[] = [];

  it('keeps its own slot per resource, reports with a message id and data, and shares nothing with the timeline', () => {
    const engine = new Engine({ rules: [...rules, ownerFlaps] });
    const ev = (i: number, resource: string, type: LockEvent['type'], ownerId?: string): LockEvent => ({ ts: T0 + i * 1000, type, resource, ownerId, leaseId: `${resource}-${i}`, fenceToken: BigInt(i), ttlMs: 500, result: type === 'write' ? 'accepted' : 'granted', observer: type === 'write' ? 'resource' : 'authority', source: 's', file: 'f', line: i });
    const owners = ['a', 'b', 'a', 'c', 'd'];
    owners.forEach((o, i) => engine.push(ev(i + 1, 'r1', 'acquire', o)));
    engine.push(ev(10, 'r2', 'acquire', 'a'));
    engine.push(ev(11, 'r2', 'acquire', 'b'));
    engine.push(ev(12, 'r3', 'write'));
    engine.finish();
    const mine = engine.findings.filter((f) => f.rule === 'owner-flaps');
    expect(mine.map((f) => [f.resource, f.messageId, f.data, f.message])).toEqual([['r1', 'owner-flaps/third', { owner: 'c', resource: 'r1' }, 'c is the third owner of r1']]);
    expect(seenWithout).toEqual(['r3']);
    // Its slot is its own: r1 holds a, b, c, d; r2 a, b; r3 none.
    const slots = (r: string) => {
      const t = engine.timeline(r)!;
      return (t.store.slots.get(t.id) ?? []).filter((s): s is Owners => s !== undefined && Array.isArray((s as Owners).owners)).map((s) => s.owners);
    };
    expect(slots('r1')).toEqual([['a', 'b', 'c', 'd']]);
    expect(slots('r2')).toEqual([['a', 'b']]);
    expect(slots('r3')).toEqual([]);
  });
});
