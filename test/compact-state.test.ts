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
import { Texts } from '../src/timeline/pool.js';
import { Counter, ResourceTimeline, TimelineStore } from '../src/timeline/timeline.js';

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
