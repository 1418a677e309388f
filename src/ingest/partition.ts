/**
 * One partition of a run (`--partition I/N`, README "Scaling out"): which lines and events are
 * this partition's, and what stands in for the others'.
 *
 * Every partition reads every line and counts it in `lines`. A line (or a record of a line that
 * holds several) belongs to exactly one partition:
 *
 * 1. when the profile's key reader reads its resource key (canonical lines: profiles/canonical-key.ts),
 *    to the partition of that key, whatever the line then turns out to be;
 * 2. else, when it becomes an event, to the partition of the event's resource;
 * 3. else (blank, ignored, invalid, over the length cap) to partition 0.
 *
 * A lease-scoped event (a session expiry naming no resource: its resource is the empty key) is
 * counted by the partition of the empty key, and applied in every partition, to the resources of
 * that partition that hold its lease.
 *
 * The partition of a key is fnv1a64(UTF-8 bytes of the key) mod N (partition/hash.ts). Lines of
 * other partitions are counted in `otherPartitions`, so each partition's summary reconciles
 * (`lines + expanded = events + duplicates + blank + ignored + invalid + joined + otherPartitions`)
 * and the partitions' own counts add up to the single run's.
 *
 * The lines of other partitions are not analysed, but they keep their place: each event of another
 * partition, and each line the key reader read that is no event of this one, passes through the
 * merge by time as a Placeholder with its time and source. So the merge puts this partition's
 * events in the single run's order, and a rule across resources (clock-went-backwards) sees every
 * line of each clock domain. A placeholder from the key reader is not parsed: its other fields
 * are read back from its line only if a finding shows it.
 *
 * With one input, a placeholder that cannot change what the partition sees is folded away
 * (PartitionFilter.fold): only counted, in its place, as a line of the merge with its time.
 */
import type { EventType, LineReader, LockEvent, Observer } from '../model/event.js';
import { partitionOf, partitionOfBytes } from '../partition/hash.js';
import type { KeyLook } from '../profiles/canonical-key.js';
import type { KeyBatchReader, Profile } from '../profiles/types.js';
import { DECLINED_LOOK, NOT_LOOKED, type ByteLineBatch } from './lines.js';
import { isBlankBytes } from './records.js';

export interface PartitionSpec {
  /** This partition, from 0. */
  index: number;
  /** Partitions in all. */
  count: number;
}

/**
 * Stands in the merge for a line of another partition (or, with `extra`, for a line of this one
 * that the key reader read but that became no event). `ts`, `source`, `file` and `line` are the
 * event's; the rest is read from the line when first asked for.
 */
export class Placeholder implements LockEvent {
  constructor(
    readonly ts: number,
    readonly source: string,
    readonly file: string,
    readonly line: number,
    readonly offset: number | undefined,
    readonly bytes: number | undefined,
    /** This partition's line, which became no event (invalid or ignored): it only keeps its place. */
    readonly extra: boolean,
    private ev: LockEvent | undefined,
    private readonly filter: PartitionFilter,
    private readonly profile: Profile,
    /**
     * A lease-scoped event (a session expiry naming no resource) that another partition counts:
     * applied here too, to this partition's resources that hold the lease, but not counted.
     */
    readonly apply = false,
  ) {}

  /** The event the line is (parsed the first time it is asked for). */
  full(): LockEvent {
    return (this.ev ??= this.filter.reparse(this, this.profile));
  }

  get resource(): string {
    return this.full().resource;
  }
  get type(): EventType {
    return this.full().type;
  }
  get ownerId(): string | undefined {
    return this.full().ownerId;
  }
  get leaseId(): string | undefined {
    return this.full().leaseId;
  }
  get operationId(): string | undefined {
    return this.full().operationId;
  }
  get fenceToken(): bigint | undefined {
    return this.full().fenceToken;
  }
  get ttlMs(): number | undefined {
    return this.full().ttlMs;
  }
  get result(): string {
    return this.full().result;
  }
  get observer(): Observer {
    return this.full().observer;
  }
  // Not parsed for these: a placeholder of the key reader holds where its line is (offset, bytes).
  get record(): LockEvent['record'] {
    return this.ev?.record;
  }
  get text(): string | undefined {
    return this.ev?.text;
  }
  get fields(): LockEvent['fields'] {
    return this.ev?.fields;
  }
}

/** A batch of a partition's merged input, with the lines folded out of it (PartitionFilter.fold). */
export type FoldedBatch = LockEvent[] & {
  /** Triples: before the item at index i, n lines of other partitions were folded, the highest of their times t. */
  folds?: number[];
};

/**
 * Whether one-input partition runs fold (PartitionFilter.fold) and prefold (PartitionFilter.prefold),
 * and the lines folded so far (`prefolded`: of them, those never made a placeholder): for tests,
 * which compare a run with and without.
 */
export const folding = { enabled: true, prefold: true, folded: 0, prefolded: 0 };

/** The key reader's look at each line of a batch (ByteLineBatch.looks and the columns beside it). */
export interface LookColumns {
  looks: Int32Array;
  lookTs: Float64Array;
  lookSource: Int32Array;
  lookSources: readonly string[];
}

/**
 * The key reader's look at every undecoded, non-blank line of `raw`, into the columns (each at
 * least `raw.lines.length` long): per line the partition (DECLINED_LOOK when the key reader
 * declines it, NOT_LOOKED for a blank or decoded line), and for a line it read, the time and the
 * source (an index into the returned list, -1 for the input's default). Shared by the reader of
 * --jobs (partition/feed.ts) and a one-input partition run (PartitionFilter.lookAhead).
 */
export function lookLines(part: PartitionFilter, profile: Profile, raw: ByteLineBatch, looks: Int32Array, lookTs: Float64Array, lookSource: Int32Array): string[] {
  const { lines, chunk, starts, ends } = raw;
  const sources: string[] = [];
  let ids: Map<string, number> | undefined;
  let last: string | undefined;
  let lastId = -1;
  // The whole chunk's lines in one pass where the profile can (the same answers as line by line).
  const keys = profile.partitionKeys;
  const batch = keys !== undefined && keys.lineReader === profile.partitionKey && keys.scan(chunk, starts, ends, lines.length, part.count) ? keys : undefined;
  for (let i = 0; i < lines.length; i++) {
    looks[i] = NOT_LOOKED;
    lookSource[i] = -1;
    if (lines[i] !== undefined) continue;
    const s = starts[i]!;
    const e = ends[i]!;
    if (isBlankBytes(chunk, s, e)) continue;
    const p = batch === undefined ? part.lookAt(profile, chunk, s, e) : part.lookIn(batch, chunk, i);
    looks[i] = p;
    if (p === DECLINED_LOOK) continue;
    lookTs[i] = part.look.ts;
    const source = part.look.source;
    if (source === undefined) continue;
    if (source !== last) {
      let id = (ids ??= new Map()).get(source);
      if (id === undefined) {
        ids.set(source, (id = sources.length));
        sources.push(source);
      }
      last = source;
      lastId = id;
    }
    lookSource[i] = lastId;
  }
  return sources;
}

/** Clock domains PartitionFilter.fold follows at most (far below the 10 000 of clock-went-backwards and the Witness): past it, nothing more is folded. */
export const FOLD_DOMAINS = 1000;

/** What fold() and prefold() keep per clock domain. */
interface FoldDomain {
  /** The highest time of the domain's items so far. */
  max: number;
  /** The index in the batch of the domain's last item when it may be folded (a placeholder not below max), else -1. */
  candidate: number;
}

export class PartitionFilter {
  readonly index: number;
  readonly count: number;
  /** Reads lines back (set by analyze): a placeholder's line, when a finding shows it. */
  lines: LineReader | undefined;
  /** The key reader's answer for the line being read. */
  readonly look: KeyLook = { keyStart: 0, keyEnd: 0, key: undefined, ts: 0, source: undefined };

  constructor(spec: PartitionSpec) {
    this.index = spec.index;
    this.count = spec.count;
  }

  owns(resource: string): boolean {
    return partitionOf(resource, this.count) === this.index;
  }

  /**
   * The partition of the line at bytes [s, e) by the profile's key reader (into `look`), or -1
   * when the key reader does not read it.
   */
  lookAt(profile: Profile, b: Uint8Array, s: number, e: number): number {
    const read = profile.partitionKey;
    if (read === undefined || !read(b, s, e, this.look)) return -1;
    return this.partitionOfLook(b);
  }

  /** lookAt for line k of the chunk `b` that `batch` scanned last (Profile.partitionKeys). */
  lookIn(batch: KeyBatchReader, b: Uint8Array, k: number): number {
    const p = batch.quick === undefined ? -1 : batch.quick(k, this.look);
    if (p >= 0) return p;
    if (!batch.read(k, this.look)) return -1;
    return this.partitionOfLook(b);
  }

  /** The partition of the key in `look`, read from `b`. */
  private partitionOfLook(b: Uint8Array): number {
    const l = this.look;
    return l.key === undefined ? partitionOfBytes(b, l.keyStart, l.keyEnd, this.count) : partitionOf(l.key, this.count);
  }

  /**
   * What the reader of `--jobs` looked at for this line already (partition/feed.ts): `p` as
   * lookAt returns it, and into `look` the time and source it read.
   */
  looked(p: number, ts: number, source: number, sources: readonly string[]): number {
    if (p >= 0) {
      this.look.ts = ts;
      this.look.source = source < 0 ? undefined : sources[source];
    }
    return p;
  }

  /** Whether toEvents prefolds (a one-input run that folds). */
  get prefolds(): boolean {
    return this.folding && folding.prefold;
  }

  /** Columns lookAhead() writes, reused from batch to batch (grown when a batch has more lines). */
  private columns: LookColumns | undefined;
  /** The marks prefold() returns, reused likewise. */
  private marks = new Uint8Array(0);

  /**
   * lookAt for every line of a batch at once, before any is parsed (a one-input partition run),
   * so that prefold() sees ahead; toEvents then reads each line's look from the columns. The
   * columns are valid until the next batch.
   */
  lookAhead(profile: Profile, raw: ByteLineBatch): LookColumns {
    const n = raw.lines.length;
    let c = this.columns;
    if (c === undefined || c.looks.length < n) {
      const size = Math.max(n, 2 * (c?.looks.length ?? 0));
      c = this.columns = { looks: new Int32Array(size), lookTs: new Float64Array(size), lookSource: new Int32Array(size), lookSources: [] };
    }
    c.lookSources = lookLines(this, profile, raw, c.looks, c.lookTs, c.lookSource);
    return c;
  }

  /**
   * fold() before the lines become items: of a batch's lines as the key reader looked at them
   * (the columns), the ones of other partitions that fold() would fold, marked (1) so that
   * toEvents only counts them, in their place, and never makes them placeholders. A line is
   * marked when the key reader read it for another partition, its time is not below the highest
   * time of its clock domain so far (fold()'s, then this batch's lines), it is not the domain's
   * first, and the next line of its domain in this batch is another partition's too, read by the
   * key reader, at a time not below it. Every line the key reader read is one item in the merge
   * with the time and source it read (an event, or a placeholder), so these are lines fold()
   * would fold, and what fold() then does with the rest is what it would have done: the same
   * items are kept. It stops at the first line whose item is not known before it is parsed (one
   * the key reader declined, or one decoded already); undefined when nothing is marked.
   */
  prefold(lines: ByteLineBatch['lines'], c: LookColumns, source: string): Uint8Array | undefined {
    const n = lines.length;
    const { looks, lookTs, lookSource, lookSources } = c;
    const domains = this.domains;
    let local: Map<string, FoldDomain> | undefined;
    let fresh = 0;
    let lastName: string | undefined;
    let last: FoldDomain | undefined;
    let marks: Uint8Array | undefined;
    for (let i = 0; i < n; i++) {
      const l = lines[i];
      if (l === null) continue; // over the cap: no item
      if (l !== undefined) break;
      const p = looks[i]!;
      if (p === NOT_LOOKED) continue; // blank: no item
      if (p === DECLINED_LOOK) break;
      const id = lookSource[i]!;
      const name = id < 0 ? source : lookSources[id]!;
      const t = lookTs[i]!;
      let d: FoldDomain;
      if (name === lastName) d = last!;
      else {
        let got = local?.get(name);
        if (got === undefined) {
          const known = domains.get(name);
          if (known === undefined) {
            // The domain's first line: kept (past FOLD_DOMAINS, fold() stops folding here).
            if (domains.size + ++fresh > FOLD_DOMAINS) break;
            (local ??= new Map()).set(name, (got = { max: t, candidate: -1 }));
            lastName = name;
            last = got;
            continue;
          }
          (local ??= new Map()).set(name, (got = { max: known.max, candidate: -1 }));
        }
        d = got;
        lastName = name;
        last = got;
      }
      const foreign = p !== this.index;
      const k = d.candidate;
      if (k !== -1) {
        if (foreign && t >= lookTs[k]!) {
          if (marks === undefined) {
            if (this.marks.length < n) this.marks = new Uint8Array(Math.max(n, 2 * this.marks.length));
            marks = this.marks;
            marks.fill(0, 0, n);
          }
          marks[k] = 1;
        }
        d.candidate = -1;
      }
      if (foreign && t >= d.max) d.candidate = i;
      if (t > d.max) d.max = t;
    }
    return marks;
  }

  /** lookAt for a line of text (a line of the string paths that became no event). */
  lookAtText(profile: Profile, text: string): number {
    if (profile.partitionKey === undefined) return -1;
    const b = Buffer.from(text, 'utf8');
    return this.lookAt(profile, b, 0, b.length);
  }

  /** Set by analyze when the run has one input (see fold()). */
  folding = false;
  private readonly domains = new Map<string, FoldDomain>();

  /**
   * The items of one batch of a one-input partition run (toEvents' output, in file order), with
   * the placeholders that cannot change what the partition sees folded out: a placeholder of
   * another partition's line whose time is not below the highest time of its clock domain so far,
   * and is not above the time of the next item of that domain, itself a placeholder (one that
   * every rule and the Witness see where it is). Such a line is no step back in
   * time, and its next item is none from it, so clock-went-backwards and the Witness see the same
   * steps (with the same lines on either side) and the same highest times without it. What else
   * the line does in the merge (a line counted in its place, its time in the input's and the
   * run's highest time) it still does: the batch says, per kept item, how many lines were folded
   * just before it and their highest time (FoldedBatch.folds). With several inputs nothing is
   * folded, so that the inputs interleave in the merge exactly as in a single run.
   *
   * The domain's first item, and the last of a batch (whose next item is not known yet), are
   * kept, so the rules meet every domain where a single run does.
   */
  fold(out: LockEvent[], early?: number[]): FoldedBatch {
    if (!this.folding && early === undefined) return out;
    const n = out.length;
    const domains = this.domains;
    let drop: Uint8Array | undefined;
    let lastSource: string | undefined;
    let last: FoldDomain | undefined;
    const touched: FoldDomain[] = [];
    let i = this.folding ? 0 : n;
    for (; i < n; i++) {
      const e = out[i]!;
      const t = e.ts;
      let d: FoldDomain | undefined;
      if (e.source === lastSource) d = last;
      else {
        d = domains.get(e.source);
        if (d === undefined) {
          if (domains.size >= FOLD_DOMAINS) {
            // Too many clock domains to follow: nothing more is folded (what was decided stands).
            this.folding = false;
            break;
          }
          domains.set(e.source, { max: t, candidate: -1 });
          lastSource = undefined;
          last = undefined;
          continue;
        }
        lastSource = e.source;
        last = d;
      }
      // Only a placeholder is surely seen next where the candidate was (an event of this partition
      // may pass the rules by: a resource over --max-resources, a lease-scoped event).
      const foreign = e instanceof Placeholder && !e.apply;
      const c = d!.candidate;
      if (c !== -1) {
        if (foreign && t >= out[c]!.ts) (drop ??= new Uint8Array(n))[c] = 1;
        d!.candidate = -1;
      }
      if (foreign && !e.extra && t >= d!.max) {
        if (d!.candidate === -1) touched.push(d!);
        d!.candidate = i;
      }
      if (t > d!.max) d!.max = t;
    }
    // A candidate's next item is in a later batch: it is kept.
    for (const d of touched) d.candidate = -1;
    if (drop === undefined && early === undefined) return out;
    const kept: FoldedBatch = [];
    const folds: number[] = [];
    let count = 0;
    let max = -Infinity;
    let prefolded = 0;
    // The lines prefold() marked: before item early[x], early[x + 1] lines, the highest of their times early[x + 2].
    let x = 0;
    let at = early === undefined ? -1 : early[0]!;
    for (let k = 0; ; k++) {
      while (k === at) {
        const m = early![x + 1]!;
        count += m;
        prefolded += m;
        if (early![x + 2]! > max) max = early![x + 2]!;
        x += 3;
        at = x < early!.length ? early![x]! : -1;
      }
      if (k === n) break;
      const e = out[k]!;
      if (drop !== undefined && drop[k] === 1) {
        count++;
        if (e.ts > max) max = e.ts;
        continue;
      }
      if (count > 0) {
        folds.push(kept.length, count, max);
        count = 0;
        max = -Infinity;
      }
      kept.push(e);
    }
    // A folded line's next item in its domain comes after it in this batch, and so does the next
    // item of a line prefold() marked: no fold is left over (feedPartition would count one at the end).
    if (count > 0) folds.push(kept.length, count, max);
    kept.folds = folds;
    folding.folded += n - kept.length + prefolded;
    folding.prefolded += prefolded;
    return kept;
  }

  /** A placeholder for the line the key reader just read (`look`). */
  fromLook(source: string, file: string, line: number, offset: number | undefined, bytes: number | undefined, extra: boolean, profile: Profile): Placeholder {
    return new Placeholder(this.look.ts, this.look.source ?? source, file, line, offset, bytes, extra, undefined, this, profile);
  }

  /** A placeholder for an event of another partition, parsed in full already (`apply`: a lease-scoped event every partition applies). */
  fromEvent(ev: LockEvent, profile: Profile, apply = false): Placeholder {
    return new Placeholder(ev.ts, ev.source, ev.file, ev.line, ev.offset, ev.bytes, false, ev, this, profile, apply);
  }

  /**
   * The event a placeholder's line is, read back and parsed as the profile parses it. A line that
   * is no event (an `extra` one, or a file changed since) gives what is known of it, typed as a
   * write with result `unreadable`; the partition's witness flags where that could matter.
   */
  reparse(p: Placeholder, profile: Profile): LockEvent {
    let ev: LockEvent | string | null | undefined;
    const text = p.offset !== undefined && p.bytes !== undefined && this.lines !== undefined ? this.lines(p.file, p.offset, p.bytes) : undefined;
    if (typeof text === 'string' && !p.extra) {
      const origin = { file: p.file, line: p.line, source: p.file, text, offset: p.offset, bytes: p.bytes };
      ev = profile.fastEvent?.(text, origin);
      if (ev === undefined) {
        try {
          const record = JSON.parse(text) as unknown;
          if (record !== null && typeof record === 'object' && !Array.isArray(record)) ev = profile.toEvent(record as Record<string, unknown>, origin);
        } catch {
          ev = undefined;
        }
      }
    }
    if (ev !== null && ev !== undefined && typeof ev === 'object') return ev;
    return {
      ts: p.ts,
      type: 'write',
      resource: '',
      result: 'unreadable',
      observer: 'worker',
      source: p.source,
      file: p.file,
      line: p.line,
      offset: p.offset,
      bytes: p.bytes,
    };
  }
}

/** Clock domains the witness follows at most (as clock-went-backwards does). */
const MAX_DOMAINS = 10_000;

interface Domain {
  source: string;
  file: string;
  max: number;
  /** The last line that a single run would not have given the rule (NaN: none), and the domain's highest time before it. */
  pendingTs: number;
  pendingMax: number;
  /** That line is a lease-scoped event (ITEM_SCOPED). */
  pendingScoped: boolean;
}

/** The kinds of items the witness is told of. */
export const ITEM_EVENT = 0;
/** A line of this partition that is no event (invalid or ignored) but keeps its place in the merge. */
export const ITEM_EXTRA = 1;
/** A copy (at-least-once delivery) of this partition's: in the merge, not analysed. */
export const ITEM_COPY = 2;
/**
 * A lease-scoped event (a session expiry naming no resource), this partition's or applied here:
 * clock-went-backwards sees it only through its copies on the resources holding its lease, so
 * here under this partition's first holder, or not at all when none is here, where a single run
 * sees it under the first holder of all partitions (or not at all when none holds it).
 */
export const ITEM_SCOPED = 3;

/**
 * Watches one partition's merged input for the cases where a partition run could differ from a
 * single run (README "Scaling out"), and says so. Every partition places the same lines in the
 * merge (its own events, and placeholders for every line the others may own), so the partitions
 * agree with each other; a single run differs from them only where a line of this partition that
 * is no event (ITEM_EXTRA) or a copy (ITEM_COPY) could change what it sees:
 *
 * - the merge order, when such a line raises the highest time of its input above the next line
 *   of that input (only with several inputs);
 * - clock-went-backwards, when such a line, or the gap it leaves, is a step back of more than the
 *   clock-skew bound in its clock domain. A lease-scoped event (ITEM_SCOPED) is watched alike: the
 *   rule may see it in one run and not in another, or file a step at it under another resource.
 */
export class Witness {
  private readonly highest: Float64Array;
  private readonly raised: Float64Array;
  private readonly domains = new Map<string, Domain>();
  private last: Domain | undefined;
  private full = false;

  constructor(
    private readonly inputs: number,
    private readonly skewMs: number,
    /** clock-went-backwards is run. */
    private readonly clock: boolean,
    private readonly note: (reason: string) => void,
  ) {
    this.highest = new Float64Array(inputs).fill(-Infinity);
    this.raised = new Float64Array(inputs).fill(NaN);
  }

  item(ev: LockEvent, from: number, kind: number): void {
    const t = ev.ts;
    if (this.inputs > 1) {
      const r = this.raised[from]!;
      if (r === r) {
        if (t < r) this.note('a line that is no event raised the time of its input above the next line: with several inputs, a single run could merge them in another order');
        this.raised[from] = NaN;
      }
      if (kind === ITEM_EXTRA && t >= this.highest[from]!) this.raised[from] = t;
      if (t > this.highest[from]!) this.highest[from] = t;
    }
    if (!this.clock || this.full) return;
    let d = this.last;
    if (d === undefined || d.file !== ev.file || d.source !== ev.source) {
      const key = `${ev.source}\u0000${ev.file}`;
      d = this.domains.get(key);
      if (d === undefined) {
        if (this.domains.size >= MAX_DOMAINS) {
          this.full = true;
          this.note(`more than ${MAX_DOMAINS} clock domains: clock-went-backwards could see them otherwise in a single run`);
          return;
        }
        this.domains.set(key, (d = { source: ev.source, file: ev.file, max: -Infinity, pendingTs: NaN, pendingMax: NaN, pendingScoped: false }));
      }
      this.last = d;
    }
    if (d.pendingTs === d.pendingTs) {
      if (Math.max(d.pendingMax, d.pendingTs) - t > this.skewMs) this.note(d.pendingScoped ? 'a lease-scoped event (naming no resource) stands between two lines of a clock domain that go back in time: clock-went-backwards could see another step in a single run' : 'a line that is no event, or a copy, stands between two lines of a clock domain that go back in time: clock-went-backwards could see another step in a single run');
      d.pendingTs = NaN;
    }
    if (kind !== ITEM_EVENT) {
      const scoped = kind === ITEM_SCOPED;
      if (d.max - t > this.skewMs) this.note(scoped ? 'a lease-scoped event (naming no resource) goes back in time in its clock domain: clock-went-backwards could see the step under another resource, or another step, in a single run' : 'a line that is no event, or a copy, goes back in time in its clock domain: clock-went-backwards could see another step in a single run');
      d.pendingTs = t;
      d.pendingMax = d.max;
      d.pendingScoped = scoped;
    }
    if (t > d.max) d.max = t;
  }
}
