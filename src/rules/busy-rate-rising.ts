import { keep, recordOf, type LockEvent } from '../model/event.js';
import { isoOf } from '../model/time.js';
import { PAGE_BITS, PAGE_MASK } from '../timeline/pool.js';
import { Reservoir } from '../timeline/stats.js';
import { defineRule, type EvidenceRef, type Handler, type RuleContext } from './types.js';

/**
 * Per resource: acquire attempts in fixed time windows, three numbers (all most resources ever
 * keep), in pages of typed arrays of the rule's own indexed by resource id; and in the rule's slot, from
 * the first busy answer or the first window judged on, the rest (BusyMore): the baseline, the
 * current window's busy answers, and where time goes (bounded reservoirs of latencies, hold
 * times, keepalive gaps, TTLs, from the first busy answer).
 */
class Windows {
  /** Per resource (r & PAGE_MASK of page r >>> PAGE_BITS): the start of its current window (NaN until its first attempt). */
  readonly starts: Float64Array<ArrayBuffer>[] = [];
  /**
   * Per resource, at 2 × (r & PAGE_MASK): the window's attempts (ATTEMPTS) and busy answers
   * (BUSY), 16 bits each; one that reaches SPILLED goes on in `more` (by 2 × r + which).
   */
  readonly counts: Uint16Array<ArrayBuffer>[] = [];
  private readonly more = new Map<number, number>();

  /** Make room for resource r. */
  reserve(r: number): void {
    while (r >>> PAGE_BITS >= this.starts.length) {
      this.starts.push(new Float64Array(1 << PAGE_BITS).fill(Number.NaN));
      this.counts.push(new Uint16Array(2 << PAGE_BITS));
    }
  }

  /** The start of r's window (NaN before its first attempt, or when r has no room yet). */
  start(r: number): number {
    const p = this.starts[r >>> PAGE_BITS];
    return p === undefined ? Number.NaN : p[r & PAGE_MASK]!;
  }

  setStart(r: number, t: number): void {
    this.starts[r >>> PAGE_BITS]![r & PAGE_MASK] = t;
  }

  count(r: number, which: number): number {
    const v = this.counts[r >>> PAGE_BITS]![2 * (r & PAGE_MASK) + which]!;
    return v === SPILLED ? this.more.get(2 * r + which)! : v;
  }

  bump(r: number, which: number): void {
    const c = this.counts[r >>> PAGE_BITS]!;
    const o = 2 * (r & PAGE_MASK) + which;
    const v = c[o]!;
    if (v < SPILLED - 1) c[o] = v + 1;
    else if (v === SPILLED - 1) {
      c[o] = SPILLED;
      this.more.set(2 * r + which, SPILLED);
    } else this.more.set(2 * r + which, this.more.get(2 * r + which)! + 1);
  }

  /** A new window for r: no attempts, no busy answers. */
  clear(r: number): void {
    const c = this.counts[r >>> PAGE_BITS]!;
    const o = 2 * (r & PAGE_MASK);
    if (c[o] === SPILLED) this.more.delete(2 * r + ATTEMPTS);
    if (c[o + 1] === SPILLED) this.more.delete(2 * r + BUSY);
    c[o] = 0;
    c[o + 1] = 0;
  }
}

const ATTEMPTS = 0;
const BUSY = 1;
/** A count that means: the count is in Windows.more. */
const SPILLED = 0xffff;

function windows(): Windows {
  return new Windows();
}

interface BusyMore {
  /** First and last busy answers of the current window, for evidence. */
  firstBusy: LockEvent | undefined;
  lastBusy: LockEvent | undefined;
  baseline: { share: number; attempts: number; start: number; sample?: LockEvent } | undefined;
  reported: boolean;
  stats:
    | {
        acquireLatency: Reservoir;
        keepaliveLatency: Reservoir;
        writeLatency: Reservoir;
        holdMs: Reservoir;
        keepaliveGapMs: Reservoir;
        ttlMs: Reservoir;
      }
    | undefined;
}

/** The share of busy answers to acquire rises across time windows. */
export const busyRateRising = defineRule<BusyMore>({
  meta: {
    id: 'busy-rate-rising',
    severity: 'warning',
    title: 'The share of busy answers to acquire is rising',
    symptom: 'The busy share grows',
    cause: 'Leases are not renewed or released in time, or the resource is held long',
    check: 'Split acquire, keepalive and write latency; compare lease hold times and keepalive gaps with the TTL',
    action: 'Tune the TTL from measurements and do not hide the refusals',
  },
  messages: {
    rose: 'busy answers to acquire rose from {baselineShare} ({baselineAttempts} attempts, window from {baselineStart}) to {share} ({attempts} attempts, window from {start})',
    roseWithFigures:
      'busy answers to acquire rose from {baselineShare} ({baselineAttempts} attempts, window from {baselineStart}) to {share} ({attempts} attempts, window from {start}); {figures}',
  },
  state: () => ({ firstBusy: undefined, lastBusy: undefined, baseline: undefined, reported: false, stats: undefined }),
  // Gates (Rule.when): but for an acquire, a handler only adds to the figures kept in the slot.
  when: { keepalive: { slot: true }, write: { slot: true }, expire: { slot: true }, revoke: { slot: true }, release: { slot: true } },
  on: {
    acquire(event, context) {
      const r = context.resourceId;
      const w = context.state(windows);
      w.reserve(r);
      const window = context.options.busyWindowMs;
      const start = w.start(r);
      if (Number.isNaN(start)) w.setStart(r, event.ts);
      else if (event.ts >= start + window) {
        closeWindow(context, w, r);
        w.setStart(r, start + Math.floor((event.ts - start) / window) * window);
      }
      w.bump(r, ATTEMPTS);
      if (event.result === 'busy') {
        w.bump(r, BUSY);
        const m = context.slot();
        const kept = keep(event, context.timeline);
        m.firstBusy ??= kept;
        m.lastBusy = kept;
        m.stats ??= {
          acquireLatency: new Reservoir(),
          keepaliveLatency: new Reservoir(),
          writeLatency: new Reservoir(),
          holdMs: new Reservoir(),
          keepaliveGapMs: new Reservoir(),
          ttlMs: new Reservoir(),
        };
      }
      const stats = context.peek()?.stats;
      if (stats === undefined) return;
      addLatency(stats.acquireLatency, event);
      if (event.result === 'granted' && event.ttlMs !== undefined && !context.timeline.renewsLease(event)) stats.ttlMs.add(event.ttlMs);
    },
    keepalive(event, context) {
      const stats = context.peek()?.stats;
      if (stats === undefined) return;
      addLatency(stats.keepaliveLatency, event);
      const l = context.timeline.findLease(event);
      if (l !== undefined && event.result === 'ok' && !l.ended) stats.keepaliveGapMs.add(event.ts - l.renewTs);
    },
    write(event, context) {
      const stats = context.peek()?.stats;
      if (stats !== undefined) addLatency(stats.writeLatency, event);
    },
    expire: holdTimes,
    revoke: holdTimes,
    release: holdTimes,
  },
  end(context) {
    const w = context.state(windows);
    const r = context.resourceId;
    if (!Number.isNaN(w.start(r))) closeWindow(context, w, r);
  },
});

/** Lease hold times, from the leases this event ends. */
function holdTimes(...[event, context]: Parameters<Handler<BusyMore>>): void {
  const stats = context.peek()?.stats;
  if (stats === undefined) return;
  for (const { lease } of context.timeline.endingsOf(event)) stats.holdMs.add(event.ts - lease.grantTs);
}

/** The record's latencyMs, if any (parsed from the line only when the line mentions it). */
function addLatency(r: Reservoir, ev: LockEvent): void {
  if (ev.record === undefined && ev.text !== undefined && !ev.text.includes('"latencyMs"')) return;
  const latency = (recordOf(ev) ?? ev.fields)?.latencyMs;
  if (typeof latency === 'number' && Number.isFinite(latency)) r.add(latency);
}

/** Judge resource r's window that just ended and reset it. */
function closeWindow(context: RuleContext<BusyMore>, w: Windows, r: number): void {
  const { busyMinAttempts, busyThreshold, busyWindowMs } = context.options;
  const attempts = w.count(r, ATTEMPTS);
  if (attempts >= busyMinAttempts) {
    const share = w.count(r, BUSY) / attempts;
    const m = context.slot();
    if (m.baseline === undefined) {
      m.baseline = { share, attempts, start: w.start(r), sample: m.firstBusy };
    } else if (!m.reported && share - m.baseline.share >= busyThreshold) {
      m.reported = true;
      report(context, w.start(r), attempts, m, share, busyWindowMs);
    }
  }
  w.clear(r);
  const m = context.peek();
  if (m !== undefined) {
    m.firstBusy = undefined;
    m.lastBusy = undefined;
  }
}

function report(context: RuleContext, start: number, attempts: number, m: BusyMore, share: number, windowMs: number): void {
  const base = m.baseline!;
  const s = m.stats;
  const details: Record<string, unknown> = {
    windowMs,
    baseline: { start: isoOf(base.start), attempts: base.attempts, busyShare: round(base.share) },
    rising: { start: isoOf(start), attempts, busyShare: round(share) },
  };
  const parts: string[] = [];
  if (s !== undefined) {
    const add = (key: string, label: string, r: Reservoir) => {
      const sum = r.summary();
      if (sum.count === 0) return;
      details[key] = sum;
      parts.push(`${label} p50 ${sum.p50}ms, p95 ${sum.p95}ms, max ${sum.max}ms (n=${sum.count})`);
    };
    add('acquireLatencyMs', 'acquire latency', s.acquireLatency);
    add('keepaliveLatencyMs', 'keepalive latency', s.keepaliveLatency);
    add('writeLatencyMs', 'write latency', s.writeLatency);
    add('leaseHoldMs', 'lease hold', s.holdMs);
    add('keepaliveGapMs', 'keepalive gap', s.keepaliveGapMs);
    const ttl = s.ttlMs.summary();
    if (ttl.count > 0) {
      details.ttlMs = ttl;
      parts.push(`TTL ${ttl.p50}ms`);
    }
  }
  const evidence: EvidenceRef[] = [];
  if (base.sample !== undefined) evidence.push({ event: base.sample, role: `baseline window: ${pct(base.share)} busy` });
  if (m.firstBusy !== undefined) evidence.push({ event: m.firstBusy, role: `rising window: first busy answer` });
  if (m.lastBusy !== undefined && m.lastBusy !== m.firstBusy) evidence.push({ event: m.lastBusy, role: `rising window: last busy answer (${pct(share)} busy)` });
  context.report({
    messageId: parts.length > 0 ? 'roseWithFigures' : 'rose',
    data: {
      baselineShare: pct(base.share),
      baselineAttempts: base.attempts,
      baselineStart: isoOf(base.start),
      share: pct(share),
      attempts,
      start: isoOf(start),
      // Latency, hold, gap and TTL figures, each "label p50 …ms, p95 …ms, max …ms (n=…)", joined by "; ".
      ...(parts.length > 0 ? { figures: parts.join('; ') } : {}),
    },
    evidence,
    certainty: 'definite',
    details,
  });
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
