/**
 * The article-style story of a finding, rendered from its evidence alone:
 *   t=0      worker-a: acquire(resource-7) -> lease-A, token=1
 *   t=10s    authority: lease-A expired
 *   t=13s    worker-a: write(v1, token=1) -> accepted      <- late write accepted
 * Events are shown in time order, with times relative to the earliest (never negative); an event
 * shown after a later line of its own file (its clock went back) is marked so.
 * Log content is returned raw: each reporter escapes it.
 */
import type { EvidenceItem, Finding } from '../model/report.js';
import { maxOf } from '../model/stats.js';

export function renderStory(finding: Finding): string[] {
  const items = inTimeOrder(finding);
  if (items.length === 0) return [];
  const t0 = items[0]!.ms;
  const rows = items.map(({ e, ms }, k) => {
    // A row shown after a later line of its own file: that file's clock went back between them.
    const above = items.slice(0, k).find((o) => o.e.file === e.file && o.e.line > e.line && !o.e.inferred && !e.inferred);
    const mark = above === undefined ? '' : ` [logged before line ${above.e.line} above: the clock went back]`;
    return { t: `t=${relative(ms - t0)}`, text: eventText(e, finding.resource), role: e.role + mark };
  });
  const tw = maxOf(rows.map((r) => r.t.length), 0) + 2;
  const xw = maxOf(rows.map((r) => r.text.length), 0) + 3;
  return rows.map((r) => `${r.t.padEnd(tw)}${r.text.padEnd(xw)}<- ${r.role}`);
}

/** A finding's evidence in time order (ties keep the evidence order), with each item's index and epoch ms. */
export function inTimeOrder(finding: Finding): { e: EvidenceItem; i: number; ms: number }[] {
  return finding.evidence.map((e, i) => ({ e, i, ms: Date.parse(e.ts) })).sort((a, b) => a.ms - b.ms || a.i - b.i);
}

type EventLike = Omit<EvidenceItem, 'role'>;

/** `who: action` for one event, e.g. `worker-a: write(v1, token=1) -> accepted`. */
export function eventText(e: EventLike, resource: string): string {
  return `${actor(e)}: ${action(e, resource)}`;
}

function actor(e: EventLike): string {
  if ((e.type === 'expire' || e.type === 'revoke') && (e.observer !== 'worker' || e.inferred)) return 'authority';
  const who = e.ownerId ?? e.observer;
  return e.type === 'write' && e.observer === 'worker' ? `${who} (worker's view)` : who;
}

function action(e: EventLike, resource: string): string {
  const lease = e.leaseId ?? 'lease';
  switch (e.type) {
    case 'acquire':
      return `acquire(${resource}) -> ${e.result === 'granted' ? handleOf(e) || 'granted' : e.result}`;
    case 'keepalive':
      return `keepalive(${lease}) -> ${e.result}`;
    case 'expire':
      return e.observer === 'worker' && !e.inferred ? `${lease} lost` : `${lease} expired${e.inferred ? ' (inferred: last renewal + ttl)' : ''}`;
    case 'revoke':
      return `${lease} revoked`;
    case 'release':
      return `release(${handleOf(e)}) -> ${e.result}`;
    case 'write':
      return `${writeCall(e)} -> ${e.result}`;
    default:
      return `${e.type} -> ${e.result}`;
  }
}

/** The lease and token an event names, e.g. `lease-A, token=1` (empty when it names neither). */
export function handleOf(e: EventLike): string {
  return [e.leaseId, e.fenceToken !== undefined ? `token=${e.fenceToken}` : undefined].filter(Boolean).join(', ');
}

/** A write as a call, e.g. `write(v1, token=1, op=op-a-1)`: its value (when the record has one), token and operation. */
export function writeCall(e: EventLike): string {
  const value = e.fields?.value;
  const args = [typeof value === 'string' || typeof value === 'number' ? String(value) : undefined, e.fenceToken !== undefined ? `token=${e.fenceToken}` : 'no token', e.operationId !== undefined ? `op=${e.operationId}` : undefined];
  return `write(${args.filter(Boolean).join(', ')})`;
}

/** 0, 120ms, 10s, 12.5s, 3m05s, 1h02m. */
export function relative(ms: number): string {
  if (ms === 0) return '0';
  if (ms < 1000) return `${round(ms)}ms`;
  if (ms < 60_000) return `${round(ms / 1000)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;
  return `${Math.floor(ms / 3_600_000)}h${String(Math.floor((ms % 3_600_000) / 60_000)).padStart(2, '0')}m`;
}

function round(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}
