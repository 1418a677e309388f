/**
 * A job's resource summaries as they go to the main thread (`--jobs`, jobs.ts): in columns
 * (typed arrays, handed over without a copy, and a few long strings) instead of one object per
 * resource, which structured cloning would serialize in the job and build again in the main
 * thread. The main thread walks them as summaries made one at a time, merged by resource key
 * (mergedResources), so a report of the merge is written without holding them as objects.
 */
import { PLAIN_SUMMARIES, READINESS, type ResourceSummaries, type ResourceSummary } from '../model/report.js';

/** Counts per summary, in this order, in WireResources.counts. */
const COUNTS = 8;

export interface WireResources {
  kind: 'wire-resources';
  n: number;
  /** The resource keys, one after another; nameEnds[i] is where the i-th ends. */
  names: string;
  nameEnds: Uint32Array;
  /** Index into READINESS. */
  readiness: Uint8Array;
  /** The distinct reasons, and each summary's index into them (most resources share one). */
  reasonList: string[];
  reasons: Uint32Array;
  /** The highest accepted tokens likewise; a null one is empty with tokenNull[i] = 1. */
  tokens: string;
  tokenEnds: Uint32Array;
  tokenNull: Uint8Array;
  /** events, writes.accepted, .rejectedStaleFence, .rejectedOther, .withoutToken, staleWrites, oldHandleReleases, findings. */
  counts: Float64Array;
}

/** The summaries in columns (each walked once); undefined for a list whose summaries may have other fields than ResourceSummary's. */
export function wireResources(list: ResourceSummaries): WireResources | undefined {
  if ((list as { [PLAIN_SUMMARIES]?: boolean })[PLAIN_SUMMARIES] !== true) return undefined;
  const n = list.length;
  const nameEnds = new Uint32Array(n);
  const readiness = new Uint8Array(n);
  const reasons = new Uint32Array(n);
  const tokenEnds = new Uint32Array(n);
  const tokenNull = new Uint8Array(n);
  const counts = new Float64Array(n * COUNTS);
  const reasonList: string[] = [];
  const reasonIds = new Map<string, number>();
  const names: string[] = [];
  const tokens: string[] = [];
  let nameAt = 0;
  let tokenAt = 0;
  let i = 0;
  for (const r of list) {
    if (i === n) throw new Error('a resource list gave more summaries than its length');
    names.push(r.resource);
    nameEnds[i] = nameAt += r.resource.length;
    const k = READINESS.indexOf(r.readiness);
    if (k === -1) return undefined;
    readiness[i] = k;
    let id = reasonIds.get(r.reason);
    if (id === undefined) {
      reasonIds.set(r.reason, (id = reasonList.length));
      reasonList.push(r.reason);
    }
    reasons[i] = id;
    if (r.highestAcceptedToken === null) tokenNull[i] = 1;
    else {
      tokens.push(r.highestAcceptedToken);
      tokenAt += r.highestAcceptedToken.length;
    }
    tokenEnds[i] = tokenAt;
    const c = i * COUNTS;
    counts[c] = r.events;
    counts[c + 1] = r.writes.accepted;
    counts[c + 2] = r.writes.rejectedStaleFence;
    counts[c + 3] = r.writes.rejectedOther;
    counts[c + 4] = r.writes.withoutToken;
    counts[c + 5] = r.staleWrites;
    counts[c + 6] = r.oldHandleReleases;
    counts[c + 7] = r.findings;
    i++;
  }
  if (i !== n) throw new Error('a resource list gave fewer summaries than its length');
  return { kind: 'wire-resources', n, names: names.join(''), nameEnds, readiness, reasonList, reasons, tokens: tokens.join(''), tokenEnds, tokenNull, counts };
}

/** The buffers of `w` to hand over with it (postMessage's transfer list). */
export function wireTransfer(w: WireResources): ArrayBuffer[] {
  return [w.nameEnds, w.readiness, w.reasons, w.tokenEnds, w.tokenNull, w.counts].map((a) => a.buffer as ArrayBuffer);
}

/**
 * Whether `v` is a job's columns, whole: typed arrays of its length, which a report read from a
 * file (JSON) cannot hold, so a file never passes for one.
 */
export function isWireResources(v: unknown): v is WireResources {
  if (v === null || typeof v !== 'object' || (v as { kind?: unknown }).kind !== 'wire-resources') return false;
  const w = v as WireResources;
  const n = w.n;
  return (
    Number.isInteger(n) && typeof w.names === 'string' && typeof w.tokens === 'string' && Array.isArray(w.reasonList) &&
    w.nameEnds instanceof Uint32Array && w.nameEnds.length === n && w.readiness instanceof Uint8Array && w.readiness.length === n &&
    w.reasons instanceof Uint32Array && w.reasons.length === n && w.tokenEnds instanceof Uint32Array && w.tokenEnds.length === n &&
    w.tokenNull instanceof Uint8Array && w.tokenNull.length === n && w.counts instanceof Float64Array && w.counts.length === n * COUNTS
  );
}

/** The i-th summary of `w`'s columns, made now (ResourceSummary's fields, in its order). */
function summaryAt(w: WireResources, i: number): ResourceSummary {
  const c = i * COUNTS;
  const counts = w.counts;
  const tokenStart = i === 0 ? 0 : w.tokenEnds[i - 1]!;
  return {
    resource: nameAt(w, i),
    readiness: READINESS[w.readiness[i]!]!,
    reason: w.reasonList[w.reasons[i]!]!,
    highestAcceptedToken: w.tokenNull[i] === 1 ? null : w.tokens.slice(tokenStart, w.tokenEnds[i]),
    events: counts[c]!,
    writes: { accepted: counts[c + 1]!, rejectedStaleFence: counts[c + 2]!, rejectedOther: counts[c + 3]!, withoutToken: counts[c + 4]! },
    staleWrites: counts[c + 5]!,
    oldHandleReleases: counts[c + 6]!,
    findings: counts[c + 7]!,
  };
}

function nameAt(w: WireResources, i: number): string {
  return w.names.slice(i === 0 ? 0 : w.nameEnds[i - 1]!, w.nameEnds[i]);
}

/**
 * The summaries of several jobs' columns as one list in the order of a single run's report (by
 * resource key, as `<` compares them), made one at a time as they are walked. Each job's summaries
 * are in that order already (Engine.resourceList()), so they are merged, not sorted.
 */
export function mergedResources(parts: readonly WireResources[]): ResourceSummaries & { readonly [PLAIN_SUMMARIES]: true } {
  const length = parts.reduce((a, w) => a + w.n, 0);
  return {
    length,
    [PLAIN_SUMMARIES]: true as const,
    *[Symbol.iterator](): Generator<ResourceSummary> {
      const at = parts.map(() => 0);
      const heads = parts.map((w) => (w.n > 0 ? nameAt(w, 0) : undefined));
      for (;;) {
        let best = -1;
        for (let k = 0; k < parts.length; k++) {
          const h = heads[k];
          if (h !== undefined && (best === -1 || h < heads[best]!)) best = k;
        }
        if (best === -1) return;
        const w = parts[best]!;
        const i = at[best]!;
        yield summaryAt(w, i);
        at[best] = i + 1;
        heads[best] = i + 1 < w.n ? nameAt(w, i + 1) : undefined;
      }
    },
  };
}
