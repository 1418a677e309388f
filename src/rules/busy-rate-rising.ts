import { isoOf } from '../model/time.js';
import type { BusyWindows } from '../timeline/timeline.js';
import type { Reservoir } from '../timeline/stats.js';
import type { EvidenceRef, Rule, RuleContext } from './types.js';

/** The share of busy answers to acquire rises across time windows. */
export const busyRateRising: Rule = {
  meta: {
    id: 'busy-rate-rising',
    severity: 'warning',
    title: 'The share of busy answers to acquire is rising',
    symptom: 'The busy share grows',
    cause: 'Leases are not renewed or released in time, or the resource is held long',
    check: 'Split acquire, keepalive and write latency; compare lease hold times and keepalive gaps with the TTL',
    action: 'Tune the TTL from measurements and do not hide the refusals',
  },
  on: {
    acquire(event, context) {
      const b = context.timeline.busy;
      if (b === undefined) return;
      const window = context.options.busyWindowMs;
      if (event.ts < b.start + window) return;
      closeWindow(context, b);
      b.start += Math.floor((event.ts - b.start) / window) * window;
    },
  },
  end(context) {
    const b = context.timeline.busy;
    if (b !== undefined) closeWindow(context, b);
  },
};

/** Judge the window that just ended and reset it. */
function closeWindow(context: RuleContext, b: BusyWindows): void {
  const { busyMinAttempts, busyThreshold, busyWindowMs } = context.options;
  if (b.attempts >= busyMinAttempts) {
    const share = b.busy / b.attempts;
    if (b.baseline === undefined) {
      b.baseline = { share, attempts: b.attempts, start: b.start, sample: b.firstBusy };
    } else if (!b.reported && share - b.baseline.share >= busyThreshold) {
      b.reported = true;
      report(context, b, share, busyWindowMs);
    }
  }
  b.attempts = 0;
  b.busy = 0;
  b.firstBusy = undefined;
  b.lastBusy = undefined;
}

function report(context: RuleContext, b: BusyWindows, share: number, windowMs: number): void {
  const base = b.baseline!;
  const s = b.stats;
  const details: Record<string, unknown> = {
    windowMs,
    baseline: { start: isoOf(base.start), attempts: base.attempts, busyShare: round(base.share) },
    rising: { start: isoOf(b.start), attempts: b.attempts, busyShare: round(share) },
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
  if (b.firstBusy !== undefined) evidence.push({ event: b.firstBusy, role: `rising window: first busy answer` });
  if (b.lastBusy !== undefined && b.lastBusy !== b.firstBusy) evidence.push({ event: b.lastBusy, role: `rising window: last busy answer (${pct(share)} busy)` });
  context.report({
    message:
      `busy answers to acquire rose from ${pct(base.share)} (${base.attempts} attempts, window from ${isoOf(base.start)}) ` +
      `to ${pct(share)} (${b.attempts} attempts, window from ${isoOf(b.start)})` +
      (parts.length > 0 ? `; ${parts.join('; ')}` : ''),
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
