/**
 * Property-based tests: a small simulator of a lock authority, workers and a fenced resource
 * produces canonical event histories; the properties check what stalewrite says about them.
 *
 * Every fc.assert is seeded, so a run is reproducible; a failing property prints the shrunk
 * history as NDJSON (paste it into a file and run `stalewrite analyze` on it).
 *
 * 1. A correct system (strict fencing, releases checked by name and leaseId) gives no error finding.
 * 2. One injected fault (stale write accepted, old-handle release, write with no token) is found,
 *    on its resource and nowhere else.
 * 3. One stream per source, in any order, gives the definite findings of the merged stream.
 * 4. Input accounting reconciles with blank and garbage lines mixed in, and valid lines stay events.
 * 5. The same input gives a byte-identical report.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import type { Finding, Report } from '../src/model/report.js';
import { DEFAULT_POLICY, exitCodeFor } from '../src/model/policy.js';
import { canonical } from '../src/profiles/canonical.js';
import type { Profile } from '../src/profiles/types.js';
import { TimelineStore } from '../src/timeline/timeline.js';

type Rec = Record<string, unknown>;

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
/** A command stops being run once a history has this many events (a pending fault still runs). */
const EVENT_LIMIT = 56;
/** Histories have at least this many events. */
const MIN_EVENTS = 10;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// ---------------------------------------------------------------------------------------------
// The simulator
// ---------------------------------------------------------------------------------------------

/** How a resource answers writes. Only `strict` is correct. */
type Fencing = 'strict' | 'non-strict' | 'unchecked' | 'generic-reject';
/** How the authority checks releases. Only `by-lease` is correct. */
type ReleaseCheck = 'by-lease' | 'by-name';
/** How the authority grants. Only `correct` is: one live lease at a time, tokens from one counter. */
type Grants = 'correct' | 'split-brain' | 'counter-reset';

interface ResourcePolicy {
  fencing: Fencing;
  release: ReleaseCheck;
  grants: Grants;
  /** On odd writes, the token is dropped in transit: the resource logs (and applies) it without one. */
  dropsTokens: boolean;
  /** On odd writes, the worker sends a token the authority never granted. */
  forgesTokens: boolean;
}

const SAFE_POLICY: ResourcePolicy = { fencing: 'strict', release: 'by-lease', grants: 'correct', dropsTokens: false, forgesTokens: false };

type Cmd =
  | { k: 'acquire'; w: number; r: number; dt: number; odd: boolean }
  | { k: 'keepalive'; w: number; r: number; dt: number }
  | { k: 'pause'; w: number; dt: number }
  | { k: 'resume'; w: number; dt: number }
  | { k: 'write'; w: number; r: number; dt: number; lost: boolean; view: boolean; odd: boolean }
  | { k: 'retry'; w: number; r: number; dt: number; view: boolean }
  | { k: 'release'; w: number; r: number; dt: number }
  | { k: 'revoke'; r: number; dt: number }
  | { k: 'sleep'; dt: number };

type FaultKind = 'stale-write' | 'stale-release' | 'missing-token';

interface Fault {
  kind: FaultKind;
  r: number;
  /** Command index before which the fault happens. */
  at: number;
  /** Picks among candidates (old leases, workers). */
  pick: number;
  view: boolean;
}

interface Config {
  resources: number;
  owners: number;
  /** Per resource: the TTL the authority gives leases (undefined: no TTL, only logged ends). */
  ttl: (number | undefined)[];
  /** Per resource: the first token the authority hands out. */
  base: bigint[];
  policy: ResourcePolicy[];
  /** Workers log their own view of writes (observer worker, their own source). */
  views: boolean;
  /**
   * The resource logs its decisions. When it does not (a plain UPDATE logs nothing), only the
   * workers log writes, with the answer they got, and their lines stand for the decisions.
   */
  resourceLogs: boolean;
  /** operationIds are unique overall, or only per resource (README: one operation per resource). */
  opScope: 'global' | 'per-resource';
  /** The authority logs lease ends with the leaseId only (no owner, no token). */
  leanEnds: boolean;
  /**
   * The authority never logs that a lease lapsed (etcd does not): the end is only inferred from
   * last renewal + ttl (README: inferred lease ends). Ends of leases with no TTL are always logged.
   */
  silentExpiry: boolean;
  /** The holder asking again gets its own lease back, renewed (same leaseId and token), not `busy`. */
  reentrant: boolean;
  cmds: Cmd[];
}

interface Lease {
  id: string;
  r: number;
  w: number;
  token: bigint;
  ttl: number | undefined;
  lastRenew: number;
}

interface Handle {
  lease: Lease;
  /** A keepalive failed: the worker stops renewing (but, being buggy or paused, may still write). */
  lost?: boolean;
  lastOp?: { id: string; token: bigint };
}

const resName = (r: number) => `res-${r}`;
const ownerName = (w: number) => `worker-${w}`;
const tokenField = (t: bigint): number | string => (t <= MAX_SAFE ? Number(t) : t.toString());

class Sim {
  now = T0;
  readonly events: Rec[] = [];
  private readonly next: bigint[];
  /** The authority's view: the live lease per resource. */
  private readonly current: (Lease | undefined)[];
  /** Every lease granted, per resource, oldest first. */
  private readonly granted: Lease[][];
  /** The resource's view: the highest accepted token per resource. */
  private readonly highest: (bigint | undefined)[];
  /** What each worker believes it holds, per resource (possibly a lease that has ended). */
  private readonly handles: Map<number, Handle>[];
  private readonly paused: boolean[];
  private leaseSeq = 0;
  private opSeq = 0;
  private readonly opSeqByResource: number[];
  private valueSeq = 0;

  constructor(private readonly cfg: Config) {
    this.next = cfg.base.slice();
    this.current = new Array(cfg.resources).fill(undefined);
    this.granted = Array.from({ length: cfg.resources }, () => []);
    this.highest = new Array(cfg.resources).fill(undefined);
    this.handles = Array.from({ length: cfg.owners }, () => new Map());
    this.paused = new Array(cfg.owners).fill(false);
    this.opSeqByResource = new Array(cfg.resources).fill(0);
  }

  private newOp(r: number): string {
    return this.cfg.opScope === 'global' ? `op-${++this.opSeq}` : `op-${++this.opSeqByResource[r]!}`;
  }

  private endFields(l: Lease): Rec {
    return this.cfg.leanEnds ? { resource: resName(l.r), leaseId: l.id } : this.leaseFields(l);
  }

  /** Log an event at the current time; the next one is at least 2 ms later (timestamps strictly increase). */
  private emit(rec: Rec): void {
    this.events.push({ ts: new Date(this.now).toISOString(), ...rec });
    this.now += 2;
  }

  private authority(rec: Rec): void {
    this.emit({ ...rec, observer: 'authority', source: 'authority' });
  }

  private leaseFields(l: Lease): Rec {
    return { resource: resName(l.r), ownerId: ownerName(l.w), leaseId: l.id, fenceToken: tokenField(l.token) };
  }

  /** The authority notices a lapsed lease (past ttl since its last renewal) and logs its expiry. */
  private lapse(r: number): void {
    const l = this.current[r];
    if (l === undefined || l.ttl === undefined || this.now <= l.lastRenew + l.ttl) return;
    if (!this.cfg.silentExpiry) this.authority({ type: 'expire', ...this.endFields(l), result: 'expired' });
    this.current[r] = undefined;
  }

  private sweep(): void {
    for (let r = 0; r < this.cfg.resources; r++) this.lapse(r);
  }

  private grant(w: number, r: number): Lease {
    const token = this.next[r]!;
    this.next[r] = token + 1n;
    const lease: Lease = { id: `lease-${++this.leaseSeq}`, r, w, token, ttl: this.cfg.ttl[r], lastRenew: this.now };
    const rec: Rec = { type: 'acquire', ...this.leaseFields(lease), result: 'granted' };
    if (lease.ttl !== undefined) rec.ttlMs = lease.ttl;
    this.authority(rec);
    this.current[r] = lease;
    this.granted[r]!.push(lease);
    this.handles[w]!.set(r, { lease });
    return lease;
  }

  private acquire(w: number, r: number, odd = false): void {
    this.lapse(r);
    const grants = this.cfg.policy[r]!.grants;
    if (odd && grants === 'counter-reset' && this.next[r]! >= 2n) this.next[r]! -= 2n;
    const cur = this.current[r];
    if (cur !== undefined && cur.w === w && this.cfg.reentrant) {
      // The same grant logged again: it renews the lease.
      cur.lastRenew = this.now;
      const rec: Rec = { type: 'acquire', ...this.leaseFields(cur), result: 'granted' };
      if (cur.ttl !== undefined) rec.ttlMs = cur.ttl;
      this.authority(rec);
      const h = this.handles[w]!.get(r);
      if (h?.lease !== cur) this.handles[w]!.set(r, { lease: cur });
      return;
    }
    if (cur !== undefined && !(odd && grants === 'split-brain')) {
      this.authority({ type: 'acquire', resource: resName(r), ownerId: ownerName(w), result: 'busy' });
      return;
    }
    this.grant(w, r);
  }

  /** A worker's keepalive tick: it renews every lease it believes it holds (none while paused). */
  private keepalive(w: number, r: number): void {
    const held = [...this.handles[w]!.values()].filter((h) => !h.lost);
    if (held.length === 0) return this.acquire(w, r); // holds nothing: tries to get something
    if (this.paused[w]) return;
    for (const h of held) {
      const lr = h.lease.r;
      this.lapse(lr);
      const live = this.current[lr] === h.lease;
      const rec: Rec = { type: 'keepalive', ...this.leaseFields(h.lease), result: live ? 'ok' : 'failed' };
      if (h.lease.ttl !== undefined) rec.ttlMs = h.lease.ttl;
      if (live) h.lease.lastRenew = this.now;
      else h.lost = true;
      this.authority(rec);
    }
  }

  /** The resource decides on a write, per its fencing policy. */
  private decide(r: number, token: bigint | undefined): string {
    const h = this.highest[r];
    const raise = () => {
      if (token !== undefined && (h === undefined || token > h)) this.highest[r] = token;
    };
    if (token === undefined) return 'accepted'; // nothing to check against: unfenced
    switch (this.cfg.policy[r]!.fencing) {
      case 'strict':
        if (h !== undefined && token <= h) return 'rejected-stale-fence';
        raise();
        return 'accepted';
      case 'non-strict':
        if (h !== undefined && token < h) return 'rejected-stale-fence';
        raise();
        return 'accepted';
      case 'unchecked':
        raise();
        return 'accepted';
      case 'generic-reject':
        if (h !== undefined && token <= h) return 'rejected';
        raise();
        return 'accepted';
    }
  }

  /**
   * Log a write: the resource's decision on what it `received`, then (maybe) the worker's line with
   * what it `sent`. `lost`: the request never reached the resource; the worker timed out.
   */
  private logWrite(w: number, r: number, lease: Lease | undefined, op: string, received: bigint | undefined, sent: bigint | undefined, result: string, view: boolean, lost = false): void {
    const base: Rec = { type: 'write', resource: resName(r), ownerId: ownerName(w), operationId: op };
    if (lease !== undefined) base.leaseId = lease.id;
    const value = `v${++this.valueSeq}`;
    if (!lost && this.cfg.resourceLogs) {
      const rec: Rec = { ...base, result, observer: 'resource', source: 'resource', value };
      if (received !== undefined) rec.fenceToken = tokenField(received);
      this.emit(rec);
    }
    const viewToken = sent;
    if (!this.cfg.resourceLogs || (view && this.cfg.views)) {
      // The worker's own log line, after the resource answered (or after it gave up waiting).
      const rec: Rec = { ...base, result: lost ? 'timeout' : result, observer: 'worker', source: ownerName(w), value };
      if (viewToken !== undefined) rec.fenceToken = viewToken.toString(); // tokens as decimal strings here
      this.emit(rec);
    }
  }

  /** The lease a worker works under: the one on r if it has one, else one of those it has (or none). */
  private handleFor(w: number, r: number): Handle | undefined {
    const mine = this.handles[w]!;
    const h = mine.get(r);
    if (h !== undefined || mine.size === 0) return h;
    return [...mine.values()][r % mine.size];
  }

  private write(w: number, cmdR: number, lost: boolean, view: boolean, odd: boolean): void {
    const h = this.handleFor(w, cmdR);
    if (h === undefined) return this.acquire(w, cmdR); // a worker with no lock asks for one first
    const r = h.lease.r;
    const op = this.newOp(r);
    const policy = this.cfg.policy[r]!;
    const token = odd && policy.forgesTokens && !policy.dropsTokens ? h.lease.token + 1000n : h.lease.token;
    h.lastOp = { id: op, token };
    if (lost) {
      this.logWrite(w, r, h.lease, op, token, token, 'timeout', view, true);
      return;
    }
    const sent = odd && policy.dropsTokens ? undefined : token;
    this.logWrite(w, r, h.lease, op, sent, token, this.decide(r, sent), view);
  }

  /** The same operation sent again, with the same token. */
  private retry(w: number, cmdR: number, view: boolean): void {
    const h = this.handleFor(w, cmdR);
    if (h?.lastOp === undefined) return this.write(w, cmdR, false, view, false);
    const r = h.lease.r;
    const { id, token } = h.lastOp;
    this.logWrite(w, r, h.lease, id, token, token, this.decide(r, token), view);
  }

  private release(w: number, cmdR: number): void {
    const h = this.handleFor(w, cmdR);
    if (h === undefined) return;
    const r = h.lease.r;
    this.lapse(r);
    const cur = this.current[r];
    const check = this.cfg.policy[r]!.release;
    const ok = cur !== undefined && (check === 'by-name' || cur === h.lease);
    this.authority({ type: 'release', ...this.leaseFields(h.lease), result: ok ? 'released' : 'rejected' });
    if (ok) this.current[r] = undefined;
    this.handles[w]!.delete(r);
  }

  /** The holder releases properly (used to set up a fault's preconditions). */
  private releaseCurrent(r: number): void {
    const cur = this.current[r];
    if (cur === undefined) return;
    this.authority({ type: 'release', ...this.leaseFields(cur), result: 'released' });
    this.current[r] = undefined;
    this.handles[cur.w]!.delete(r);
  }

  private revoke(r: number): void {
    this.lapse(r);
    const cur = this.current[r];
    if (cur === undefined) return;
    this.authority({ type: 'revoke', ...this.endFields(cur), result: 'revoked' });
    this.current[r] = undefined;
  }

  step(c: Cmd): void {
    this.now += c.dt;
    this.sweep();
    switch (c.k) {
      case 'acquire':
        return this.acquire(c.w, c.r, c.odd);
      case 'keepalive':
        return this.keepalive(c.w, c.r);
      case 'pause':
        this.paused[c.w] = true;
        return;
      case 'resume':
        this.paused[c.w] = false;
        return;
      case 'write':
        return this.write(c.w, c.r, c.lost, c.view, c.odd);
      case 'retry':
        return this.retry(c.w, c.r, c.view);
      case 'release':
        return this.release(c.w, c.r);
      case 'revoke':
        return this.revoke(c.r);
      case 'sleep':
        return;
    }
  }

  /** The last logged write decision (the resource's line, or the worker's when only workers log). */
  private decision(): Rec {
    const observer = this.cfg.resourceLogs ? 'resource' : 'worker';
    return this.events.filter((e) => e.type === 'write' && e.observer === observer).at(-1)!;
  }

  /**
   * Inject one fault on resource r, first setting up (with correct steps) what it needs.
   * Returns a description of the faulty event, for messages.
   */
  inject(f: Fault): Rec {
    const { r } = f;
    const W = this.cfg.owners;
    this.now += 7;
    this.sweep();
    switch (f.kind) {
      case 'stale-write': {
        // Needs a granted token below the highest accepted one.
        let olds = this.granted[r]!.filter((l) => this.highest[r] !== undefined && l.token < this.highest[r]!);
        if (olds.length === 0) {
          const a = f.pick % W;
          const b = (a + 1) % W;
          this.releaseCurrent(r);
          this.grant(a, r);
          this.now += 5;
          this.releaseCurrent(r);
          this.now += 5;
          const newer = this.grant(b, r);
          this.now += 5;
          this.logWrite(b, r, newer, this.newOp(r), newer.token, newer.token, this.decide(r, newer.token), false);
          olds = this.granted[r]!.filter((l) => l.token < this.highest[r]!);
        }
        const old = olds[f.pick % olds.length]!;
        this.now += 5;
        this.logWrite(old.w, r, old, this.newOp(r), old.token, old.token, 'accepted', f.view);
        return this.decision();
      }
      case 'stale-release': {
        // Needs a live holder and an older, ended lease on the resource.
        this.lapse(r);
        let cur = this.current[r];
        let olds = this.granted[r]!.filter((l) => l !== cur);
        if (cur === undefined || olds.length === 0) {
          const a = f.pick % W;
          this.releaseCurrent(r);
          if (this.granted[r]!.length === 0) {
            this.grant(a, r);
            this.now += 5;
            this.releaseCurrent(r);
          }
          this.now += 5;
          cur = this.grant((a + 1) % W, r);
          olds = this.granted[r]!.filter((l) => l !== cur);
        }
        const old = olds[f.pick % olds.length]!;
        this.now += 5;
        this.authority({ type: 'release', ...this.leaseFields(old), result: 'released' });
        // Checked by name only: the holder's lock is gone.
        this.current[r] = undefined;
        if (this.handles[old.w]!.get(r)?.lease === old) this.handles[old.w]!.delete(r);
        return this.events.at(-1)!;
      }
      case 'missing-token': {
        const w = f.pick % W;
        const h = this.handles[w]!.get(r);
        // With the resource's own log, the worker's line may show the token it sent (dropped in
        // transit); with workers' lines only, the worker sent none.
        const sent = this.cfg.resourceLogs && f.view ? h?.lease.token : undefined;
        this.logWrite(w, r, h?.lease, this.newOp(r), undefined, sent, 'accepted', f.view);
        return this.decision();
      }
    }
  }
}

/** Run a configuration, with an optional fault before command `fault.at`. */
function simulate(cfg: Config, fault?: Fault): { events: Rec[]; faulty?: Rec } {
  const sim = new Sim(cfg);
  let faulty: Rec | undefined;
  for (let i = 0; i < cfg.cmds.length; i++) {
    if (fault !== undefined && faulty === undefined && i >= fault.at) faulty = sim.inject(fault);
    if (sim.events.length >= EVENT_LIMIT && (fault === undefined || faulty !== undefined)) break;
    sim.step(cfg.cmds[i]!);
  }
  if (fault !== undefined && faulty === undefined) faulty = sim.inject(fault);
  // Too short a history (pauses and sleeps only): more correct work, round-robin, until 10 events.
  for (let i = 0; sim.events.length < MIN_EVENTS; i++) {
    sim.step({ k: 'write', w: i % cfg.owners, r: i % cfg.resources, dt: 150, lost: false, view: true, odd: false });
  }
  return { events: sim.events, faulty };
}

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

/** A few ms to a few s between steps. */
const dtArb = fc.oneof({ weight: 2, arbitrary: fc.integer({ min: 2, max: 60 }) }, { weight: 5, arbitrary: fc.integer({ min: 60, max: 2500 }) });

function cmdArb(R: number, W: number): fc.Arbitrary<Cmd> {
  const w = fc.integer({ min: 0, max: W - 1 });
  const r = fc.integer({ min: 0, max: R - 1 });
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ k: fc.constant('acquire' as const), w, r, dt: dtArb, odd: fc.boolean() }) },
    { weight: 5, arbitrary: fc.record({ k: fc.constant('keepalive' as const), w, r, dt: dtArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('pause' as const), w, dt: dtArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('resume' as const), w, dt: dtArb }) },
    {
      weight: 8,
      arbitrary: fc.record({
        k: fc.constant('write' as const),
        w,
        r,
        dt: dtArb,
        lost: fc.integer({ min: 0, max: 4 }).map((n) => n === 0), // one write in five never reaches the resource
        view: fc.boolean(),
        odd: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      }),
    },
    { weight: 2, arbitrary: fc.record({ k: fc.constant('retry' as const), w, r, dt: dtArb, view: fc.boolean() }) },
    { weight: 3, arbitrary: fc.record({ k: fc.constant('release' as const), w, r, dt: dtArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('revoke' as const), r, dt: dtArb }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('sleep' as const), dt: fc.integer({ min: 2000, max: 9000 }) }) },
  );
}

const tokenBaseArb = fc.oneof(
  { weight: 4, arbitrary: fc.bigInt({ min: 0n, max: 1000n }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 2n ** 53n - 5n, max: 2n ** 63n }) },
);

const policyArb: fc.Arbitrary<ResourcePolicy> = fc.record({
  fencing: fc.constantFrom<Fencing>('strict', 'non-strict', 'unchecked', 'generic-reject'),
  release: fc.constantFrom<ReleaseCheck>('by-lease', 'by-name'),
  grants: fc.constantFrom<Grants>('correct', 'correct', 'split-brain', 'counter-reset'),
  dropsTokens: fc.boolean(),
  forgesTokens: fc.boolean(),
});

/** A configuration: `safe` gives every resource the correct policy; `mixed` draws them. */
function configArb(mode: 'safe' | 'mixed'): fc.Arbitrary<Config> {
  return fc
    .record({ resources: fc.integer({ min: 2, max: 4 }), owners: fc.integer({ min: 2, max: 4 }) })
    .chain(({ resources: R, owners: W }) =>
      fc.record({
        resources: fc.constant(R),
        owners: fc.constant(W),
        ttl: fc.array(fc.option(fc.integer({ min: 800, max: 6000 }), { nil: undefined, freq: 4 }), { minLength: R, maxLength: R }),
        base: fc.array(tokenBaseArb, { minLength: R, maxLength: R }),
        policy: mode === 'safe' ? fc.constant(new Array<ResourcePolicy>(R).fill(SAFE_POLICY)) : fc.array(policyArb, { minLength: R, maxLength: R }),
        views: fc.boolean(),
        resourceLogs: fc.integer({ min: 0, max: 3 }).map((n) => n !== 0), // one history in four: workers' lines only
        opScope: fc.constantFrom<'global' | 'per-resource'>('global', 'per-resource'),
        leanEnds: fc.boolean(),
        silentExpiry: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
        reentrant: fc.boolean(),
        cmds: fc.array(cmdArb(R, W), { minLength: 12, maxLength: 70, size: 'max' }),
      }),
    );
}

const faultArb = (kind: FaultKind) =>
  configArb('safe').chain((cfg) =>
    fc.record({
      cfg: fc.constant(cfg),
      fault: fc.record({
        kind: fc.constant(kind),
        r: fc.integer({ min: 0, max: cfg.resources - 1 }),
        at: fc.integer({ min: 0, max: cfg.cmds.length }),
        pick: fc.nat(),
        view: fc.boolean(),
      }),
    }),
  );

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const ndjson = (recs: readonly Rec[]) => recs.map((r) => JSON.stringify(r) + '\n').join('');

/** Fail with the history attached, so a shrunk counterexample can be replayed. */
function fail(message: string, events: readonly Rec[], report?: Report): never {
  const findings = report?.findings.map((f) => `${f.id} ${f.severity}/${f.certainty} ${f.rule} on ${f.resource}: ${f.message}`).join('\n');
  throw new Error(`${message}\n--- history (${events.length} events) ---\n${ndjson(events)}${findings !== undefined ? `--- findings ---\n${findings}\n` : ''}`);
}

/** Split bytes into a few chunks at arbitrary offsets (through multi-byte characters too). */
function chunked(buf: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => (buf.length === 0 ? 0 : c % (buf.length + 1))))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of at) {
    if (c > prev) out.push(buf.subarray(prev, c));
    prev = Math.max(prev, c);
  }
  if (prev < buf.length) out.push(buf.subarray(prev));
  return out;
}

/** One NDJSON stream per `source` of the events, in order of first appearance. */
function splitBySource(events: readonly Rec[]): { name: string; text: string }[] {
  const by = new Map<string, Rec[]>();
  for (const e of events) {
    const s = e.source as string;
    let list = by.get(s);
    if (list === undefined) by.set(s, (list = []));
    list.push(e);
  }
  return [...by].map(([s, recs]) => ({ name: `${s}.ndjson`, text: ndjson(recs) }));
}

/** Streams of the parts, each cut into chunks at the given offsets (so the merge sees several batches). */
const streamsOf = (parts: readonly { name: string; text: string }[], cuts: readonly (readonly number[])[] = []) =>
  parts.map((p, i) => ({ name: p.name, stream: Readable.from(chunked(Buffer.from(p.text), cuts[i] ?? [])) }));

/** Ways of writing one instant that the canonical format accepts (README: RFC 3339 with a zone, or epoch ms). */
const TS_FORMATS = ['iso', 'epoch-ms', 'offset-east', 'offset-west', 'micro', 'space', 'lower-z'] as const;
type TsFormat = (typeof TS_FORMATS)[number];

function renderTs(iso: string, fmt: TsFormat): string | number {
  const ms = Date.parse(iso);
  const withOffset = (minutes: number) => {
    const local = new Date(ms + minutes * 60000).toISOString().slice(0, -1);
    const a = Math.abs(minutes);
    return `${local}${minutes < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
  };
  switch (fmt) {
    case 'iso':
      return iso;
    case 'epoch-ms':
      return ms;
    case 'offset-east':
      return withOffset(5 * 60 + 30);
    case 'offset-west':
      return withOffset(-8 * 60);
    case 'micro':
      return iso.replace('Z', '000Z');
    case 'space':
      return iso.replace('T', ' ');
    case 'lower-z':
      return iso.replace('Z', 'z');
  }
}

/** A finding without anything that names the file or line its evidence came from. */
function identity(f: Finding): string {
  return JSON.stringify({
    rule: f.rule,
    severity: f.severity,
    certainty: f.certainty,
    resource: f.resource,
    message: f.message,
    evidence: f.evidence.map(({ file: _file, line: _line, ...rest }) => rest),
  });
}

const errorsOf = (report: Report) => report.findings.filter((f) => f.severity === 'error');

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/** Per test: the suite's default (30 s) is tight when other test files share the two cores. */
const TIMEOUT = 120_000;

const RUNS = {
  safe: 3000,
  fault: 1200, // per fault kind
  split: 1400,
  accounting: 1600,
  decorated: 600,
  deterministic: 800,
  summary: 300,
};

describe('property: a correct system stays clean', () => {
  it('strict fencing + release by name and leaseId: no error finding, no violated resource', async () => {
    await fc.assert(
      fc.asyncProperty(configArb('safe'), fc.boolean(), async (cfg, viaFiles) => {
        const { events } = simulate(cfg);
        // As records, or as one NDJSON stream per producer, merged by time.
        const report = viaFiles ? await analyze({ streams: streamsOf(splitBySource(events)) }) : await analyze({ events });
        if (report.input.invalid !== 0 || report.input.events !== events.length) fail(`simulator produced invalid events: ${JSON.stringify(report.input.problems)}`, events, report);
        const errors = errorsOf(report);
        if (errors.length > 0) fail(`error findings on a safe history: ${errors.map((f) => f.rule).join(', ')}`, events, report);
        const violated = report.resources.filter((r) => r.readiness === 'violated');
        if (violated.length > 0) fail(`violated resources on a safe history: ${violated.map((r) => r.resource).join(', ')}`, events, report);
      }),
      { seed: 20260301, numRuns: RUNS.safe },
    );
  }, TIMEOUT);
});

describe('property: an injected fault is found, on the right resource', () => {
  const cases: [FaultKind, string][] = [
    ['stale-write', 'accepted-stale-write'],
    ['stale-release', 'stale-release'],
    ['missing-token', 'missing-token'],
  ];
  cases.forEach(([kind, rule], i) => {
    it(`${kind} → ${rule}`, async () => {
      await fc.assert(
        fc.asyncProperty(faultArb(kind), async ({ cfg, fault }) => {
          const { events, faulty } = simulate(cfg, fault);
          const report = await analyze({ events });
          const target = resName(fault.r);
          if (report.input.invalid !== 0) fail('simulator produced invalid events', events, report);
          const hits = report.findings.filter((f) => f.rule === rule && f.resource === target);
          if (hits.length === 0) fail(`expected ${rule} on ${target} for the fault ${JSON.stringify(faulty)}`, events, report);
          const about = hits.filter((f) => f.evidence.some((e) => e.decisive && e.ts === faulty!.ts && e.source === faulty!.source));
          if (about.length === 0) fail(`expected ${rule} on ${target} pointing at the fault ${JSON.stringify(faulty)}`, events, report);
          // Resting on one clock (the resource's or the authority's), the finding is definite, or
          // likely when an old lease's end is inferred from its TTL. A stale write told only by two
          // workers' own lines rests on two clocks, and is "possible" when they are closer than the
          // skew bound (README: Certainty): then neither certainty nor readiness is asserted.
          const oneClock = cfg.resourceLogs || kind !== 'stale-write';
          if (oneClock && !about.some((f) => f.certainty !== 'possible')) fail(`expected a definite or likely ${rule} on ${target}`, events, report);
          const elsewhere = report.findings.filter((f) => f.rule === rule && f.severity === 'error' && f.resource !== target);
          if (elsewhere.length > 0) fail(`${rule} reported on other resources: ${elsewhere.map((f) => f.resource).join(', ')}`, events, report);
          // The other resources ran correctly: they stay clean altogether.
          const otherErrors = errorsOf(report).filter((f) => f.resource !== target);
          if (otherErrors.length > 0) fail(`error findings on untouched resources: ${otherErrors.map((f) => `${f.rule}@${f.resource}`).join(', ')}`, events, report);
          const readiness = report.resources.find((r) => r.resource === target)?.readiness;
          if (oneClock && readiness !== 'violated') fail(`expected ${target} to be violated, got ${readiness}`, events, report);
          // Whatever the certainty, a flagged stale write never looks like a pass.
          if (readiness !== 'violated' && readiness !== 'inconclusive') fail(`a fault flagged on ${target} left it ${readiness}`, events, report);
          if (exitCodeFor(report, DEFAULT_POLICY) === 0) fail(`exit 0 with ${rule} on ${target} (${hits.map((f) => f.certainty).join(', ')})`, events, report);
        }),
        { seed: 4242 + i, numRuns: RUNS.fault },
      );
    }, TIMEOUT);
  });
});

describe('property: split by source = merged', () => {
  it('any order of per-source streams gives the definite findings of the merged stream', async () => {
    const arb = configArb('mixed').chain((cfg) => {
      const { events } = simulate(cfg);
      const sources = [...new Set(events.map((e) => e.source as string))];
      return fc.record({
        events: fc.constant(events),
        order: fc.shuffledSubarray(sources, { minLength: sources.length, maxLength: sources.length }),
        // Each line writes its instant in one of the accepted forms; the instants are unchanged.
        formats: fc.array(fc.constantFrom(...TS_FORMATS), { minLength: events.length, maxLength: events.length }),
        cuts: fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: sources.length, maxLength: sources.length }),
      });
    });
    let withDefinite = 0;
    await fc.assert(
      fc.asyncProperty(arb, async ({ events, order, formats, cuts }) => {
        const written = events.map((e, i) => ({ ...e, ts: renderTs(e.ts as string, formats[i]!) }));
        const bySource = new Map(splitBySource(written).map((p) => [p.name, p]));
        const parts = order.map((s) => bySource.get(`${s}.ndjson`)!);
        const merged = await analyze({ streams: streamsOf([{ name: 'merged.ndjson', text: ndjson(written) }], [cuts[0] ?? []]) });
        const split = await analyze({ streams: streamsOf(parts, cuts) });
        const plain = await analyze({ events }); // ISO timestamps, one input
        const definite = (r: Report) => r.findings.filter((f) => f.certainty === 'definite').map(identity).sort();
        const a = definite(merged);
        const b = definite(split);
        if (a.length > 0) withDefinite++;
        const show = () => `stream order ${order.join(', ')}\nmerged: ${a.join('\n        ')}\nsplit:  ${b.join('\n        ')}`;
        if (JSON.stringify(a) !== JSON.stringify(b)) fail(`definite findings differ between merged and split streams (${show()})`, written, merged);
        if (JSON.stringify(a) !== JSON.stringify(definite(plain))) fail('definite findings depend on how timestamps are written', written, merged);
        const readiness = (r: Report) => r.resources.map((x) => `${x.resource}:${x.readiness}`).join(' ');
        if (readiness(merged) !== readiness(split)) fail(`readiness differs: merged ${readiness(merged)}, split ${readiness(split)}`, written, merged);
        if (split.input.events !== events.length || merged.input.events !== events.length) fail(`events lost: ${JSON.stringify(split.input.problems)}`, written, merged);
        // No input exits 0 while an accepted stale write was flagged with any certainty.
        for (const r of [merged, split, plain]) {
          const flagged = r.findings.filter((f) => (f.rule === 'accepted-stale-write' || f.rule === 'accepted-equal-token') && f.severity === 'error');
          if (flagged.length > 0 && exitCodeFor(r, DEFAULT_POLICY) === 0) fail(`exit 0 with ${flagged.map((f) => `${f.rule} (${f.certainty})`).join(', ')}`, written, r);
        }
      }),
      { seed: 777, numRuns: RUNS.split },
    );
    // The property is only worth something if the mixed histories do produce definite findings.
    expect(withDefinite).toBeGreaterThan(RUNS.split / 4);
  }, TIMEOUT);
});

/** Field names the canonical format gives a meaning to: extra fields never reuse them. */
const CANONICAL_KEYS = new Set(['ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source']);
/** Keys made of JSON punctuation and canonical names: legal, distinct keys that look like others. */
const trickyKeyArb = fc
  .array(fc.constantFrom('"', '\\', ':', ' ', '{', ',', 'ts', 'type', 'result', 'fenceToken', 'leaseId', 'x'), { minLength: 1, maxLength: 4 })
  .map((a) => a.join(''));
const extraKeyArb = fc.oneof(fc.string({ maxLength: 8 }), trickyKeyArb).filter((k) => !CANONICAL_KEYS.has(k) && k !== '__proto__');
/** Nested objects (an error, an HTTP exchange) may use any key, canonical names too: they are not the event's fields. */
const nestedArb = fc.dictionary(fc.oneof(fc.constantFrom(...CANONICAL_KEYS), fc.string({ maxLength: 6 })).filter((k) => k !== '__proto__'), fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), {
  minKeys: 1,
  maxKeys: 2,
});
/** README: any other field is "allowed, and kept for display". */
const extraFieldsArb = fc.dictionary(extraKeyArb, fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), nestedArb), { minKeys: 1, maxKeys: 3 });

/** An event as an NDJSON line, with extra fields, and its token as a JSON number (README: read exactly, even above 2^53). */
function lineOf(e: Rec, extras: Record<string, unknown> | undefined, tokenAsNumber: boolean): string {
  const text = JSON.stringify({ ...e, ...extras });
  const t = e.fenceToken;
  return tokenAsNumber && typeof t === 'string' ? text.replace(`"fenceToken":${JSON.stringify(t)}`, `"fenceToken":${t}`) : text;
}

/** Over this many bytes a line is invalid (set low, so that over-long lines can be generated cheaply). */
const MAX_LINE_BYTES = 1024;

/** Lines that no profile reading canonical events can take for an event. */
const garbageArb: fc.Arbitrary<string> = fc.oneof(
  // Arbitrary text that cannot start a JSON value (no newline: one line).
  fc.string({ maxLength: 40, unit: 'binary' }).map((s) => 'x' + s.replace(/\n/g, ' ')),
  fc.string({ maxLength: 40 }).map((s) => '{' + s.replace(/[\n}]/g, ' ')), // an object never closed
  // JSON that is not an object.
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }).map((a) => JSON.stringify(a)),
  fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constant(null), fc.boolean()).map((v) => JSON.stringify(v)),
  // Objects that miss a required field.
  fc
    .record({
      drop: fc.constantFrom('ts', 'type', 'resource', 'result'),
      owner: fc.string({ maxLength: 8 }),
    })
    .map(({ drop, owner }) => {
      const rec: Rec = { ts: new Date(T0).toISOString(), type: 'write', resource: 'res-0', ownerId: owner, fenceToken: 3, result: 'accepted' };
      delete rec[drop];
      return JSON.stringify(rec);
    }),
  // Objects with a bad value, a verdict-changing key twice, damage inside the line, or too long.
  fc.constantFrom(
    JSON.stringify({ ts: '2026-03-01 10:00:00', type: 'acquire', resource: 'res-0' }), // no zone
    JSON.stringify({ ts: new Date(T0).toISOString(), type: 'lock', resource: 'res-0' }),
    JSON.stringify({ ts: new Date(T0).toISOString(), type: 'write', resource: 'res-0', fenceToken: -1, result: 'accepted' }),
    JSON.stringify({ ts: new Date(T0).toISOString(), type: 'write', resource: 'res-0', fenceToken: 1.5, result: 'accepted' }),
    JSON.stringify({ ts: new Date(T0).toISOString(), type: 'release', resource: 'res-0', result: 'accepted' }),
    `{"ts":"2026-03-01T10:00:00Z","type":"write","resource":"res-0","fenceToken":1,"fenceToken":2,"result":"accepted"}`,
    // A token above 2^53 written so that its exact digits cannot be read back: refused, never rounded.
    `{"ts":"2026-03-01T10:00:00Z","type":"write","resource":"res-0","fenceToken":9.007199254740993e15,"result":"accepted"}`,
    `{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"res\u0000-0"}`,
    `{"ts":"2026-03-01T10:00:00Z",\r"type":"acquire","resource":"res-0"}`,
    JSON.stringify({}),
  ),
  fc.integer({ min: MAX_LINE_BYTES + 1, max: 3 * MAX_LINE_BYTES }).map((n) => JSON.stringify({ ts: new Date(T0).toISOString(), type: 'acquire', resource: 'res-0', pad: 'p'.repeat(n) })),
);

const blankArb = fc.constantFrom('', ' ', '\t', '   \t ', '\r', '\u000b', '\f');

describe('property: input accounting reconciles', () => {
  it('lines + expanded = events + duplicates + blank + ignored + invalid + joined, and invalid = garbage lines', async () => {
    const arb = configArb('mixed').chain((cfg) => {
      const { events } = simulate(cfg);
      const valid = events.map((e) => JSON.stringify(e));
      return fc.record({
        valid: fc.constant(valid),
        // Lines to insert: each placed before a valid line (index), blank or garbage.
        extra: fc.array(fc.record({ at: fc.nat(valid.length), line: fc.oneof(blankArb.map((b) => ({ blank: b })), garbageArb.map((g) => ({ garbage: g }))) }), { maxLength: 25 }),
        crlf: fc.boolean(),
        bom: fc.boolean(),
        finalNewline: fc.boolean(),
        cuts: fc.oneof(fc.array(fc.nat(), { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 60 })),
      });
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ valid, extra, crlf, bom, finalNewline, cuts }) => {
        const lines: string[] = [];
        let blank = 0;
        let garbage = 0;
        const sorted = extra.map((x, i) => ({ ...x, i })).sort((a, b) => a.at - b.at || a.i - b.i);
        const garbageAt: number[] = []; // 1-based line numbers
        let k = 0;
        for (let i = 0; i <= valid.length; i++) {
          for (; k < sorted.length && sorted[k]!.at === i; k++) {
            const l = sorted[k]!.line;
            if ('blank' in l) {
              lines.push(l.blank);
              blank++;
            } else {
              lines.push(l.garbage);
              garbage++;
              garbageAt.push(lines.length);
            }
          }
          if (i < valid.length) lines.push(valid[i]!);
        }
        const eol = crlf ? '\r\n' : '\n';
        // An empty last line with no newline after it would be no line at all: end that one with a newline.
        const text = (bom ? '\uFEFF' : '') + lines.join(eol) + (finalNewline || lines.at(-1) === '' ? eol : '');
        const buf = Buffer.from(text, 'utf8');
        const report = await analyze({ streams: [{ name: 'mixed.ndjson', stream: Readable.from(chunked(buf, cuts)) }], maxLineBytes: MAX_LINE_BYTES });
        const i = report.input;
        const history = lines.map((l) => ({ line: l.length > 200 ? `${l.slice(0, 200)}… (${l.length} chars)` : l }));
        const counts = JSON.stringify({ lines: i.lines, expanded: i.expanded, events: i.events, blank: i.blank, ignored: i.ignored, invalid: i.invalid });
        if (i.lines + i.expanded !== i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined) fail(`does not reconcile: ${counts}`, history);
        if (i.invalid !== garbage) fail(`invalid ${i.invalid}, expected ${garbage}: ${JSON.stringify(i.problems)}`, history);
        if (i.events !== valid.length) fail(`events ${i.events}, expected ${valid.length}: ${counts}`, history);
        if (i.blank !== blank) fail(`blank ${i.blank}, expected ${blank}: ${counts}`, history);
        if (i.lines !== lines.length) fail(`lines ${i.lines}, expected ${lines.length}: ${counts}`, history);
        // Each problem names the line it is about.
        const named = i.problems.map((p) => p.line).join(',');
        if (named !== garbageAt.join(',')) fail(`problems name lines ${named}, the garbage is on lines ${garbageAt.join(',')}`, history);
        const f = i.files[0]!;
        if (f.lines + f.expanded !== f.events + f.duplicates + f.blank + f.ignored + f.invalid + f.joined) fail(`file summary does not reconcile: ${JSON.stringify(f)}`, history);
      }),
      { seed: 99, numRuns: RUNS.accounting },
    );
  }, TIMEOUT);
});

describe('property: input accounting reconciles (valid lines in every allowed shape)', () => {
  // Guards a bug this property found: a valid line whose extra fields hold a nested key named like
  // a canonical one ("error":{"type":…}), or a key ending in such a name ("a\"ts"), was counted as
  // invalid ("key … appears more than once") when read from a file or stream.
  it('a valid event line is an event whatever extra fields it carries, and big tokens as JSON numbers are exact', async () => {
    const arb = configArb('mixed').chain((cfg) => {
      const { events } = simulate(cfg);
      return fc.record({
        events: fc.constant(events),
        decor: fc.array(fc.record({ extras: fc.option(extraFieldsArb, { nil: undefined, freq: 3 }), tokenAsNumber: fc.boolean() }), {
          minLength: events.length,
          maxLength: events.length,
        }),
      });
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ events, decor }) => {
        const lines = events.map((e, i) => lineOf(e, decor[i]!.extras, decor[i]!.tokenAsNumber));
        const report = await analyze({ streams: [{ name: 'decorated.ndjson', stream: Readable.from([Buffer.from(lines.join('\n') + '\n')]) }] });
        const i = report.input;
        const history = lines.map((l) => ({ line: l }));
        if (i.invalid !== 0 || i.events !== events.length) {
          const shown = i.problems.map((p) => `line ${p.line}: ${lines[p.line - 1]}\n  -> ${p.reason}`).join('\n');
          fail(`${i.invalid} valid line(s) reported invalid:\n${shown}`, history);
        }
        if (i.lines + i.expanded !== i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined) fail(`does not reconcile: ${JSON.stringify(i)}`, history);
        // The same records as objects (tokens as strings): the same tokens, read exactly.
        const plain = await analyze({ events: events.map((e, k) => ({ ...e, ...decor[k]!.extras })) });
        const tokens = (r: Report) => r.resources.map((x) => `${x.resource}:${x.highestAcceptedToken}`).join(' ');
        if (tokens(report) !== tokens(plain)) fail(`tokens differ: ${tokens(report)} vs ${tokens(plain)}`, history);
      }),
      { seed: 2718, numRuns: RUNS.decorated },
    );
  }, TIMEOUT);
});

/** A mixed history, fed as one input or split by source. */
function mixedHistories() {
  return configArb('mixed').chain((cfg) => {
    const { events } = simulate(cfg);
    return fc.record({ events: fc.constant(events), split: fc.boolean() });
  });
}

describe('property: deterministic', () => {
  it('the same input analysed twice gives a byte-identical report', async () => {
    const arb = mixedHistories();
    await fc.assert(
      fc.asyncProperty(arb, async ({ events, split }) => {
        const run = () =>
          split
            ? analyze({ streams: streamsOf(splitBySource(events)), timelines: { all: true }, busyWindowMs: 4000 })
            : analyze({ events: events.map((e) => ({ ...e })), timelines: { all: true }, busyWindowMs: 4000 });
        const a = JSON.stringify(await run());
        const b = JSON.stringify(await run());
        if (a !== b) fail('two runs differ', events);
      }),
      { seed: 31337, numRuns: RUNS.deterministic },
    );
  }, TIMEOUT);
});

describe('property: summary records change nothing', () => {
  it('a report with idle resources shrunk to summary records is the report without them, byte for byte', async () => {
    const arb = mixedHistories();
    const compact = TimelineStore.prototype.compact;
    const proto = TimelineStore.prototype as unknown as { inflate: (id: number) => void };
    const inflate = proto.inflate;
    let shrunk = 0;
    let rebuilt = 0;
    proto.inflate = function (this: TimelineStore, id: number) {
      rebuilt++;
      inflate.call(this, id);
    };
    try {
      await fc.assert(
        fc.asyncProperty(arb, async ({ events }) => {
          const run = () => analyze({ events: events.map((e) => ({ ...e })), timelines: { all: true }, busyWindowMs: 4000 });
          TimelineStore.prototype.compact = function (this: TimelineStore, id: number) {
            const done = compact.call(this, id);
            if (done) shrunk++;
            return done;
          };
          const a = JSON.stringify(await run());
          TimelineStore.prototype.compact = () => false;
          const b = JSON.stringify(await run());
          if (a !== b) fail('summary records changed the report', events);
        }),
        { seed: 2718, numRuns: RUNS.summary },
      );
    } finally {
      TimelineStore.prototype.compact = compact;
      proto.inflate = inflate;
    }
    // Worth something only if resources went idle and came back.
    expect(shrunk).toBeGreaterThan(RUNS.summary);
    expect(rebuilt).toBeGreaterThan(RUNS.summary);
  }, TIMEOUT);
});

describe('property: findings are final when emitted', () => {
  it('the live stream (onFinding) equals the report, and capture changes no finding', async () => {
    const arb = mixedHistories();
    await fc.assert(
      fc.asyncProperty(arb, async ({ events, split }) => {
        const run = (capture: boolean, onFinding?: (f: Finding) => void) =>
          split
            ? analyze({ streams: streamsOf(splitBySource(events)), timelines: capture ? { all: true } : undefined, busyWindowMs: 4000, onFinding })
            : analyze({ events: events.map((e) => ({ ...e })), timelines: capture ? { all: true } : undefined, busyWindowMs: 4000, onFinding });
        const streamed: string[] = [];
        const withCapture = await run(true, (f) => streamed.push(JSON.stringify(f)));
        if (JSON.stringify(streamed) !== JSON.stringify(withCapture.findings.map((f) => JSON.stringify(f)))) fail('the streamed findings differ from the report', events);
        const without = await run(false);
        if (JSON.stringify(without.findings) !== JSON.stringify(withCapture.findings)) fail('capture changed a finding', events);
      }),
      { seed: 4242, numRuns: RUNS.deterministic },
    );
  }, TIMEOUT);
});

describe('property: at-least-once delivery changes nothing', () => {
  it('every line twice, or every input twice, gives the findings and readiness of feeding it once', async () => {
    const arb = configArb('mixed').chain((cfg) => fc.record({ events: fc.constant(simulate(cfg).events), how: fc.constantFrom('lines' as const, 'inputs' as const) }));
    let withErrors = 0;
    await fc.assert(
      fc.asyncProperty(arb, async ({ events, how }) => {
        const parts = splitBySource(events);
        const once = await analyze({ streams: streamsOf(parts) });
        const doubled =
          how === 'lines'
            ? parts.map((p) => ({ name: p.name, text: p.text.split('\n').filter((l) => l !== '').map((l) => `${l}\n${l}\n`).join('') }))
            : [...parts, ...parts.map((p) => ({ name: `copy-of-${p.name}`, text: p.text }))];
        const twice = await analyze({ streams: streamsOf(doubled) });
        const found = (r: Report) => r.findings.map(identity).sort();
        const readiness = (r: Report) => r.resources.map((x) => `${x.resource}:${x.readiness}`).join(' ');
        if (errorsOf(once).length > 0) withErrors++;
        if (JSON.stringify(found(once)) !== JSON.stringify(found(twice))) fail(`findings differ when ${how} are delivered twice`, events, twice);
        if (readiness(once) !== readiness(twice)) fail(`readiness differs when ${how} are delivered twice: ${readiness(once)} vs ${readiness(twice)}`, events, twice);
        if (exitCodeFor(once, DEFAULT_POLICY) !== exitCodeFor(twice, DEFAULT_POLICY)) fail(`exit code differs when ${how} are delivered twice`, events, twice);
        const i = twice.input;
        if (i.events !== events.length || i.duplicates !== events.length) fail(`expected ${events.length} events and as many duplicates, got ${JSON.stringify(i)}`, events, twice);
        if (i.lines + i.expanded !== i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined) fail(`does not reconcile: ${JSON.stringify(i)}`, events, twice);
      }),
      { seed: 1313, numRuns: 400 },
    );
    // Worth something only if the histories have findings to keep.
    expect(withErrors).toBeGreaterThan(40);
  }, TIMEOUT);
});

describe('property: the byte path changes nothing', () => {
  it('files read by their bytes give the report of the string path and of the general path, lines delivered twice and garbage included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-prop-bytes-'));
    const noBytes: Profile = { ...canonical, fastBytes: undefined };
    const generalOnly: Profile = { ...canonical, fastBytes: undefined, fastEvent: undefined };
    const arb = configArb('mixed').chain((cfg) => {
      const { events } = simulate(cfg);
      return fc.record({
        events: fc.constant(events),
        decor: fc.array(fc.record({ extras: fc.option(extraFieldsArb, { nil: undefined, freq: 3 }), tokenAsNumber: fc.boolean(), ts: fc.constantFrom(...TS_FORMATS), twice: fc.boolean() }), {
          minLength: events.length,
          maxLength: events.length,
        }),
        garbage: fc.array(garbageArb, { maxLength: 3 }),
        crlf: fc.boolean(),
      });
    });
    let run = 0;
    let valid = 0;
    let copies = 0;
    try {
      await fc.assert(
        fc.asyncProperty(arb, async ({ events, decor, garbage, crlf }) => {
          const by = new Map<string, string[]>();
          events.forEach((e, i) => {
            const d = decor[i]!;
            const line = lineOf({ ...e, ts: renderTs(e.ts as string, d.ts) }, d.extras, d.tokenAsNumber);
            const list = by.get(e.source as string) ?? [];
            by.set(e.source as string, list);
            list.push(line);
            if (d.twice) list.push(line);
          });
          const files = [...by].map(([source, lines], k) => {
            const file = join(dir, `${run}-${source}.ndjson`);
            const all = k === 0 ? [...lines.slice(0, 2), ...garbage, ...lines.slice(2)] : lines;
            writeFileSync(file, all.join(crlf ? '\r\n' : '\n') + '\n');
            return file;
          });
          run++;
          const options = { files, timelines: { all: true }, busyWindowMs: 4000, workers: 'off' as const };
          const report = await analyze(options);
          valid += report.input.events;
          copies += report.input.duplicates;
          const a = JSON.stringify(report);
          const b = JSON.stringify(await analyze({ ...options, profile: noBytes }));
          const c = JSON.stringify(await analyze({ ...options, profile: generalOnly }));
          if (a !== b) fail('the byte path gives another report than the string path', events);
          if (a !== c) fail('the byte path gives another report than the general path', events);
        }),
        { seed: 8128, numRuns: 300 },
      );
      expect(valid).toBeGreaterThan(300 * MIN_EVENTS);
      expect(copies).toBeGreaterThan(300);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, TIMEOUT);
});
