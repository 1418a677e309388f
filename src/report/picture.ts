/**
 * The picture of one resource for the HTML report, laid out here and drawn by the page's script:
 * one lane per owner, lease bars (grant to end: logged, inferred as last renewal + ttl, or not
 * known), and every event as a mark. Two views: `focus` opens on the stretches that hold the
 * findings' evidence, with quiet stretches broken out of the axis and marked; `whole` is the
 * whole captured history at true proportions, coincident events grouped. In either view no mark
 * or label overlaps another (see axis.ts). Log content is returned raw: the page sets it as text.
 */
import type { Finding, ResourceTimelineView, TimelineEvent } from '../model/report.js';
import { brokenAxis, linearAxis, placeRow, segmentOf, xOf, type Axis, type RowItem } from './axis.js';
import { relative } from './story.js';
import { maxOf, minOf } from '../model/stats.js';

/** Drawing width; the plot runs from PLOT_L to PLOT_R, lane names left of it. */
export const WIDTH = 960;
const PLOT_L = 168;
const PLOT_R = 948;
const TOP = 4;
export const LANE = 54;
/** Mark centre and bar row, below a lane's top. */
const MARK_Y = 26;
const BAR_Y = 42;
/** What the page's script draws with: the same numbers as the layout. */
export const GEOMETRY = { width: WIDTH, plotL: PLOT_L, plotR: PLOT_R, top: TOP, lane: LANE, markY: MARK_Y, barY: BAR_Y };
const PAD = 14;
const BREAK_W = 40;
/** Width of one character of a 10px monospace label, with room to spare. */
const CHAR_W = 6.3;
const GAP = 4;
const LABEL_CHARS = 10;
const LANE_CHARS = 20;
const FIELD_CHARS = 160;
const MAX_FIELDS = 24;

/** Glyphs: w* writes by result, aq/ab acquire granted/busy, xe/xl/xi expire (authority, worker's view, inferred), rl/rn release ok/refused, ko/kf keepalive ok/failed, gr a group. */
export type Glyph = 'wa' | 'ws' | 'wr' | 'wt' | 'wx' | 'aq' | 'ab' | 'xe' | 'xl' | 'xi' | 'rl' | 'rn' | 'ko' | 'kf' | 'gr';

export interface PicEvent {
  ts: string;
  /** Relative to the resource's first event, e.g. `t=5.329s`. */
  t: string;
  file: string;
  line: number;
  type: string;
  result: string;
  observer: string;
  owner?: string;
  lease?: string;
  token?: string;
  ttl?: number;
  op?: string;
  highest?: string;
  /** Other fields of the line, clipped; `more` counts those left out. */
  fields?: [string, string][];
  more?: number;
  findings?: string[];
  decisive?: string[];
  /** A lease end no line logged: last renewal + ttl (file:line are the renewal's). */
  inferred?: true;
  lane: number;
  glyph: Glyph;
}

export interface PicMark {
  x: number;
  lane: number;
  glyph: Glyph;
  /** Event indexes: one, or a group's. */
  ev: number[];
  /** Where the event's time is, when the mark had to move aside. */
  at?: number;
  label?: string;
  ring?: true;
  /** Half width the mark takes, label included (for the overlap check). */
  half: number;
}

export interface PicBar {
  lane: number;
  x0: number;
  x1: number;
  /** 0 or 1 when two leases of a lane overlap in time, else -1 (full height). */
  sub: number;
  end: 'logged' | 'inferred' | 'open';
  clipL?: true;
  clipR?: true;
  /** The worker still acted as holder until here (it logged losing the lease later). */
  lostX?: number;
  title: string;
}

export interface PicText {
  x: number;
  text: string;
  row: number;
  title?: string;
}

export interface PicView {
  /** The lanes drawn, top to bottom (indexes into Picture.lanes); marks and bars give their row in this list. */
  lanes: number[];
  height: number;
  axisY: number;
  /** Axis segments and breaks, as x ranges. */
  segments: [number, number][];
  breaks: { lo: number; hi: number; title: string }[];
  ticks: PicText[];
  bars: PicBar[];
  marks: PicMark[];
  /** Events of the history outside this view: before it, hidden in its breaks, after it. */
  before: number;
  hidden: number;
  after: number;
  shown: number;
}

export interface Picture {
  lanes: string[];
  events: PicEvent[];
  focus: PicView;
  /** The whole span at true proportions; absent when the focus view already is that. */
  whole?: PicView;
  /** What the focus view opens on: the findings' evidence and the stale writes the resource rejected (what makes it verified), else all its events. */
  focusOn: 'evidence' | 'evidence+rejections' | 'rejections' | 'activity';
  /** By finding id, the event each evidence item is drawn as (-1: not drawn). */
  evidence: Map<string, number[]>;
}

interface Item {
  i: number;
  ms: number;
}

interface Bar {
  lane: number;
  from: number;
  to: number;
  end: 'logged' | 'inferred' | 'open';
  lost?: number;
  label: string;
}

const HALF: Record<Glyph, number> = { wa: 7, ws: 7, wr: 7, wt: 7, wx: 7, aq: 7, ab: 6, xe: 7.5, xl: 7.5, xi: 7.5, rl: 6, rn: 6, ko: 4, kf: 4, gr: 12 };
const RING_HALF = 12;
/** A group's ring (r 12) and box. */
const GROUP_RING = 13.5;

export function picture(view: ResourceTimelineView, findings: readonly Finding[]): Picture {
  const timeline = view.events;
  const t0 = minOf(timeline.map((e) => Date.parse(e.ts)).filter(Number.isFinite));
  const base = Number.isFinite(t0) ? t0 : 0;

  // Lanes: one per owner; lock events without an owner go to their lease's owner, or the authority.
  const leaseOwner = new Map<string, string>();
  for (const e of timeline) if (e.type === 'acquire' && e.ownerId !== undefined && e.leaseId !== undefined) leaseOwner.set(e.leaseId, e.ownerId);
  const ownerOf = (e: { ownerId?: string; leaseId?: string; type: string }) => e.ownerId ?? (e.leaseId !== undefined ? leaseOwner.get(e.leaseId) : undefined) ?? (e.type === 'write' ? '(no owner)' : 'authority');
  const laneNames: string[] = [];
  const laneIndex = new Map<string, number>();
  const laneOf = (e: { ownerId?: string; leaseId?: string; type: string }) => {
    const o = ownerOf(e);
    let i = laneIndex.get(o);
    if (i === undefined) {
      i = laneNames.length;
      laneNames.push(o);
      laneIndex.set(o, i);
    }
    return i;
  };

  const events: PicEvent[] = [];
  const items: Item[] = [];
  for (const e of timeline) {
    const ms = Date.parse(e.ts);
    const pe = toPicEvent(e, base, laneOf(e));
    items.push({ i: events.length, ms: Number.isFinite(ms) ? ms : base });
    events.push(pe);
  }

  // Lease bars: grant to its end. The authority's word (expire, revoke, a release it granted) ends
  // a bar; without it, last renewal + ttl (inferred); a worker that logs losing its lease after
  // that only shows how long it went on believing it held it.
  const bars: Bar[] = [];
  const open = new Map<string, { bar: Bar; ttl?: number; renew: number; renewAt: number }>();
  const keyOf = (e: TimelineEvent) => e.leaseId ?? (e.fenceToken !== undefined ? `#${e.fenceToken}` : e.ownerId !== undefined ? `@${e.ownerId}` : undefined);
  const inferredEnds: { bar: Bar; renewAt: number; ev: TimelineEvent }[] = [];
  timeline.forEach((e, idx) => {
    const ms = items[idx]!.ms;
    const key = keyOf(e);
    if (key === undefined) return;
    const o = open.get(key);
    if (e.type === 'acquire' && e.result === 'granted') {
      if (o !== undefined) close(o, ms, 'logged');
      const bar: Bar = { lane: events[idx]!.lane, from: ms, to: ms, end: 'open', label: [e.leaseId !== undefined ? `lease ${e.leaseId}` : undefined, e.fenceToken !== undefined ? `token ${e.fenceToken}` : undefined].filter(Boolean).join(', ') || 'lease' };
      bars.push(bar);
      open.set(key, { bar, ttl: e.ttlMs, renew: ms, renewAt: idx });
      return;
    }
    if (o === undefined) return;
    if (e.type === 'keepalive' && e.result === 'ok') {
      o.renew = ms;
      o.renewAt = idx;
      if (e.ttlMs !== undefined) o.ttl = e.ttlMs;
    } else if (e.type === 'expire' || e.type === 'revoke' || (e.type === 'release' && e.result === 'released')) {
      const workerView = (e.type === 'expire' || e.type === 'revoke') && e.observer === 'worker';
      if (workerView && o.ttl !== undefined && o.renew + o.ttl < ms) {
        close(o, o.renew + o.ttl, 'inferred');
        o.bar.lost = ms;
      } else close(o, ms, 'logged');
      open.delete(key);
    }
  });
  for (const o of open.values()) {
    if (o.ttl !== undefined) close(o, o.renew + o.ttl, 'inferred');
    else o.bar.to = Infinity;
  }
  function close(o: { bar: Bar; ttl?: number; renew: number; renewAt: number }, to: number, end: Bar['end']): void {
    o.bar.to = Math.max(to, o.bar.from); // a clock that went back does not end a lease before its grant
    o.bar.end = end;
    if (end === 'inferred') inferredEnds.push({ bar: o.bar, renewAt: o.renewAt, ev: timeline[o.renewAt]! });
  }

  // Evidence: each item is an event of the history, or an inferred lease end drawn as its own mark.
  const byLine = new Map<string, number>();
  timeline.forEach((e, i) => {
    const exact = `${e.file}\u0000${e.line}\u0000${e.ts}\u0000${e.type}`;
    if (!byLine.has(exact)) byLine.set(exact, i);
    const loose = `${e.file}\u0000${e.line}`;
    if (!byLine.has(loose)) byLine.set(loose, i);
  });
  const last = maxOf(items.map((x) => x.ms));
  const inferredAt = new Map<string, number>();
  const addInferred = (ev: TimelineEvent, ms: number, lane: number) => {
    const key = `${ev.leaseId ?? ''}\u0000${ms}`;
    const known = inferredAt.get(key);
    if (known !== undefined) return known;
    const pe = toPicEvent({ ...ev, type: 'expire', result: 'expired', observer: 'authority', ts: new Date(ms).toISOString(), fenceToken: ev.fenceToken, findings: undefined, decisiveFor: undefined, highestAccepted: undefined, fields: undefined, ttlMs: undefined }, base, lane);
    pe.inferred = true;
    pe.glyph = 'xi';
    const i = events.length;
    events.push(pe);
    items.push({ i, ms });
    inferredAt.set(key, i);
    return i;
  };
  for (const x of inferredEnds) if (x.bar.to <= last) addInferred(x.ev, x.bar.to, x.bar.lane);
  const evidence = new Map<string, number[]>();
  for (const f of findings) {
    const at = f.evidence.map((e) => {
      if (e.inferred) {
        const ms = Date.parse(e.ts);
        const i = addInferred({ ...e, findings: undefined }, ms, laneOf({ ownerId: e.ownerId, leaseId: e.leaseId, type: 'expire' }));
        const pe = events[i]!;
        if (!(pe.findings ?? []).includes(f.id)) pe.findings = [...(pe.findings ?? []), f.id];
        if (e.decisive && !(pe.decisive ?? []).includes(f.id)) pe.decisive = [...(pe.decisive ?? []), f.id];
        return i;
      }
      return byLine.get(`${e.file}\u0000${e.line}\u0000${e.ts}\u0000${e.type}`) ?? byLine.get(`${e.file}\u0000${e.line}`) ?? -1;
    });
    evidence.set(f.id, at);
  }
  items.sort((a, b) => a.ms - b.ms || a.i - b.i);
  const msOf: number[] = [];
  for (const x of items) msOf[x.i] = x.ms;

  // Focus: each piece of evidence with one event of context either side; pieces with no event
  // between them are merged, and what lies between the others is left out (a break says how much).
  const stretches: { t0: number; t1: number }[] = [];
  const allMs = items.map((x) => x.ms);
  const around = (t: number) => {
    const k = lowerBound(allMs, t);
    const j = upperBound(allMs, t);
    stretches.push({ t0: k > 0 ? allMs[k - 1]! : t, t1: j < allMs.length ? allMs[j]! : t });
  };
  for (const f of findings) for (const i of evidence.get(f.id) ?? []) if (i >= 0) around(msOf[i]!);
  const cited = stretches.length > 0;
  let rejected = false;
  // A stale write the resource rejected, and the accepted write whose token it was measured against.
  items.forEach((x, k) => {
    const e = events[x.i]!;
    if (e.glyph !== 'ws') return;
    around(x.ms);
    rejected = true;
    for (let j = k - 1; j >= 0; j--) {
      const w = events[items[j]!.i]!;
      if (w.glyph === 'wa' && w.token !== undefined && w.token === e.highest) {
        around(items[j]!.ms);
        break;
      }
    }
  });
  const focusOn = cited ? (rejected ? 'evidence+rejections' : 'evidence') : rejected ? 'rejections' : 'activity';
  if (stretches.length === 0 && items.length > 0) stretches.push({ t0: items[0]!.ms, t1: items[items.length - 1]!.ms });
  stretches.sort((a, b) => a.t0 - b.t0);
  const merged: { t0: number; t1: number; hiddenBefore: number }[] = [];
  for (const s of stretches) {
    const prev = merged[merged.length - 1];
    const between = prev === undefined ? 0 : Math.max(0, lowerBound(allMs, s.t0) - upperBound(allMs, prev.t1));
    if (prev !== undefined && (s.t0 <= prev.t1 || between === 0)) prev.t1 = Math.max(prev.t1, s.t1);
    else merged.push({ ...s, hiddenBefore: between });
  }
  if (merged.length === 0) merged.push({ t0: base, t1: base, hiddenBefore: 0 });
  const inFocus = (ms: number) => merged.some((s) => ms >= s.t0 && ms <= s.t1);

  const lanes = laneNames.map((n) => clip(n, LANE_CHARS));
  const focusItems = items.filter((x) => inFocus(x.ms));
  const focusTimes = focusItems.map((x) => x.ms);
  for (const b of bars) for (const t of [b.from, b.to, b.lost]) if (t !== undefined && Number.isFinite(t) && inFocus(t)) focusTimes.push(t);
  const halves = new Map(events.map((e, i) => [i, halfOf(e)]));
  // The room a stretch needs: its busiest lane's marks side by side (focusItems are in time order).
  const focusMs = focusItems.map((x) => x.ms);
  const need = (a: number, b: number) => {
    const perLane = new Map<number, number>();
    let most = 0;
    for (let k = lowerBound(focusMs, a), end = upperBound(focusMs, b); k < end; k++) {
      const x = focusItems[k]!;
      const lane = events[x.i]!.lane;
      const w = (perLane.get(lane) ?? 0) + 2 * halves.get(x.i)!;
      perLane.set(lane, w);
      if (w > most) most = w;
    }
    return most + 2;
  };
  const focusAxis = brokenAxis(focusTimes, merged, { lo: PLOT_L, hi: PLOT_R, minSep: 24, breakWidth: BREAK_W, pad: PAD, maxBreaks: 12, need });
  const dMin = merged[0]!.t0;
  const dMax = merged[merged.length - 1]!.t1;
  const focus = layout(focusAxis, focusItems, false, merged);
  focus.before = items.filter((x) => x.ms < dMin).length;
  focus.after = items.filter((x) => x.ms > dMax).length;
  focus.hidden = items.length - focusItems.length - focus.before - focus.after;

  let whole: PicView | undefined;
  const tMin = items.length > 0 ? items[0]!.ms : base;
  const tMax = items.length > 0 ? items[items.length - 1]!.ms : base;
  if (focusAxis.breaks.length > 0 || focusItems.length < items.length || focus.marks.some((m) => m.ev.length > 1)) {
    whole = layout(linearAxis(tMin, tMax, PLOT_L, PLOT_R, PAD), items, true, [{ t0: tMin, t1: tMax }]);
    whole.before = whole.after = whole.hidden = 0;
  }
  return { lanes, events, focus, whole, focusOn, evidence };

  function layout(axis: Axis, shown: Item[], group: boolean, windows: readonly { t0: number; t1: number }[]): PicView {
    const marks: PicMark[] = [];
    for (let lane = 0; lane < lanes.length; lane++) {
      axis.segments.forEach((seg, k) => {
        const row: RowItem[] = [];
        for (const x of shown) {
          if (events[x.i]!.lane !== lane || segmentOf(axis, x.ms) !== k) continue;
          const e = events[x.i]!;
          row.push({ x: xOf(axis, x.ms), half: halves.get(x.i)!, keep: e.findings !== undefined, ids: [x.i] });
        }
        for (const p of placeRow(row, seg.lo + 1, seg.hi - 1, groupHalf, group)) {
          const first = events[p.ids[0]!]!;
          const mark: PicMark = { x: round(p.at), lane, glyph: p.ids.length > 1 ? 'gr' : first.glyph, ev: p.ids, half: round(p.half) };
          if (Math.abs(p.at - p.x) > 1) mark.at = round(p.x);
          if (p.ids.length === 1) {
            const l = labelOf(first);
            if (l !== undefined) mark.label = l;
          }
          if (p.ids.some((i) => events[i]!.decisive !== undefined)) mark.ring = true;
          marks.push(mark);
        }
      });
    }
    // Bars, clipped to the view; where two leases of a lane overlap in time, each takes half the row.
    const lo = axis.segments[0]!.lo;
    const hi = axis.segments[axis.segments.length - 1]!.hi;
    const drawn: PicBar[] = [];
    const rows: number[][] = laneNames.map(() => [-Infinity, -Infinity]);
    const sorted = bars.filter((b) => windows.some((w) => b.to >= w.t0 && b.from <= w.t1)).sort((a, b) => a.from - b.from);
    const overlapping = new Set<number>();
    for (const b of sorted) {
      // Clipped to the first and last stretch of the view it overlaps (a bar crosses the breaks between).
      const start = windows.find((w) => b.to >= w.t0 && b.from <= w.t1)!.t0;
      const end = windows.filter((w) => b.to >= w.t0 && b.from <= w.t1).pop()!.t1;
      // A lease that only touches the view at its edge (ended as it begins) is not drawn.
      if (Math.min(b.to, end) <= Math.max(b.from, start) && (b.from < start || b.to > end)) continue;
      const r = rows[b.lane]!;
      const sub = r[0]! <= b.from ? 0 : 1;
      if (sub === 1) overlapping.add(b.lane);
      r[sub] = Math.max(r[sub]!, b.to);
      const bar: PicBar = { lane: b.lane, x0: round(Math.max(lo, b.from < start ? xOf(axis, start) : xOf(axis, b.from))), x1: round(Math.min(hi, b.to > end ? xOf(axis, end) : xOf(axis, b.to))), sub, end: b.end, title: barTitle(b, base) };
      if (b.from < start) bar.clipL = true;
      if (b.to > end) bar.clipR = true;
      if (b.lost !== undefined && b.to <= end) {
        // The tail runs on, across breaks, to the worker's line, or to the end of the view's last stretch before it.
        const last = windows.filter((w) => w.t0 <= b.lost!).pop()!;
        bar.lostX = round(Math.min(hi, xOf(axis, Math.min(b.lost, last.t1))));
      }
      drawn.push(bar);
    }
    for (const bar of drawn) if (!overlapping.has(bar.lane)) bar.sub = -1;
    // Lanes with nothing in this view are left out of it.
    const used = [...new Set([...marks.map((m) => m.lane), ...drawn.map((b) => b.lane)])].sort((a, b) => a - b);
    if (used.length === 0) used.push(0);
    const row = new Map(used.map((lane, i) => [lane, i]));
    for (const m of marks) m.lane = row.get(m.lane)!;
    for (const b of drawn) b.lane = row.get(b.lane)!;
    const axisY = TOP + used.length * LANE + 6;
    return {
      lanes: used,
      height: axisY + 40,
      axisY,
      segments: axis.segments.map((g) => [round(g.lo), round(g.hi)]),
      breaks: axis.breaks.map((b) => ({ lo: round(b.lo), hi: round(b.hi), title: b.hidden > 0 ? `${b.hidden} event${b.hidden === 1 ? '' : 's'} in ${relative(b.ms)} left out: not part of any finding's evidence (Whole span shows them)` : `${relative(b.ms)} without events, left out of the axis` })),
      ticks: ticks(axis, base),
      bars: drawn,
      marks,
      before: 0,
      hidden: 0,
      after: 0,
      shown: shown.length,
    };
  }
}

/** Axis labels that do not overlap: segment ends first, then evenly spaced ones where there is room; the length of each break below. */
function ticks(axis: Axis, base: number): PicText[] {
  const out: PicText[] = [];
  const taken: [number, number][][] = [[], []];
  const tryAdd = (x: number, text: string, row: number, title?: string) => {
    const w = text.length * CHAR_W;
    // Centred on its time, or shifted to stay inside the drawing.
    const a = Math.min(Math.max(2, x - w / 2 - 3), WIDTH - 2 - w - 6);
    const b = a + w + 6;
    if (taken[row]!.some(([p, q]) => a < q && b > p)) return false;
    taken[row]!.push([a, b]);
    const t: PicText = { x: round(a + 3 + w / 2), text, row };
    if (title !== undefined) t.title = title;
    out.push(t);
    return true;
  };
  const label = (t: number) => `t=${precise(t - base)}`;
  for (const g of axis.segments) tryAdd(g.x0, label(g.t0), 0);
  for (const g of axis.segments) if (g.t1 > g.t0) tryAdd(g.x1, label(g.t1), 0);
  for (const g of axis.segments) {
    if (g.x1 - g.x0 < 150 || g.t1 <= g.t0) continue;
    // Round times (1, 2 or 5 times a power of ten ms after the first event) about 150 px apart.
    const step = niceStep(((g.t1 - g.t0) * 150) / (g.x1 - g.x0));
    for (let t = Math.ceil((g.t0 - base) / step) * step + base; t < g.t1; t += step) {
      if (t > g.t0) tryAdd(g.x0 + ((t - g.t0) / (g.t1 - g.t0)) * (g.x1 - g.x0), label(t), 0);
    }
  }
  for (const b of axis.breaks) tryAdd((b.lo + b.hi) / 2, b.hidden > 0 ? `+${b.hidden} ev` : `+${relative(b.ms)}`, 1);
  return out;
}

/** Like the stories' relative times (0, 120ms, 12.5s, 3m05s), with milliseconds kept past a minute too (3m05.25s). */
function precise(ms: number): string {
  const t = Math.max(0, Math.round(ms));
  if (t < 60_000) return relative(t);
  const sec = (t % 60_000) / 1000;
  const whole = Math.floor(sec);
  const frac = t % 1000 === 0 ? '' : (sec - whole).toFixed(3).slice(1).replace(/0+$/, '');
  const secs = `${String(whole).padStart(2, '0')}${frac}s`;
  const m = Math.floor((t % 3_600_000) / 60_000);
  return t < 3_600_000 ? `${m}m${secs}` : `${Math.floor(t / 3_600_000)}h${String(m).padStart(2, '0')}m${secs}`;
}

/** First index with a[i] >= t, and first with a[i] > t, in a sorted list. */
function lowerBound(a: readonly number[], t: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound(a: readonly number[], t: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function niceStep(ms: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(ms, 1e-3)));
  for (const m of [1, 2, 5, 10]) if (m * p >= ms) return m * p;
  return 10 * p;
}

function toPicEvent(e: TimelineEvent, base: number, lane: number): PicEvent {
  const ms = Date.parse(e.ts);
  const pe: PicEvent = { ts: e.ts, t: `t=${precise(Number.isFinite(ms) ? ms - base : 0)}`, file: e.file, line: e.line, type: e.type, result: e.result, observer: e.observer, lane, glyph: glyphOf(e) };
  if (e.ownerId !== undefined) pe.owner = e.ownerId;
  if (e.leaseId !== undefined) pe.lease = e.leaseId;
  if (e.fenceToken !== undefined) pe.token = e.fenceToken;
  if (e.ttlMs !== undefined) pe.ttl = e.ttlMs;
  if (e.operationId !== undefined) pe.op = e.operationId;
  if (e.highestAccepted !== undefined) pe.highest = e.highestAccepted;
  if (e.findings !== undefined) pe.findings = e.findings.slice();
  if (e.decisiveFor !== undefined) pe.decisive = e.decisiveFor.slice();
  if (e.fields !== undefined) {
    const entries = Object.entries(e.fields);
    pe.fields = entries.slice(0, MAX_FIELDS).map(([k, v]) => [clip(k, 60), clip(typeof v === 'string' ? v : JSON.stringify(v) ?? String(v), FIELD_CHARS)]);
    if (entries.length > MAX_FIELDS) pe.more = entries.length - MAX_FIELDS;
  }
  return pe;
}

function glyphOf(e: { type: string; result: string; observer: string }): Glyph {
  switch (e.type) {
    case 'write':
      return e.result === 'accepted' ? 'wa' : e.result === 'rejected-stale-fence' ? 'ws' : e.result === 'rejected' || e.result === 'error' ? 'wr' : e.result === 'timeout' ? 'wt' : 'wx';
    case 'acquire':
      return e.result === 'granted' ? 'aq' : 'ab';
    case 'expire':
    case 'revoke':
      return e.observer === 'worker' ? 'xl' : 'xe';
    case 'release':
      return e.result === 'released' ? 'rl' : 'rn';
    case 'keepalive':
      return e.result === 'ok' ? 'ko' : 'kf';
    default:
      return 'wx';
  }
}

/** The label above a mark: a write's or grant's token. */
function labelOf(e: PicEvent): string | undefined {
  if (e.type === 'write') return e.token !== undefined ? tokenLabel(e.token) : 'no token';
  if (e.type === 'acquire' && e.result === 'granted' && e.token !== undefined) return tokenLabel(e.token);
  return undefined;
}

/** `#42`; a long token keeps its last digits, where tokens of one resource differ (`#…08995000`). */
function tokenLabel(token: string): string {
  return token.length < LABEL_CHARS ? `#${token}` : `#…${token.slice(-(LABEL_CHARS - 2))}`;
}

function halfOf(e: PicEvent): number {
  const glyph = e.decisive !== undefined ? Math.max(HALF[e.glyph], RING_HALF) : HALF[e.glyph];
  const label = labelOf(e);
  return Math.max(glyph, label === undefined ? 0 : (label.length * CHAR_W) / 2 + 1) + GAP / 2;
}

/** A group's half width: its count and the ring it may carry. */
function groupHalf(n: number): number {
  return Math.max(GROUP_RING, ((String(n).length + 1) * CHAR_W) / 2 + 5) + GAP / 2;
}

function barTitle(b: Bar, base: number): string {
  const at = (t: number) => `t=${precise(t - base)}`;
  const end = b.end === 'logged' ? `ended ${at(b.to)} (logged)` : b.end === 'inferred' ? `ended ${at(b.to)} (inferred: last renewal + ttl)` : 'no end known';
  return `${b.label}: granted ${at(b.from)}, ${end}${b.lost !== undefined ? `; its worker logged losing it only at ${at(b.lost)}` : ''}`;
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
