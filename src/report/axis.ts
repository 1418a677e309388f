/**
 * The geometry of the HTML report's pictures, without a DOM: a time axis that may be broken
 * (quiet stretches left out and marked), and marks placed on a row so that none overlaps another.
 * Widths are in the SVG's own units (the picture is drawn at a fixed width and scaled).
 */
import { minOf } from '../model/stats.js';

/** One linear stretch of a broken axis: times t0..t1 drawn from x0 to x1, inside the extent lo..hi. */
export interface Segment {
  t0: number;
  t1: number;
  x0: number;
  x1: number;
  lo: number;
  hi: number;
}

/** What lies between two segments: `ms` of quiet time, and `hidden` events not in this view. */
export interface Break {
  lo: number;
  hi: number;
  ms: number;
  hidden: number;
}

export interface Axis {
  segments: Segment[];
  breaks: Break[];
}

export interface AxisOptions {
  /** Plot extent. */
  lo: number;
  hi: number;
  /** Wanted distance between two distinct times: a crowded segment is split at its longest quiet stretch until this holds (or splitting no longer helps). */
  minSep: number;
  /** Width of a break, and padding at both ends of a segment. */
  breakWidth: number;
  pad: number;
  /** Breaks chosen at most (breaks between intervals come on top). */
  maxBreaks: number;
  /** Width a segment from t0 to t1 needs at least (its marks side by side). */
  need?: (t0: number, t1: number) => number;
}

interface Run {
  ts: number[];
  /** The break after this run, if any: quiet time and hidden events. */
  after?: { ms: number; hidden: number };
}

/**
 * A broken axis over `intervals` (sorted, disjoint; between two there is always a break, whose
 * `hidden` is given) holding the sorted `times`. Each segment is linear with a scale of its own;
 * segments share the width by what they hold (their distinct times, at least the room their
 * marks need). While a segment is crowded (two distinct times closer than `minSep`), it is split
 * at its longest quiet stretch, if that stretch is at least three times its median one (a regular
 * rhythm is not broken up: its marks are drawn apart or grouped instead).
 */
export function brokenAxis(times: readonly number[], intervals: readonly { t0: number; t1: number; hiddenBefore: number }[], o: AxisOptions): Axis {
  const width = o.hi - o.lo;
  const ts = [...new Set(times)].sort((a, b) => a - b);
  // Runs between the forced breaks.
  let runs: Run[] = [];
  for (const t of ts) {
    const k = intervalIndex(intervals, t);
    const last = runs[runs.length - 1];
    if (last !== undefined && intervalIndex(intervals, last.ts[last.ts.length - 1]!) === k) last.ts.push(t);
    else {
      if (last !== undefined) last.after = { ms: t - last.ts[last.ts.length - 1]!, hidden: intervals[k]!.hiddenBefore };
      runs.push({ ts: [t] });
    }
  }
  if (runs.length === 0) runs.push({ ts: [intervals[0]?.t0 ?? 0] });
  const needOf = (r: Run) => Math.max(2 * o.pad + o.minSep * (r.ts.length - 1), o.need?.(r.ts[0]!, r.ts[r.ts.length - 1]!) ?? 0);
  const widthsOf = (rs: Run[]) => {
    const avail = width - (rs.length - 1) * o.breakWidth;
    const needs = rs.map(needOf);
    const total = needs.reduce((a, b) => a + b, 0);
    return needs.map((n) => (n * avail) / total);
  };
  for (let chosen = 0; chosen < o.maxBreaks; chosen++) {
    const widths = widthsOf(runs);
    let worst = -1;
    let worstSep = o.minSep;
    let at = -1;
    runs.forEach((r, k) => {
      if (r.ts.length < 3) return;
      const gaps = r.ts.slice(1).map((t, i) => t - r.ts[i]!);
      const dur = r.ts[r.ts.length - 1]! - r.ts[0]!;
      const sep = (minOf(gaps) * (widths[k]! - 2 * o.pad)) / dur;
      if (sep >= worstSep) return;
      const sorted = gaps.slice().sort((a, b) => a - b);
      const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
      const longest = sorted[sorted.length - 1]!;
      if (longest < 3 * median) return;
      worst = k;
      worstSep = sep;
      at = gaps.indexOf(longest);
    });
    if (worst < 0) break;
    const r = runs[worst]!;
    const left: Run = { ts: r.ts.slice(0, at + 1), after: { ms: r.ts[at + 1]! - r.ts[at]!, hidden: 0 } };
    const right: Run = { ts: r.ts.slice(at + 1) };
    if (r.after !== undefined) right.after = r.after;
    runs = [...runs.slice(0, worst), left, right, ...runs.slice(worst + 1)];
  }
  const widths = widthsOf(runs);
  const segments: Segment[] = [];
  const breaks: Break[] = [];
  let x = o.lo;
  runs.forEach((r, j) => {
    const w = widths[j]!;
    const t0 = r.ts[0]!;
    const t1 = r.ts[r.ts.length - 1]!;
    const x0 = t1 > t0 ? x + o.pad : x + w / 2;
    segments.push({ t0, t1, x0, x1: t1 > t0 ? x + w - o.pad : x0, lo: x, hi: x + w });
    x += w;
    if (r.after !== undefined && j < runs.length - 1) {
      breaks.push({ lo: x, hi: x + o.breakWidth, ms: r.after.ms, hidden: r.after.hidden });
      x += o.breakWidth;
    }
  });
  return { segments, breaks };
}

function intervalIndex(intervals: readonly { t0: number; t1: number }[], t: number): number {
  for (let i = 0; i < intervals.length; i++) if (t <= intervals[i]!.t1) return i;
  return intervals.length - 1;
}

/** A linear axis from t0 to t1 over lo..hi (the whole span, true proportions). */
export function linearAxis(t0: number, t1: number, lo: number, hi: number, pad: number): Axis {
  return { segments: [{ t0, t1, x0: lo + pad, x1: t1 > t0 ? hi - pad : lo + pad, lo, hi }], breaks: [] };
}

/** Where a time is drawn: inside its segment, or across the break it falls in, or clamped to the ends. */
export function xOf(axis: Axis, t: number): number {
  const segs = axis.segments;
  const first = segs[0]!;
  if (t <= first.t0) return t === first.t0 ? first.x0 : first.lo;
  for (let i = 0; i < segs.length; i++) {
    const g = segs[i]!;
    if (t <= g.t1) return g.t1 > g.t0 ? g.x0 + ((t - g.t0) / (g.t1 - g.t0)) * (g.x1 - g.x0) : g.x0;
    const next = segs[i + 1];
    if (next !== undefined && t < next.t0) return g.x1 + ((t - g.t1) / (next.t0 - g.t1)) * (next.x0 - g.x1);
  }
  return segs[segs.length - 1]!.hi;
}

/** The segment a time falls in, or -1 (in a break or outside). */
export function segmentOf(axis: Axis, t: number): number {
  return axis.segments.findIndex((g) => t >= g.t0 && t <= g.t1);
}

/** A mark to place on a row: where it wants to be, its half width, and whether it must stay on its own. */
export interface RowItem {
  x: number;
  half: number;
  keep: boolean;
  ids: number[];
}

/**
 * Place marks on one row between lo and hi: in order, none overlapping (centres at least the sum
 * of their half widths apart), each as close to where it wants to be as possible (isotonic
 * regression by pooling adjacent blocks). When they cannot all fit, the two closest neighbours
 * are merged into one group (of half width `groupHalf(n)`), marks that must stay on their own
 * last, until they fit. `group` first merges every run of marks closer than they need (the
 * whole-span view). Returns the placed items, groups with several ids.
 */
export function placeRow(items: readonly RowItem[], lo: number, hi: number, groupHalf: (n: number) => number, group: boolean): (RowItem & { at: number })[] {
  let row = items.map((it) => ({ ...it, ids: it.ids.slice() }));
  const merge = (a: RowItem, b: RowItem): RowItem => {
    const n = a.ids.length + b.ids.length;
    return { x: (a.x * a.ids.length + b.x * b.ids.length) / n, half: groupHalf(n), keep: a.keep || b.keep, ids: [...a.ids, ...b.ids] };
  };
  if (group) {
    const out: RowItem[] = [];
    for (const it of row) {
      const prev = out[out.length - 1];
      if (prev !== undefined && it.x - prev.x < prev.half + it.half) out[out.length - 1] = merge(prev, it);
      else out.push(it);
    }
    row = out;
  }
  const fits = () => row.reduce((s, it) => s + 2 * it.half, 0) <= hi - lo;
  while (row.length > 1 && !fits()) {
    let best = -1;
    let cost = Infinity;
    for (let i = 0; i + 1 < row.length; i++) {
      const c = row[i + 1]!.x - row[i]!.x + (row[i]!.keep || row[i + 1]!.keep ? 1e9 : 0) + (row[i]!.ids.length + row[i + 1]!.ids.length) * 1e-3;
      if (c < cost) {
        cost = c;
        best = i;
      }
    }
    row.splice(best, 2, merge(row[best]!, row[best + 1]!));
  }
  if (row.length === 1 && 2 * row[0]!.half > hi - lo) row[0]!.half = (hi - lo) / 2;
  // Offsets: item i sits at least c[i] right of item 0.
  const c: number[] = [0];
  for (let i = 1; i < row.length; i++) c.push(c[i - 1]! + row[i - 1]!.half + row[i]!.half);
  // Pool adjacent violators on q[i] = at[i] - c[i], which must not decrease.
  const blocks: { sum: number; n: number }[] = [];
  for (let i = 0; i < row.length; i++) {
    blocks.push({ sum: row[i]!.x - c[i]!, n: 1 });
    while (blocks.length > 1 && blocks[blocks.length - 2]!.sum / blocks[blocks.length - 2]!.n > blocks[blocks.length - 1]!.sum / blocks[blocks.length - 1]!.n) {
      const b = blocks.pop()!;
      blocks[blocks.length - 1]!.sum += b.sum;
      blocks[blocks.length - 1]!.n += b.n;
    }
  }
  const q: number[] = [];
  for (const b of blocks) for (let j = 0; j < b.n; j++) q.push(b.sum / b.n);
  const last = row.length - 1;
  const L = lo + (row[0]?.half ?? 0);
  const U = hi - (row[last]?.half ?? 0) - (c[last] ?? 0);
  return row.map((it, i) => ({ ...it, at: Math.min(Math.max(q[i]!, L), Math.max(L, U)) + c[i]! }));
}
