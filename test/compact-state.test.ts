/**
 * The compact per-resource state (timeline/timeline.ts, pool.ts, operations.ts): what the typed
 * arrays keep must be exactly what the object state kept. Cases the fixtures do not reach: tokens
 * above 2^53 in every place a token is kept, line numbers above 2^31, counters past 2^32, lease
 * slots reused, the operation index's table under eviction and hash collisions, and (file, source)
 * pairs let go with the state that names them.
 */
import { describe, expect, it } from 'vitest';
import { analyze, Engine, rules } from '../src/index.js';
import type { LockEvent } from '../src/model/event.js';
import { OperationIndex } from '../src/timeline/operations.js';
import { Blobs, ByteReader, ByteWriter, MAX_BLOB, Texts } from '../src/timeline/pool.js';
import { Counter, type Lease, ResourceTimeline, TimelineStore } from '../src/timeline/timeline.js';

const T0 = Date.UTC(2026, 2, 1, 10);
type Rec = Record<string, unknown>;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function ev(i: number, type: LockEvent['type'], extra: Partial<LockEvent> = {}): LockEvent {
  return {
    ts: T0 + i,
    type,
    resource: 'r',
    result: type === 'write' ? 'accepted' : type === 'acquire' ? 'granted' : type === 'release' ? 'released' : type === 'keepalive' ? 'ok' : type === 'expire' ? 'expired' : 'revoked',
    observer: type === 'write' ? 'resource' : 'authority',
    source: 's',
    file: 'f',
    line: i,
    ...extra,
  };
}

describe('tokens above 2^53', () => {
  const big = 2n ** 60n;
  it('are kept exactly by leases, the highest accepted write and the findings', async () => {
    const report = await analyze({
      events: [
        { ts: at(0), type: 'acquire', resource: 'q', ownerId: 'A', leaseId: 'a', fenceToken: String(big + 1n) },
        { ts: at(1), type: 'expire', resource: 'q', leaseId: 'a' },
        { ts: at(2), type: 'acquire', resource: 'q', ownerId: 'B', leaseId: 'b', fenceToken: String(big + 2n) },
        { ts: at(3), type: 'write', resource: 'q', ownerId: 'B', leaseId: 'b', fenceToken: String(big + 2n), result: 'accepted' },
        // 2^60 + 1 and 2^60 + 2 are one double: only an exact comparison tells them apart.
        { ts: at(4), type: 'write', resource: 'q', ownerId: 'A', leaseId: 'a', fenceToken: String(big + 1n), result: 'accepted' },
      ] as Rec[],
    });
    expect(report.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
    const f = report.findings[0]!;
    expect(f.message).toContain(`token ${big + 1n}`);
    expect(f.message).toContain(`token ${big + 2n}`);
    expect(f.evidence.map((e) => e.fenceToken)).toEqual([String(big + 1n), undefined, String(big + 2n), String(big + 2n), String(big + 1n)]);
    expect(report.resources[0]!.highestAcceptedToken).toBe(String(big + 2n));
  });

  it('find their lease by token and compare with small tokens exactly', () => {
    const t = new ResourceTimeline('r');
    t.apply(ev(1, 'acquire', { fenceToken: big + 1n, ttlMs: 1000 }));
    t.apply(ev(2, 'acquire', { fenceToken: 5n }));
    expect(t.findLease({ fenceToken: big + 1n })!.fenceToken).toBe(big + 1n);
    expect(t.findLease({ fenceToken: big })).toBeUndefined();
    expect(t.highestGranted!.fenceToken).toBe(big + 1n);
    t.apply(ev(3, 'write', { fenceToken: big + 1n }));
    expect(t.highestToken).toBe(big + 1n);
    expect(t.staleness(ev(4, 'write', { fenceToken: big }))).toBe('stale');
    expect(t.staleness(ev(4, 'write', { fenceToken: big + 2n }))).toBe('fresh');
    expect(t.staleness(ev(4, 'write', { fenceToken: 5n }))).toBe('stale');
    // The window holds a BigInt and a number; a token between them was never granted.
    expect(t.grantStatus(big)).toBe('never');
    expect(t.grantStatus(5n)).toBe('granted');
  });
});

describe('line numbers above 2^31 and counters past 2^32', () => {
  it('evidence names the exact line of a lease grant, renewal, end and kept write', () => {
    const far = 3_000_000_000; // above 2^31
    const engine = new Engine({ rules });
    engine.push(ev(1, 'acquire', { ownerId: 'A', leaseId: 'a', fenceToken: 1n, line: far + 1 }));
    engine.push(ev(2, 'keepalive', { ownerId: 'A', leaseId: 'a', line: far + 2 }));
    engine.push(ev(3, 'expire', { leaseId: 'a', line: far + 3 }));
    engine.push(ev(4, 'acquire', { ownerId: 'B', leaseId: 'b', fenceToken: 2n, line: far + 4 }));
    engine.push(ev(5, 'write', { ownerId: 'B', leaseId: 'b', fenceToken: 2n, line: far + 5 }));
    engine.push(ev(6, 'write', { ownerId: 'A', leaseId: 'a', fenceToken: 1n, line: far + 6 }));
    engine.finish();
    const f = engine.findings.find((x) => x.rule === 'accepted-stale-write')!;
    expect(f.evidence.map((e) => e.line)).toEqual([far + 1, far + 3, far + 4, far + 5, far + 6]);
    const t = engine.timeline('r')!;
    expect(t.findLease({ leaseId: 'a' })!.lastRenew.line).toBe(far + 2);
  });

  it('a counter that reaches 2^32 goes on exactly', () => {
    const store = new TimelineStore();
    const id = store.add('r');
    store.setCount(id, Counter.events, 2 ** 32 - 3);
    for (let i = 0; i < 5; i++) store.bump(id, Counter.events);
    expect(store.count(id, Counter.events)).toBe(2 ** 32 + 2);
    const t = store.view(id);
    t.findings = 2 ** 40;
    expect(t.findings).toBe(2 ** 40);
    expect(t.events).toBe(2 ** 32 + 2);
  });

  it('counters kept in a byte, then with a high part, then beside, are exact at every boundary, and each resource of a page keeps its own', () => {
    const store = new TimelineStore();
    const ids = Array.from({ length: 3 }, (_, k) => store.add(`r${k}`));
    const [a, b, c] = ids as [number, number, number];
    for (let k = 0; k < 300; k++) {
      store.bump(a, Counter.accepted);
      expect(store.count(a, Counter.accepted)).toBe(k + 1);
      if (k < 254) store.bump(b, Counter.accepted);
    }
    // b's page has a high part now (a passed 255): b and c read the same.
    expect(store.count(b, Counter.accepted)).toBe(254);
    expect(store.count(c, Counter.accepted)).toBe(0);
    for (let k = 0; k < 3; k++) store.bump(b, Counter.accepted);
    expect(store.count(b, Counter.accepted)).toBe(257);
    for (const start of [254, 255, 256, 511, 2 ** 32 - 2, 2 ** 40 - 4, 2 ** 40 - 2, 2 ** 40 - 1, 2 ** 53 - 3]) {
      store.setCount(c, Counter.withoutToken, start);
      expect(store.count(c, Counter.withoutToken)).toBe(start);
      for (let k = 1; k <= 3; k++) {
        store.bump(c, Counter.withoutToken);
        expect(store.count(c, Counter.withoutToken)).toBe(start + k);
      }
    }
    // Back below: kept in the typed arrays again.
    store.setCount(c, Counter.withoutToken, 7);
    expect(store.count(c, Counter.withoutToken)).toBe(7);
    expect((store as unknown as { bigCounts: Map<number, number> }).bigCounts.size).toBe(0);
    expect([a, b, c].map((id) => store.count(id, Counter.events))).toEqual([0, 0, 0]);
  });
});

describe('lease slots', () => {
  it('a reused slot is another lease: keepalive-gap reports the new lease too', () => {
    const engine = new Engine({ rules });
    // A lease that never ends keeps the resource's state in slots (no summary record, whose rebuilding would move them).
    engine.push(ev(-1, 'acquire', { ownerId: 'K', leaseId: 'k' }));
    engine.push(ev(0, 'acquire', { ownerId: 'A', leaseId: 'a', fenceToken: 1n, ttlMs: 100 }));
    engine.push(ev(500, 'keepalive', { ownerId: 'A', leaseId: 'a' })); // a gap past the ttl: reported
    const t = engine.timeline('r')!;
    const first = t.findLease({ leaseId: 'a' })!;
    engine.push(ev(600, 'expire', { leaseId: 'a' }));
    // Three more ended leases push lease a out of the timeline; its slot is let go.
    for (let k = 0; k < 3; k++) {
      engine.push(ev(700 + k * 10, 'acquire', { ownerId: 'B', leaseId: `b${k}`, fenceToken: BigInt(2 + k) }));
      engine.push(ev(705 + k * 10, 'release', { ownerId: 'B', leaseId: `b${k}` }));
    }
    expect(t.findLease({ leaseId: 'a' })).toBeUndefined();
    engine.push(ev(800, 'acquire', { ownerId: 'Z', leaseId: 'z', fenceToken: 9n, ttlMs: 100 }));
    const z = t.findLease({ leaseId: 'z' })!;
    expect(z.slot).toBe(first.slot); // the slot is reused …
    expect(z.id).not.toBe(first.id); // … by another lease
    engine.push(ev(1500, 'keepalive', { ownerId: 'Z', leaseId: 'z' }));
    engine.finish();
    expect(engine.findings.filter((f) => f.rule === 'keepalive-gap').map((f) => f.evidence.at(-1)!.leaseId)).toEqual(['a', 'z']);
  });

  it('state and its side tables do not grow with events: records, leases, owners, identifiers and (file, source) pairs are let go', () => {
    const engine = new Engine({ rules, maxOperations: 50 });
    for (let i = 0; i < 5000; i++) {
      // Every line its own source (a hostile log): the pairs held follow the state, not the events.
      const source = `src-${i}`;
      const base = { ownerId: `w${i}`, leaseId: `l${i}`, source };
      engine.push(ev(10 * i, 'acquire', { ...base, fenceToken: BigInt(i + 1), ttlMs: 5 }));
      engine.push(ev(10 * i + 1, 'write', { ...base, fenceToken: BigInt(i + 1), operationId: `op-${i}` }));
      engine.push(ev(10 * i + 2, 'release', base));
    }
    const t = engine.timeline('r')!;
    const store = t.store;
    expect(t.leases.length).toBe(3);
    expect(store.events.live).toBeLessThanOrEqual(1 + 50);
    expect(store.origins.live).toBeLessThanOrEqual(3 * 3 + 1 + 50 + 1);
    // Every lease its own owner: owners and identifiers follow the state too.
    expect(store.owners.live).toBeLessThanOrEqual(3 + 1 + 50);
    expect(store.texts.live).toBeLessThanOrEqual(3 + 2 * (1 + 50) + 50);
    expect(t.highestToken).toBe(5000n);
  });
});

describe('operation index', () => {
  it('finds exactly the last max (resource, operationId) pairs, through collisions and eviction', () => {
    const store = new TimelineStore();
    const ids = ['a', 'b', 'c'].map((r) => store.add(r));
    const max = 7;
    const index = new OperationIndex(max, store);
    const model: string[] = []; // keys in insertion order, the oldest first
    let seed = 12345;
    const rand = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
    for (let step = 0; step < 5000; step++) {
      const r = rand(3);
      const op = `op-${rand(12)}`;
      const key = `${r}/${op}`;
      const write = ev(step, 'write', { resource: store.name(ids[r]!), operationId: op, fenceToken: BigInt(step), ownerId: `w${step}` });
      const before = index.get(store.name(ids[r]!), op);
      expect(before !== undefined).toBe(model.includes(key));
      const firstOwner = before?.accepted?.ownerId;
      const s = index.touch(ids[r]!, write);
      index.accept(s, write);
      if (!model.includes(key)) {
        model.push(key);
        if (model.length > max) model.shift();
      }
      // The first accepted write of an entry stays its accepted write.
      const after = index.get(store.name(ids[r]!), op)!;
      expect(after.accepted!.ownerId).toBe(firstOwner ?? `w${step}`);
      for (const k of model) {
        const [rr, o] = k.split('/') as [string, string];
        expect(index.get(store.name(ids[Number(rr)]!), o)).toBeDefined();
      }
    }
    expect(store.events.live).toBe(max);
  });

  it("keeps an operationId once for its entry, its accepted write and its views, and lets it go with the entry's last holder", () => {
    const store = new TimelineStore();
    const id = store.add('r');
    const index = new OperationIndex(2, store);
    // ASCII ids are bytes in the texts, shared by holder count; one with a character above 255 is a string per holder.
    for (const [k, op] of ['op-1', 'op-\u2603'].entries()) {
      const write = ev(1, 'write', { resource: 'r', operationId: op, fenceToken: 1n });
      const s = index.touch(id, write);
      expect(store.texts.live).toBe(k === 0 ? 1 : 2);
      index.accept(s, write);
      const view = ev(2, 'write', { resource: 'r', operationId: op, fenceToken: 1n, observer: 'worker' });
      expect(index.addView(s, view)).toBe(true);
      expect(index.addView(s, { ...view, line: 3 })).toBe(true);
      // One operationId, held by the entry, its write and its two views (no leaseId, no owner).
      expect(store.texts.live).toBe(k === 0 ? 1 : 1 + 4);
      expect(index.acceptedAt(s)!.operationId).toBe(op);
      expect(index.viewsAt(s).map((v) => [v.operationId, v.line])).toEqual([
        [op, 2],
        [op, 3],
      ]);
    }
    expect(store.texts.live).toBe(5);
    // Two more entries push both out: their records and their operationIds go.
    for (const op of ['a', 'b']) index.touch(id, ev(4, 'write', { resource: 'r', operationId: op }));
    expect(store.events.live).toBe(0);
    expect(store.texts.live).toBe(2);
    expect(index.get('r', 'op-1')).toBeUndefined();
    expect(index.get('r', 'a')).toBeDefined();
  });
});

describe('resource names kept as bytes', () => {
  it('give back every name exactly and are found by name', () => {
    const store = new TimelineStore();
    const names = ['b', 'a', 'ab', 'a\u00ff', 'a\u0100x', 'z'.repeat(100), '', 'A', '\u00e9t\u00e9', 'res-10', 'res-9', 'res-1', 'x'.repeat(61), 'x'.repeat(62), 'x'.repeat(63), '\u{1f512}lock', 'ab\u0000'];
    for (const n of names) store.add(n);
    names.forEach((n, id) => {
      expect(store.name(id)).toBe(n);
      expect(store.idOf(n)).toBe(id);
    });
    expect(store.idOf('res-2')).toBe(-1);
    expect(store.idOf('a\u0100')).toBe(-1);
    // Asked in turn, each name is right (name() keeps the last).
    expect(store.name(1) + store.name(0) + store.name(1)).toBe('aba');
  });
});

describe('identifiers kept as code units', () => {
  it('gives back every string exactly, at each block size and past it, and reuses freed blocks', () => {
    const texts = new Texts();
    const samples = ['', 'a', 'l1-2', '\ud800', 'é-ü-☃', '😀'.repeat(4)];
    for (const n of [7, 8, 15, 16, 31, 32, 63, 64, 200]) samples.push('x'.repeat(n - 1) + 'ÿ');
    const handles = samples.map((s) => texts.put(s));
    samples.forEach((s, i) => {
      expect(texts.get(handles[i]!)).toBe(s);
      expect(texts.is(handles[i]!, s)).toBe(true);
      expect(texts.is(handles[i]!, s + 'y')).toBe(false);
      expect(texts.is(handles[i]!, undefined)).toBe(false);
    });
    expect(texts.put(undefined)).toBe(-1);
    expect(texts.is(-1, undefined)).toBe(true);
    expect(texts.live).toBe(samples.length);
    handles.forEach((h) => texts.free(h));
    expect(texts.live).toBe(0);
    // Freed blocks are reused, and hold the new string only.
    const again = texts.put('x'.repeat(14) + 'ÿ');
    expect(handles).toContain(again);
    expect(texts.get(again)).toBe('x'.repeat(14) + 'ÿ');
  });
});

describe('summary records of idle resources', () => {
  /** A view's whole state, as the rules can read it (reading it rebuilds a summary record). */
  function dump(t: ResourceTimeline): unknown {
    const lease = (l: Lease | undefined) =>
      l === undefined
        ? undefined
        : {
            id: l.id,
            leaseId: l.leaseId,
            ownerId: l.ownerId,
            fenceToken: l.fenceToken,
            grantTs: l.grantTs,
            renewTs: l.renewTs,
            ttlMs: l.ttlMs,
            ended: l.ended,
            endKind: l.endKind,
            endsAt: l.endsAt(),
            renewed: l.renewedSinceGrant,
            grant: { ...l.grant },
            lastRenew: { ...l.lastRenew },
            end: l.end === undefined ? undefined : { ...l.end },
            older: l.older?.id,
          };
    return {
      leases: t.leases.map(lease),
      newest: t.newest?.id,
      highestGranted: lease(t.highestGranted),
      highest: t.highest === undefined ? undefined : { ...t.highest },
      granted: t.grantedTokens,
      grantStatus: [0n, 1n, 2n, 3n, 5n, 9n, 40n, 70n, 71n, 200n].map((k) => t.grantStatus(k)),
      logsWrites: t.resourceLogsWrites,
      counts: [t.events, t.accepted, t.rejectedStaleFence, t.rejectedOther, t.withoutToken, t.findings],
    };
  }

  /** Run events through an engine, with summary records or without (compact() turned off); `each` after every event. */
  function run(events: LockEvent[], compact: boolean, each?: (engine: Engine) => void, maxOperations?: number) {
    const saved = TimelineStore.prototype.compact;
    let shrunk = 0;
    TimelineStore.prototype.compact = compact
      ? function (this: TimelineStore, id: number) {
          const done = saved.call(this, id);
          if (done) shrunk++;
          return done;
        }
      : () => false;
    try {
      const engine = new Engine({ rules, maxOperations });
      for (const e of events) {
        engine.push(e);
        each?.(engine);
      }
      engine.finish();
      return { engine, shrunk, findings: JSON.stringify(engine.findings), resources: JSON.stringify(engine.resources()) };
    } finally {
      TimelineStore.prototype.compact = saved;
    }
  }

  const r = (resource: string, i: number, type: LockEvent['type'], extra: Partial<LockEvent> = {}) => ev(i, type, { resource, ...extra });
  /** Two leases acquired, written under and ended on `res`, from `at` on: the resource is idle after. */
  const twoCycles = (res: string, at: number): LockEvent[] => [
    r(res, at, 'acquire', { ownerId: 'A', leaseId: `${res}-a`, fenceToken: 1n, ttlMs: 100 }),
    r(res, at + 10, 'keepalive', { ownerId: 'A', leaseId: `${res}-a`, ttlMs: 150 }),
    r(res, at + 20, 'write', { ownerId: 'A', leaseId: `${res}-a`, fenceToken: 1n, operationId: `${res}-op1` }),
    r(res, at + 30, 'release', { ownerId: 'A', leaseId: `${res}-a` }),
    r(res, at + 40, 'acquire', { ownerId: 'B', leaseId: `${res}-b`, fenceToken: 2n, ttlMs: 100 }),
    r(res, at + 50, 'write', { ownerId: 'B', leaseId: `${res}-b`, fenceToken: 2n, operationId: `${res}-op2` }),
    r(res, at + 60, 'expire', { leaseId: `${res}-b` }),
  ];

  const cases: Record<string, LockEvent[]> = {
    'a late stale write, accepted and rejected': [
      ...twoCycles('r', 0),
      r('r', 500, 'write', { ownerId: 'A', leaseId: 'r-a', fenceToken: 1n, operationId: 'late' }),
      r('r', 510, 'write', { ownerId: 'A', leaseId: 'r-a', fenceToken: 1n, operationId: 'late2', result: 'rejected-stale-fence' }),
    ],
    'an old release after a new grant': [
      ...twoCycles('r', 0),
      r('r', 500, 'acquire', { ownerId: 'C', leaseId: 'r-c', fenceToken: 3n, ttlMs: 1000 }),
      r('r', 510, 'release', { ownerId: 'A', leaseId: 'r-a' }),
      r('r', 520, 'release', { ownerId: 'B', leaseId: 'r-b', result: 'released' }),
    ],
    'a retried write and its worker view': [
      ...twoCycles('r', 0),
      r('r', 500, 'write', { ownerId: 'B', leaseId: 'r-b', fenceToken: 2n, operationId: 'r-op2' }),
      r('r', 510, 'write', { ownerId: 'B', leaseId: 'r-b', fenceToken: 2n, operationId: 'r-op2', observer: 'worker', result: 'error' }),
      r('r', 520, 'write', { ownerId: 'B', leaseId: 'r-b', operationId: 'r-op3' }),
    ],
    'a token never granted, and a keepalive of an ended lease': [
      ...twoCycles('r', 0),
      r('r', 500, 'write', { ownerId: 'D', leaseId: 'r-d', fenceToken: 9n, operationId: 'forged' }),
      r('r', 510, 'keepalive', { ownerId: 'B', leaseId: 'r-b' }),
      r('r', 520, 'expire', {}),
      r('r', 530, 'acquire', { ownerId: 'B', leaseId: 'r-b', fenceToken: 2n }),
    ],
    'a full window of 64 tokens, then old and new ones': [
      ...Array.from({ length: 70 }, (_, k) => [
        r('w', 10 * k, 'acquire', { ownerId: `o${k % 3}`, leaseId: `w-${k}`, fenceToken: BigInt(k * 2 + 1), ttlMs: 5 }),
        r('w', 10 * k + 5, k % 2 === 0 ? 'release' : 'revoke', { ownerId: `o${k % 3}`, leaseId: `w-${k}` }),
      ]).flat(),
      r('w', 1000, 'write', { ownerId: 'o1', leaseId: 'w-1', fenceToken: 3n }),
      r('w', 1010, 'write', { ownerId: 'o1', leaseId: 'w-69', fenceToken: 140n }),
      r('w', 1020, 'write', { ownerId: 'o1', leaseId: 'w-69', fenceToken: 139n }),
    ],
    'writes without leases, the highest of them kept in the record': [
      r('v', 0, 'write', { ownerId: 'A', fenceToken: 5n, ttlMs: 7 }),
      r('v', 10, 'write', { ownerId: 'B', fenceToken: 6n, observer: 'worker', result: 'ok' }),
      r('v', 20, 'write', { ownerId: 'B', fenceToken: 7n }),
      r('v', 30, 'write', { ownerId: 'A', fenceToken: 5n }),
      r('v', 40, 'write', { ownerId: 'C', fenceToken: 7n }),
      r('v', 50, 'write', { ownerId: 'C' }),
    ],
    // Numbers each side of one-byte varints: owner and (file, source) ids past 127; a highest write under the older lease, before the newest grant, at a fraction of a millisecond; ttls unlike the run's first, none, 2^40.
    'a highest write under an older lease, many owners and sources, fractional times, odd ttls': [
      ...Array.from({ length: 140 }, (_, k) => r(`m${k}`, 2 * k, 'acquire', { ownerId: `o${k}`, leaseId: `m${k}-a`, fenceToken: 1n, ttlMs: 100, source: `s${k}` })),
      ...Array.from({ length: 140 }, (_, k) => r(`m${k}`, 300 + 2 * k, 'release', { ownerId: `o${k}`, leaseId: `m${k}-a`, source: `s${k}` })),
      r('o', 1000, 'acquire', { ownerId: 'o139', leaseId: 'o-a', fenceToken: 5n, ttlMs: 7, source: 's139', ts: T0 + 1000.25 }),
      r('o', 1001, 'write', { ownerId: 'o139', leaseId: 'o-a', fenceToken: 5n, source: 's139', ts: T0 + 1001.5 }),
      r('o', 1002, 'acquire', { ownerId: 'o138', leaseId: 'o-b', fenceToken: 4n, source: 's138' }),
      r('o', 1003, 'release', { ownerId: 'o139', leaseId: 'o-a', source: 's139' }),
      r('o', 1004, 'release', { ownerId: 'o138', leaseId: 'o-b', fenceToken: 4n, source: 's138' }),
      r('o', 1005, 'acquire', { ownerId: 'o137', leaseId: 'o-c', fenceToken: 6n, ttlMs: 2 ** 40, source: 's137' }),
      r('o', 1006, 'write', { ownerId: 'o139', leaseId: 'o-a', fenceToken: 5n, operationId: 'o-2', source: 's139', result: 'rejected-stale-fence' }),
      r('o', 1007, 'revoke', { ownerId: 'o137', leaseId: 'o-c', source: 's137' }),
    ],
    'leases that end by old handles, by expiry without a name, and interleaved resources': [
      ...twoCycles('p', 0),
      ...twoCycles('q', 5),
      r('p', 300, 'acquire', { ownerId: 'C', leaseId: 'p-c', fenceToken: 3n, ttlMs: 50 }),
      r('q', 301, 'release', { ownerId: 'A', leaseId: 'q-a' }),
      r('p', 302, 'release', { ownerId: 'A', leaseId: 'p-a' }),
      r('p', 400, 'expire', { result: 'expired' }),
      r('q', 401, 'write', { ownerId: 'A', leaseId: 'q-a', fenceToken: 1n }),
      r('p', 402, 'write', { ownerId: 'C', leaseId: 'p-c', fenceToken: 3n }),
    ],
  };

  // maxOperations 1: the operation index lets each write go at the next one, and the write joins its resource's summary record (repack).
  for (const [name, events] of Object.entries(cases)) {
    for (const maxOperations of [undefined, 1]) {
      it(`${name}${maxOperations === undefined ? '' : ', the operation index holding one write'}: the same findings, summaries and state as without summary records`, () => {
        const plain = run(events, false, undefined, maxOperations);
        const shrunk = run(events, true, undefined, maxOperations);
        expect(shrunk.shrunk).toBeGreaterThan(0);
        expect(shrunk.findings).toBe(plain.findings);
        expect(shrunk.resources).toBe(plain.resources);
        // After every event, the rebuilt state reads as the state that never shrank.
        const names = [...new Set(events.map((e) => e.resource))];
        const all = (e: Engine) => names.map((n) => e.timeline(n)).filter((t) => t !== undefined).map(dump);
        const states: unknown[] = [];
        run(events, false, (e) => states.push(all(e)), maxOperations);
        let k = 0;
        run(events, true, (e) => expect(all(e)).toEqual(states[k++]), maxOperations);
        expect(k).toBe(events.length);
      });
    }
  }

  it('a write the operation index lets go joins its summary record also when the worker logged it (the views held the same record)', () => {
    for (const observer of ['resource', 'worker'] as const) {
      const engine = new Engine({ rules, maxOperations: 3 });
      for (let k = 0; k < 20; k++) {
        const base = { resource: `r${k}`, ownerId: 'A', leaseId: `l${k}` };
        engine.push(ev(10 * k + 1, 'acquire', { ...base, fenceToken: 1n, ttlMs: 1000 }));
        engine.push(ev(10 * k + 2, 'write', { ...base, fenceToken: 1n, operationId: `op${k}`, observer }));
        engine.push(ev(10 * k + 3, 'release', base));
      }
      // The index keeps the last 3 writes' records; every other resource's write is in its summary record.
      const store = engine.timeline('r0')!.store;
      expect(store.events.live, observer).toBeLessThanOrEqual(3 * 2);
    }
  });

  it('leaves a resource with a live lease, a token above 2^53 or a line above 2^31 as it is', () => {
    const store = new TimelineStore();
    const t = store.view(store.add('r'));
    t.apply(ev(1, 'acquire', { leaseId: 'a', fenceToken: 1n }));
    expect(store.compact(t.id)).toBe(false); // live
    t.apply(ev(2, 'release', { leaseId: 'a' }));
    expect(store.compact(t.id)).toBe(true);
    expect(store.compact(t.id)).toBe(false); // already
    expect(store.isCompact(t.id)).toBe(true);
    expect(t.newest!.leaseId).toBe('a'); // rebuilt
    expect(store.isCompact(t.id)).toBe(false);
    t.apply(ev(3, 'acquire', { leaseId: 'b', fenceToken: 2n ** 60n }));
    t.apply(ev(4, 'release', { leaseId: 'b' }));
    expect(store.compact(t.id)).toBe(false); // a big token
    const u = store.view(store.add('u'));
    u.apply(ev(2 ** 31 + 5, 'acquire', { resource: 'u', leaseId: 'c', fenceToken: 3n, line: 2 ** 31 + 5 }));
    u.apply(ev(2 ** 31 + 6, 'release', { resource: 'u', leaseId: 'c' }));
    expect(store.compact(u.id)).toBe(false); // a long line
    expect(store.blobs.live).toBe(0);
    expect(store.compacted).toBe(0);
  });

  it('gives its blocks back: the pools hold what idle resources need, not what they once used', () => {
    // The operation index keeps one write (its records hold their identifiers: not summary records).
    const engine = new Engine({ rules, maxOperations: 1 });
    for (let k = 0; k < 300; k++) for (const e of twoCycles(`x${k}`, 1000 * k)) engine.push(e);
    const store = engine.timeline('x0')!.store;
    expect(store.compacted).toBe(300);
    expect(store.blobs.live).toBe(300);
    // Two leases, a window of two tokens, the highest write, their identifiers: four 32-byte chunks at most.
    expect(store.blobs.bytes / store.blobs.live).toBeLessThanOrEqual(4 * 36);
    // The identifiers are in the records: the texts hold only the operation index's (its operationId, which its write shares, and the write's leaseId).
    expect(store.texts.live).toBe(2);
    expect(engine.timeline('x0')!.newest!.leaseId).toBe('x0-b'); // read: rebuilt
    expect(store.blobs.live).toBe(299);
  });
});

describe('summary record bytes', () => {
  it('numbers come back exactly: varints, int32s, doubles from a base, NaN, -0, fractions, large values', () => {
    const w = new ByteWriter();
    const nums: [number, number][] = [
      [0, 0], [1, 0], [127, 0], [128, 0], [2 ** 31, 0], [2 ** 47, 0], [2 ** 53 - 1, 0], [5, 2 ** 53 - 1], [1772323200000, 1772323100000],
      [Number.NaN, 3], [-0, 0], [0.5, 0], [1e300, 1], [-7, 7], [2 ** 60, 0], [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER], [3, Number.NaN],
    ];
    const ints = [0, -1, -2, 1, 2 ** 31 - 1, -(2 ** 31), 300];
    for (const [x, base] of nums) w.num(x, base);
    for (const v of ints) w.i(v);
    w.u(2 ** 52);
    // Each side of where the writer and reader switch from shifts to arithmetic (2^28 read, 2^31 written).
    const edges = [2 ** 7, 2 ** 14 - 1, 2 ** 14, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 28 + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 3, 2 ** 49 + 1];
    for (const v of edges) w.u(v);
    expect(w.full).toBe(false);
    const r = new ByteReader().at(w.buf, 0);
    for (const [x, base] of nums) expect(Object.is(r.num(base), x)).toBe(true);
    for (const v of ints) expect(r.i()).toBe(v);
    expect(r.u()).toBe(2 ** 52);
    for (const v of edges) expect(r.u()).toBe(v);
    expect(r.pos).toBe(w.pos);
  });

  const blobBytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);
  const blobOf = (blobs: Blobs, h: number, n: number) => blobs.page(h).subarray(blobs.at(h), blobs.at(h) + n);

  it('copies the writer\'s bytes by word as it copies any bytes', () => {
    const blobs = new Blobs();
    const w = new ByteWriter();
    for (const n of [1, 4, 31, 32, 33, 95, 1000, MAX_BLOB]) {
      w.reset(0);
      for (let k = 0; k < n; k++) w.u((k * 7 + n) & 127);
      const h = blobs.put(w.buf, w.pos, 1, w.words);
      const g = blobs.put(w.buf, w.pos, 2);
      expect(blobOf(blobs, h, n)).toEqual(w.buf.subarray(0, n));
      expect(blobOf(blobs, g, n)).toEqual(w.buf.subarray(0, n));
    }
  });

  it('keeps byte strings of every length in the smallest block that holds them, moves the last block of a class into a freed one, and lets empty pages go', () => {
    // Owners: k; `handles[k]` follows each move as the store's R_NEWEST does.
    const handles: number[] = [];
    const blobs = new Blobs((owner, h) => (handles[owner] = h));
    const lengths: number[] = [];
    // Every length up to 300 (each class boundary and both sides of it), then larger ones to MAX_BLOB.
    for (let n = 0; n <= 300; n++) lengths.push(n);
    for (let n = 301; n <= MAX_BLOB; n = Math.ceil(n * 1.07)) lengths.push(n - 1, n);
    lengths.push(MAX_BLOB - 1, MAX_BLOB);
    // Many of each, so that classes span pages.
    const all = [...lengths, ...Array.from({ length: 3000 }, (_, k) => lengths[(k * 7) % 120]!)];
    all.forEach((n, k) => (handles[k] = blobs.put(blobBytes(n, k), n, k)));
    const peak = blobs.pageCount;
    /** The strings that do not read back as put (with `seed` more). */
    const wrong = (gone: Set<number>, seed = 0) => all.filter((n, k) => !gone.has(k) && !blobOf(blobs, handles[k]!, n).every((b, i) => b === ((i * 31 + k + seed) & 255))).length;
    expect(wrong(new Set())).toBe(0);
    // Little unused: past the 4-byte owner, the string's length to a multiple of 4 up to 128, an eighth more past that.
    let need = 0;
    let small = 0;
    for (const n of all) {
      need += 4 + ((n + 3) & ~3);
      if (4 + n <= 128) small += 4 + ((n + 3) & ~3);
    }
    expect(blobs.bytes).toBeLessThanOrEqual(small + (need - small) * 1.125);
    // Free every other one: the rest read back the same after the moves.
    const gone = new Set<number>();
    for (let k = 0; k < all.length; k += 2) {
      blobs.free(handles[k]!);
      gone.add(k);
    }
    expect(wrong(gone)).toBe(0);
    expect(blobs.live).toBe(all.length - gone.size);
    for (let k = 1; k < all.length; k += 2) blobs.free(handles[k]!);
    expect(blobs.live).toBe(0);
    expect(blobs.bytes).toBe(0);
    // At most one empty page per class stays.
    const pages = blobs.pageCount;
    expect(pages).toBeLessThanOrEqual(72);
    // Used again: as many pages as the first time.
    all.forEach((n, k) => (handles[k] = blobs.put(blobBytes(n, k + 1), n, k)));
    expect(wrong(new Set(), 1)).toBe(0);
    expect(blobs.pageCount).toBe(peak);
  });
});
