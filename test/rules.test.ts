/** Rule semantics on small hand-built histories (the fixtures cover them on realistic logs). */
import { describe, expect, it } from 'vitest';
import { analyze, Engine, rules, type Report } from '../src/index.js';
import { clockUnit } from '../src/rules/clock-derived-token.js';
import { renderStory, relative } from '../src/report/story.js';
import type { LockEvent } from '../src/model/event.js';

const T0 = Date.UTC(2026, 2, 1, 10);
type Rec = Record<string, unknown>;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const acquire = (s: number, owner: string, lease: string, token: number | string, extra: Rec = {}): Rec => ({ ts: at(s), type: 'acquire', resource: 'r', ownerId: owner, leaseId: lease, fenceToken: token, ...extra });
const write = (s: number, owner: string, lease: string | undefined, token: number | string | undefined, result: string, extra: Rec = {}): Rec => ({
  ts: at(s), type: 'write', resource: 'r', ownerId: owner, ...(lease !== undefined ? { leaseId: lease } : {}), ...(token !== undefined ? { fenceToken: token } : {}), result, ...extra,
});
const of = (report: Report, rule: string) => report.findings.filter((f) => f.rule === rule);
const run = (events: Rec[], extra: Record<string, unknown> = {}) => analyze({ events, ...extra });

describe('accepted-equal-token', () => {
  it('is an error from another lease, info (once per lease) from the same lease', async () => {
    const r = await run([
      acquire(0, 'A', 'l1', 5),
      write(1, 'A', 'l1', 5, 'accepted'),
      write(2, 'A', 'l1', 5, 'accepted'),
      write(3, 'A', 'l1', 5, 'accepted'),
      { ts: at(4), type: 'expire', resource: 'r', leaseId: 'l1' },
      acquire(5, 'B', 'l2', 5), // the authority reused the token
      write(6, 'B', 'l2', 5, 'accepted'),
    ]);
    const f = of(r, 'accepted-equal-token');
    expect(f.map((x) => x.severity)).toEqual(['info', 'error']);
    expect(r.resources[0]!.readiness).toBe('violated');
    expect(of(r, 'token-not-monotonic')).toHaveLength(1);
  });
});

describe('accepted-equal-token without lease ids', () => {
  it('tells holders apart by owner, never by the (equal) token', async () => {
    const r = await run([write(1, 'A', undefined, 7, 'accepted'), write(2, 'B', undefined, 7, 'accepted')]);
    expect(of(r, 'accepted-equal-token').map((f) => f.severity)).toEqual(['error']);
  });
});

describe('write-after-lease-end', () => {
  it('fires on a logged end, and on an inferred end at most as likely', async () => {
    const logged = await run([acquire(0, 'A', 'l1', 1), { ts: at(5), type: 'release', resource: 'r', leaseId: 'l1' }, write(6, 'A', 'l1', 1, 'accepted')]);
    expect(of(logged, 'write-after-lease-end').map((f) => f.certainty)).toEqual(['definite']);
    const inferred = await run([acquire(0, 'A', 'l1', 1, { ttlMs: 2000 }), write(6, 'A', 'l1', 1, 'accepted')]);
    const f = of(inferred, 'write-after-lease-end');
    expect(f.map((x) => x.certainty)).toEqual(['likely']);
    expect(f[0]!.evidence.find((e) => e.inferred)).toMatchObject({ type: 'expire', ts: at(2), line: 1 });
    expect(renderStory(f[0]!).join('\n')).toContain('expired (inferred: last renewal + ttl)');
  });

  it('is not repeated for a write already reported as an accepted stale write', async () => {
    const r = await run([acquire(0, 'A', 'l1', 1), { ts: at(1), type: 'expire', resource: 'r', leaseId: 'l1' }, acquire(2, 'B', 'l2', 2), write(3, 'B', 'l2', 2, 'accepted'), write(4, 'A', 'l1', 1, 'accepted')]);
    expect(r.findings.map((f) => f.rule)).toEqual(['accepted-stale-write']);
  });

  it('a renewal keeps the lease alive', async () => {
    const r = await run([acquire(0, 'A', 'l1', 1, { ttlMs: 2000 }), { ts: at(1.5), type: 'keepalive', resource: 'r', leaseId: 'l1' }, write(3, 'A', 'l1', 1, 'accepted')]);
    expect(r.findings).toEqual([]);
  });
});

describe('duplicate-effect and worker views', () => {
  it('a retry after a worker timeout applied twice: the worker view joins the evidence', async () => {
    const r = await run([
      acquire(0, 'A', 'l1', 1),
      write(1, 'A', 'l1', 1, 'accepted', { operationId: 'op-1' }),
      write(1.2, 'A', 'l1', 1, 'timeout', { operationId: 'op-1', observer: 'worker' }),
      write(2, 'A', 'l1', 1, 'accepted', { operationId: 'op-1' }),
      write(2.1, 'A', 'l1', 1, 'accepted', { operationId: 'op-1', observer: 'worker' }),
    ]);
    const f = of(r, 'duplicate-effect');
    expect(f).toHaveLength(1);
    expect(f[0]!.evidence.map((e) => e.role)).toEqual(['operation first accepted', 'same operation accepted again', "worker's view: timeout with token 1", "worker's view: accepted with token 1"]);
    // The worker-observed writes were not judged themselves.
    expect(r.findings.filter((x) => x.severity === 'error')).toHaveLength(1);
  });

  it('the same operationId on another resource is not a duplicate', async () => {
    const r = await run([write(1, 'A', undefined, 1, 'accepted', { operationId: 'op' }), { ...write(2, 'A', undefined, 1, 'accepted', { operationId: 'op' }), resource: 'other' }]);
    expect(of(r, 'duplicate-effect')).toEqual([]);
  });

  it('missing-token says "dropped in transit" when the worker sent a token, whichever is logged first', async () => {
    const viewFirst = await run([
      acquire(0, 'A', 'l1', 3),
      write(1, 'A', 'l1', 3, 'accepted', { operationId: 'op-9', observer: 'worker', ts: at(0.9) }),
      write(1, 'A', 'l1', undefined, 'accepted', { operationId: 'op-9' }),
    ]);
    // No resource write had been seen when the worker's line came, so it stood for the resource's
    // decision; once the resource logs the same operation, the worker's line is its view.
    const m = of(viewFirst, 'missing-token');
    expect(m).toHaveLength(1);
    expect(m[0]!.message).toMatch(/worker sent token 3: the token was dropped in transit/);
    const r = await run([
      acquire(0, 'A', 'l1', 3),
      write(0.5, 'B', undefined, 1, 'accepted', { resource: 'r' }),
      write(1, 'A', 'l1', undefined, 'accepted', { operationId: 'op-9' }),
      write(1.1, 'A', 'l1', 3, 'accepted', { operationId: 'op-9', observer: 'worker' }),
    ]);
    const f = of(r, 'missing-token');
    expect(f).toHaveLength(1);
    expect(f[0]!.evidence.map((e) => e.role)).toContain("worker's view: accepted with token 3");
    expect(f[0]!.message).toMatch(/the token was dropped in transit/);
  });
});

describe('token-not-monotonic and overlapping-leases', () => {
  it('a counter reset is found; the same grant logged twice is not', async () => {
    const r = await run([acquire(0, 'A', 'l1', 7), acquire(0.1, 'A', 'l1', 7), { ts: at(1), type: 'release', resource: 'r', leaseId: 'l1' }, acquire(2, 'B', 'l2', 1)]);
    expect(of(r, 'token-not-monotonic')).toHaveLength(1);
    expect(of(r, 'overlapping-leases')).toEqual([]);
  });

  it('certainty of an overlap follows what is known of the live lease', async () => {
    const noTtl = await run([acquire(0, 'A', 'l1', 1), acquire(1, 'B', 'l2', 2)]);
    expect(of(noTtl, 'overlapping-leases').map((f) => f.certainty)).toEqual(['possible']);
    expect(noTtl.resources[0]!.readiness).toBe('inconclusive'); // possible findings do not violate, but never pass
    expect(of(noTtl, 'overlapping-leases')[0]!.uncertainty).toMatchObject({ kind: 'unknown-end' });
    const withTtl = await run([acquire(0, 'A', 'l1', 1, { ttlMs: 10000 }), acquire(1, 'B', 'l2', 2)]);
    expect(of(withTtl, 'overlapping-leases').map((f) => f.certainty)).toEqual(['likely']);
    expect(withTtl.resources[0]!.readiness).toBe('violated');
    const expired = await run([acquire(0, 'A', 'l1', 1, { ttlMs: 500 }), acquire(1, 'B', 'l2', 2)]);
    expect(of(expired, 'overlapping-leases')).toEqual([]);
  });
});

describe('stale-not-explicit', () => {
  it('flags a stale write answered with a generic error', async () => {
    const r = await run([write(1, 'B', 'l2', 2, 'accepted'), write(2, 'A', 'l1', 1, 'timeout'), write(3, 'A', 'l1', 1, 'rejected-stale-fence')]);
    expect(of(r, 'stale-not-explicit')).toHaveLength(1);
    expect(r.resources[0]!.readiness).toBe('unconfirmed');
    expect(r.resources[0]!.reason).toMatch(/1 stale write got a timeout \(token 1 after token 2\) instead of an explicit rejected-stale-fence/);
  });
});

describe('unknown-token', () => {
  it('waits out the clock-skew window before judging a token not granted yet', async () => {
    const early = await run([acquire(0, 'A', 'l1', 1), write(1, 'B', undefined, 2, 'accepted', { source: 'db' }), acquire(1.1, 'B', 'l2', 2)], { clockSkewMs: 250 });
    expect(of(early, 'unknown-token')).toEqual([]);
    const late = await run([acquire(0, 'A', 'l1', 1), write(1, 'B', undefined, 2, 'accepted', { source: 'db' }), acquire(2, 'B', 'l2', 2)], { clockSkewMs: 250 });
    expect(of(late, 'unknown-token').map((f) => f.certainty)).toEqual(['likely']);
  });

  it('flags a token between granted ones, and does not judge without any grant', async () => {
    const between = await run([acquire(0, 'A', 'l1', 10), { ts: at(1), type: 'release', resource: 'r', leaseId: 'l1' }, acquire(2, 'B', 'l2', 20), write(3, 'B', 'l2', 15, 'accepted')]);
    expect(of(between, 'unknown-token')).toHaveLength(1);
    const none = await run([write(3, 'B', undefined, 123456, 'accepted')]);
    expect(of(none, 'unknown-token')).toEqual([]);
  });
});

describe('clock-derived-token', () => {
  it('recognises epoch seconds, ms, µs and ns near the event time, once per resource', async () => {
    const ev = (token: bigint) => ({ ts: T0, fenceToken: token }) as LockEvent;
    expect(clockUnit(ev(BigInt(T0 / 1000)))).toBe('seconds');
    expect(clockUnit(ev(BigInt(T0 + 5000)))).toBe('milliseconds');
    expect(clockUnit(ev(BigInt(T0) * 1000n))).toBe('microseconds');
    expect(clockUnit(ev(BigInt(T0) * 1000000n + 123n))).toBe('nanoseconds');
    expect(clockUnit(ev(42n))).toBeUndefined();
    expect(clockUnit(ev(BigInt(T0 / 1000 - 3 * 86400)))).toBeUndefined();
    expect(clockUnit({ ts: 5000, fenceToken: 5n } as LockEvent)).toBeUndefined(); // not a wall-clock time
    const r = await run([acquire(0, 'A', 'l1', String(BigInt(T0) * 1000000n)), write(1, 'A', 'l1', String(BigInt(T0) * 1000000n), 'accepted')]);
    expect(of(r, 'clock-derived-token')).toHaveLength(1);
  });
});

describe('keepalive-gap', () => {
  it('fires once per lease when the owner acts after a gap longer than the TTL', async () => {
    const r = await run([
      acquire(0, 'A', 'l1', 1, { ttlMs: 1000 }),
      { ts: at(0.5), type: 'keepalive', resource: 'r', leaseId: 'l1' },
      { ts: at(3), type: 'keepalive', resource: 'r', leaseId: 'l1', result: 'failed' },
      write(3.5, 'A', 'l1', 1, 'accepted'),
    ]);
    const f = of(r, 'keepalive-gap');
    expect(f).toHaveLength(1);
    expect(f[0]!.message).toMatch(/2\.5s without a successful renewal \(TTL 1s\)/);
  });
});

describe('busy-rate-rising', () => {
  const attempts = (start: number, n: number, busy: number, extra: Rec = {}): Rec[] =>
    Array.from({ length: n }, (_, i) => ({ ts: at(start + i), type: 'acquire', resource: 'r', ownerId: `w${i}`, ...(i < busy ? { result: 'busy' } : { leaseId: `l${start}-${i}`, fenceToken: start * 100 + i }), ...extra }));

  it('reports a rise of the busy share over the baseline window, with where time goes', async () => {
    const events = [...attempts(0, 10, 1), ...attempts(60, 10, 2, { latencyMs: 40 }), ...attempts(120, 10, 7, { latencyMs: 900 })];
    const r = await run(events);
    const f = of(r, 'busy-rate-rising');
    expect(f).toHaveLength(1);
    expect(f[0]!.message).toMatch(/from 10% .* to 70%/);
    expect(f[0]!.details).toMatchObject({ windowMs: 60000, baseline: { attempts: 10, busyShare: 0.1 }, rising: { attempts: 10, busyShare: 0.7 } });
    expect((f[0]!.details as { acquireLatencyMs: { max: number } }).acquireLatencyMs.max).toBe(900);
  });

  it('does not report a small rise, or a window with too few attempts', async () => {
    expect(of(await run([...attempts(0, 10, 1), ...attempts(60, 10, 3)]), 'busy-rate-rising')).toEqual([]);
    expect(of(await run([...attempts(0, 10, 1), ...attempts(60, 4, 4)]), 'busy-rate-rising')).toEqual([]);
  });

  it('counts attempts and busy answers past 65 535 in a window exactly', () => {
    const engine = new Engine({ rules });
    let line = 0;
    const window = (start: number, n: number, busy: number) => {
      for (let i = 0; i < n; i++) {
        line++;
        engine.push({ ts: T0 + start * 1000 + Math.floor(i / 2), type: 'acquire', resource: 'r', ownerId: 'w', result: i < busy ? 'busy' : 'failed', observer: 'authority', source: 's', file: 'f', line });
      }
    };
    window(0, 70_000, 7_000);
    window(60, 70_001, 66_000);
    engine.finish();
    const f = engine.findings.filter((x) => x.rule === 'busy-rate-rising');
    expect(f).toHaveLength(1);
    expect(f[0]!.details).toMatchObject({ baseline: { attempts: 70_000, busyShare: 0.1 }, rising: { attempts: 70_001, busyShare: Math.round((66_000 / 70_001) * 1000) / 1000 } });
  });

  it('window and threshold are options', async () => {
    const events = [...attempts(0, 10, 1), ...attempts(60, 10, 3)];
    expect(of(await run(events, { busyThreshold: 0.15 }), 'busy-rate-rising')).toHaveLength(1);
    expect(of(await run(events, { busyWindowMs: 600_000 }), 'busy-rate-rising')).toEqual([]);
  });
});

describe('stories', () => {
  it('formats relative times', () => {
    expect([0, 120, 1000, 12500, 185000, 3720000].map(relative)).toEqual(['0', '120ms', '1s', '12.5s', '3m05s', '1h02m']);
  });
});
