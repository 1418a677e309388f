/** The library API: the whole pipeline from inputs to a report. */
import { createHash } from 'node:crypto';
import { access, stat } from 'node:fs/promises';
import { constants, type Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Engine, DEFAULT_CLOCK_SKEW_MS, toEvidence } from './engine.js';
import { DUPLICATE_WINDOW_MS, RecentEvents } from './ingest/duplicates.js';
import { mergeByTime } from './ingest/merge.js';
import { fileSource, InputError, reasonOf, streamSource, type InputSource } from './ingest/open.js';
import { count, InputStats, type InputPolicy } from './ingest/records.js';
import { parseFed, parseSource, type FedItem } from './ingest/parse-source.js';
import { isLeaseScoped, type LineReader, type LockEvent } from './model/event.js';
import { canReadBack, LineStore } from './ingest/readback.js';
import type { FileSummary, Finding, Problem, Report, ReportView, ResourceSummaries, TimelineEvent } from './model/report.js';
import { EventCapture } from './timeline/capture.js';
import { canonical } from './profiles/canonical.js';
import type { Profile } from './profiles/types.js';
import { rules as allRules } from './rules/index.js';
import type { Rule } from './rules/types.js';
import { VERSION } from './version.js';
import { checkAnalyzeOptions } from './model/options.js';
import { readinessDigest, verdictReasons } from './verdict.js';
import { folding, ITEM_COPY, ITEM_EVENT, ITEM_EXTRA, ITEM_SCOPED, PartitionFilter, Placeholder, Witness, type FoldedBatch, type PartitionSpec } from './ingest/partition.js';
import { MAX_PARTITIONS } from './partition/hash.js';
import { autoJobs } from './partition/auto.js';
import { maxWorkers, WORKER_MIN_BYTES } from './ingest/worker-limits.js';
import { DEFAULT_MAX_LEASE_HOLDERS } from './timeline/lease-holders.js';
// Loaded when a run needs them (start-up: a plain run loads neither the mapping machinery, nor
// worker threads, nor the partition code).
type Threaded = typeof import('./ingest/threaded.js');
import { OptionError } from './model/options.js';
import { DEFAULT_MAX_FINDINGS, DEFAULT_MAX_RESOURCES, DEFAULT_BUSY_THRESHOLD, DEFAULT_BUSY_WINDOW_MS } from './engine.js';
import { DEFAULT_MAX_PROBLEMS } from './ingest/records.js';
import { DEFAULT_MAX_LINE_BYTES } from './ingest/lines.js';

export interface AnalyzeOptions {
  /** Paths to read; `-` is stdin. Gzip is detected by its magic bytes. */
  files?: readonly string[];
  /** Readable streams (or async iterables of bytes/strings), each with the name used in `file:line`. */
  streams?: readonly { name: string; stream: NodeJS.ReadableStream | AsyncIterable<Buffer | string> }[];
  /** Records already parsed, in canonical form (source name `events`, line = index + 1). */
  events?: readonly Record<string, unknown>[];
  /** Defaults to the canonical profile; see getProfile() and loadMapping(). */
  profile?: Profile;
  /** Rule ids to run (default: all). */
  rules?: readonly string[];
  /** Stop at the first invalid line (throws StrictInputError). */
  strict?: boolean;
  /** Throw StrictInputError once more than this many lines are invalid. */
  maxInvalid?: number;
  /** Problems listed in the report (all are counted). Default 100. */
  maxProblems?: number;
  /** Longest line read, in bytes. Default 1 MiB. */
  maxLineBytes?: number;
  /** Clock-skew bound between sources, ms. Default 250. */
  clockSkewMs?: number;
  /** Findings listed in the report. Default 10000. */
  maxFindings?: number;
  /** Resources tracked at most (default 1 000 000); see Report.summary.untrackedEvents. */
  maxResources?: number;
  /** Lease–resource pairs indexed for lease-scoped events, with a profile that gives them (default 200 000). */
  maxLeaseHolders?: number;
  /** busy-rate-rising window in ms (default 60000), threshold 0..1 (default 0.25). */
  busyWindowMs?: number;
  busyThreshold?: number;
  /** Called as soon as a finding is detected. */
  onFinding?: (finding: Finding) => void;
  /**
   * Include event histories (`report.timelines`) for pictures: of the resources with findings
   * (or `all` of them, or the named `resources`), at most `maxResources` (default 50), each of at
   * most `perResource` events (default 1000).
   */
  timelines?: { all?: boolean; resources?: readonly string[]; maxResources?: number; perResource?: number };
  /** Called for every invalid line. */
  onProblem?: (problem: Problem) => void;
  /** Called after each chunk of input is read. */
  onProgress?: (progress: ProgressInfo) => void;
  /**
   * Parse input files on worker threads beside the analysis: `on` for every file, `off` never,
   * `auto` (default) for files of 8 MiB or more when the machine has at least 3 cores (on 2 cores
   * the threads and the garbage collector compete and the gain is small). At most one worker per
   * core beside the main thread's, the largest files first; stdin, streams and profiles without a
   * recipe are parsed on the main thread. Results are the same either way.
   */
  workers?: 'auto' | 'on' | 'off';
  /**
   * At-least-once delivery: an event identical to one read before (same canonical fields and
   * given source, see README "Reading input") is counted in `duplicates` and not analysed again,
   * when it comes within this many ms of the newest timestamp read (the events of that window are
   * remembered, no more). Default: the clock-skew bound, and at least 1000.
   */
  duplicateWindowMs?: number;
  /** Count copies of events as duplicates (default true); false analyses every copy. */
  dedupe?: boolean;
  /** Called when an input is skipped because it names a file already given (same device and inode). */
  onNote?: (note: string) => void;
  /**
   * Analyse only partition `index` of `count` (README "Scaling out"): the resources whose key
   * hashes to it. The report has `partition` (what `stalewrite merge`, mergeReports(), needs) and
   * counts the other partitions' lines in `otherPartitions`. Files are then parsed on this thread
   * (`workers` is not used).
   */
  partition?: PartitionSpec;
  /**
   * Analyse on this many worker threads, each one partition of the resources (README "Scaling
   * out"), their reports merged in memory into the report one thread writes (should the merge not
   * be exactly it, the input is analysed again on one thread). `auto` (default): every core, at most
   * 8, for files of 64 MiB (JOBS_MIN_BYTES) or more in all on 3 or more cores, and one thread for less, on 2 cores, for stdin and
   * streams, for profiles without a recipe, with `strict` or `maxInvalid` (they stop at the first
   * invalid line of the whole input), with `partition`, and for live output (`onFinding`). A number
   * above 1 asks for that many jobs where they can run (files, a recipe, no strict, no maxInvalid);
   * with `onFinding`, each finding is passed on as soon as its partition has it (possibly past
   * `maxFindings`, and in another order than the report's).
   */
  jobs?: number | 'auto';
}

/** Every option analyze() takes, so that one it does not know (a typo, or a removed one such as `ringSize`) is refused, not ignored. */
const OPTION_NAMES: readonly string[] = Object.keys({
  files: 1, streams: 1, events: 1, profile: 1, rules: 1, strict: 1, maxInvalid: 1, maxProblems: 1, maxLineBytes: 1, clockSkewMs: 1, maxFindings: 1, maxResources: 1,
  maxLeaseHolders: 1, busyWindowMs: 1, busyThreshold: 1, onFinding: 1, timelines: 1, onProblem: 1, onProgress: 1, workers: 1, duplicateWindowMs: 1, dedupe: 1, onNote: 1,
  partition: 1, jobs: 1,
} satisfies Record<keyof AnalyzeOptions, 1>);

/** More file inputs than this are read by reopening each plain file per chunk (see ingest/open.ts). */
export const MANY_FILES = 32;

/** A finding's text as a live stream writes it, digested (SHA-256): what a second analysis compares it by. */
function digestOf(f: Finding): string {
  return createHash('sha256').update(JSON.stringify(f)).digest('base64');
}

export interface ProgressInfo {
  /** The input being read. */
  file: string;
  /** Bytes read so far from all inputs (before decompression counts as read). */
  bytes: number;
  /** Lines read so far from all inputs. */
  lines: number;
}

/** What a job of `--jobs` gives its analyze() beside the options (partition/job-worker.ts): not library API. */
export interface JobHooks {
  /** The lines of a plain input as the main thread's reader hands them out (partition/feed.ts), or undefined to read it here. */
  fed?: (path: string) => AsyncIterable<FedItem | { self: true }> | undefined;
}

export async function analyze(options: AnalyzeOptions, hooks?: JobHooks): Promise<Report> {
  // Not `made`: `resources` is engine.resources(), an array (or a merge's).
  return (await run(options, hooks, false)) as Report;
}

/**
 * The same analysis, its report's `resources` made one at a time as they are walked
 * (Engine.resourceList()): what the CLI writes, so that a million summaries are never held at
 * once. A run on several jobs (merged in memory) has them all, as an array.
 */
export async function analyzeView(options: AnalyzeOptions): Promise<ReportView> {
  return run(options, undefined, true);
}

/** A job's analysis of its partition (partition/job-worker.ts), its summaries made as they are walked: not library API. */
export async function analyzeJob(options: AnalyzeOptions, hooks: JobHooks): Promise<ReportView> {
  return run(options, hooks, true);
}

async function run(options: AnalyzeOptions, hooks: JobHooks | undefined, made: boolean): Promise<ReportView> {
  checkAnalyzeOptions(options as unknown as Record<string, unknown>, OPTION_NAMES);
  checkPartition(options.partition);
  const jobs = await jobsFor(options);
  if (jobs > 1) {
    const live = options.onFinding;
    // What the jobs streamed: each finding's id and a digest of its text (a line is never taken back).
    const streamed = live === undefined ? undefined : new Map<string, string>();
    const merged = await inJobs(live === undefined ? options : { ...options, onFinding: (f) => (streamed!.set(f.id, digestOf(f)), live(f)) }, jobs, made);
    if (merged.partitions === undefined) return merged;
    // Not exactly one thread's report (input out of timestamp order, a global bound): analysed
    // again on one, whose report this is. A live stream gets that run's findings it has not had as
    // they are: new ones, and new versions of ones it had (the same id: a later line replaces an
    // earlier one); the report names in `withdrawn` the ids it had that this run does not have.
    const onFinding = live === undefined ? undefined : (f: Finding) => void (streamed!.get(f.id) === digestOf(f) || live(f));
    const again = await run({ ...options, jobs: 1, onFinding, onProblem: undefined, onNote: undefined }, undefined, made);
    if (streamed === undefined || streamed.size === 0) return again;
    const kept = new Set(again.findings.map((f) => f.id));
    const withdrawn = [...streamed.keys()].filter((id) => !kept.has(id));
    return withdrawn.length === 0 ? again : { ...again, withdrawn };
  }
  const rules = selectRules(options.rules);
  const profile = options.profile ?? canonical;
  const part = options.partition === undefined ? undefined : new PartitionFilter(options.partition);
  const policy: InputPolicy = {
    strict: options.strict,
    maxInvalid: options.maxInvalid,
    maxProblems: options.maxProblems,
    onProblem: options.onProblem,
    partitioned: part !== undefined,
  };
  const stats = new InputStats(policy);
  const progress = options.onProgress === undefined ? undefined : { info: { file: '', bytes: 0, lines: 0 }, report: options.onProgress };
  const sources: AsyncIterable<LockEvent[]>[] = [];
  /** The summary of each source, by index in `sources` (where its duplicates are counted). */
  const summaries: FileSummary[] = [];
  // Each path is checked (and its size read) once, before any reading starts. A path naming a
  // file already given (`f`, `./f`, an absolute path, a symlink: same device and inode) is not
  // read again: it gets an entry with `sameAs` and zero counts.
  const files: string[] = [];
  const sizes: (number | undefined)[] = [];
  const fileStats: (Stats | undefined)[] = [];
  const seenFiles = new Map<string, string>();
  const sameAs = new Map<number, string>();
  // Input that can go quiet (stdin, a pipe, a stream): live findings are then flushed by the clock.
  let live = (options.streams?.length ?? 0) > 0;
  /** Each path's size as given (for a partition's report: the merge checks the inputs are the same). */
  const givenSizes = new Map<string, number>();
  for (const path of options.files ?? []) {
    if (path === '-') {
      files.push(path);
      sizes.push(undefined);
      fileStats.push(undefined);
      live = true;
      continue;
    }
    const st = await checkFile(path);
    if (st.isFile()) givenSizes.set(path, st.size);
    else live = true;
    const id = `${st.dev}:${st.ino}`;
    const first = seenFiles.get(id);
    if (first !== undefined) {
      sameAs.set(files.length + sameAs.size, first);
      continue;
    }
    seenFiles.set(id, path);
    files.push(path);
    sizes.push(st.size);
    fileStats.push(st);
  }
  const threaded = await filesForWorkers(sizes, profile, part !== undefined ? 'off' : (options.workers ?? 'auto'));
  const lineStore = new LineStore();
  if (part !== undefined) part.lines = lineStore.read;
  const reopen = files.length > MANY_FILES;
  // Entries in the order the paths were given (a skipped path's entry where it was named).
  let next = 0;
  (options.files ?? []).forEach((given, k) => {
    const first = sameAs.get(k);
    if (first !== undefined) {
      const entry = stats.addFile(given);
      entry.sameAs = first;
      options.onNote?.(`${given} is the same file as ${first}: read once`);
      return;
    }
    const i = next++;
    const path = files[i]!;
    const recipe = profile.recipe;
    const input = fileSource(path, { reopen });
    const summary = stats.addFile(input.name);
    summaries.push(summary);
    if (threaded.has(i) && recipe !== undefined) sources.push(workerSource({ path, name: path, recipe, maxLineBytes: options.maxLineBytes }, stats, summary, progress));
    else {
      const st = fileStats[i];
      const byReference = st !== undefined && lineStore.register(path, st);
      const fed = part === undefined ? undefined : hooks?.fed?.(path);
      // Input that can go quiet or trickle: its first lines wait at most QUIET_FLUSH_MS for the wrapper's decision.
      const quietMs = st === undefined || !st.isFile() ? QUIET_FLUSH_MS : undefined;
      const own = () => sourceEvents(input, profile, stats, summary, options.maxLineBytes, progress, byReference, part, quietMs);
      sources.push(fed === undefined ? own() : fedEvents(fed, own, input.name, profile, stats, summary, byReference, part!));
    }
  });
  for (const s of options.streams ?? []) {
    const summary = stats.addFile(s.name);
    summaries.push(summary);
    sources.push(sourceEvents(streamSource(s.name, s.stream), profile, stats, summary, options.maxLineBytes, progress, false, part, QUIET_FLUSH_MS));
  }
  if (options.events !== undefined) {
    const summary = stats.addFile('events');
    summaries.push(summary);
    sources.push(recordEvents(options.events, profile, stats, summary, part));
  }
  if (sources.length === 0) throw new InputError('nothing to analyze: give files, streams or events');
  // One input: the placeholders that change nothing are folded (PartitionFilter.fold); with several, each keeps its place in the merge.
  if (part !== undefined) part.folding = folding.enabled && sources.length === 1;

  // The lock service each input's profile declares, by the name its events carry as `file`.
  const byFile = new Map(summaries.map((s) => [s.file, s]));
  const capture = options.timelines === undefined ? undefined : new EventCapture({ resources: options.timelines.resources, perResource: options.timelines.perResource });
  const engine = new Engine({
    capture,
    rules,
    clockSkewMs: options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS,
    maxFindings: options.maxFindings,
    busyWindowMs: options.busyWindowMs,
    busyThreshold: options.busyThreshold,
    maxResources: options.maxResources,
    onFinding: options.onFinding,
    lines: lineStore.read,
    partition: part !== undefined,
    serviceOf: (file) => byFile.get(file)?.service,
    leaseScoped: profile.leaseScoped === true,
    maxLeaseHolders: options.maxLeaseHolders,
  });
  const clockSkewMs = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const recent = options.dedupe === false ? undefined : new RecentEvents(options.duplicateWindowMs ?? Math.max(clockSkewMs, DUPLICATE_WINDOW_MS), undefined, undefined, lineStore.read);
  // Stream time stops when live input goes quiet: a finding waiting for worker views would wait
  // for the next line. After QUIET_FLUSH_MS without input, waiting findings are emitted. Only for
  // live output from input that can go quiet, so that a run over files stays deterministic.
  let lastInput = Date.now();
  const quiet =
    live && options.onFinding !== undefined
      ? setInterval(() => {
          if (engine.waitingFindings > 0 && Date.now() - lastInput >= QUIET_FLUSH_MS) engine.flush();
        }, QUIET_FLUSH_MS / 4)
      : undefined;
  quiet?.unref();
  // The files opened for reading lines back are closed however the analysis ends.
  try {
    try {
      const onInput = () => (lastInput = Date.now());
      if (part === undefined) await feed(engine, mergeByTime(sources), recent, summaries, onInput);
      else {
        const witness = new Witness(sources.length, clockSkewMs, rules.some((r) => r.onForeign !== undefined), (reason) => engine.noteInexact(reason));
        await feedPartition(engine, mergeByTime(sources), recent, summaries, onInput, witness, sources.length);
      }
    } finally {
      if (quiet !== undefined) clearInterval(quiet);
    }
    engine.finish();
    const report = buildReport(engine, stats, made ? engine.resourceList() : engine.resources());
    const uncaptured: string[] = [];
    if (capture !== undefined) addTimelines(report, capture, options.timelines!, lineStore.read, await import('./partition/merge.js'), uncaptured);
    if (part !== undefined) {
      report.partition = {
        index: part.index,
        count: part.count,
        hash: 'fnv1a64-utf8',
        options: fingerprint(options, rules, profile, clockSkewMs),
        inputs: [
          ...(options.files ?? []).map((name) => ({ name, size: name === '-' ? null : (givenSizes.get(name) ?? null) })),
          ...(options.streams ?? []).map((st) => ({ name: st.name, size: null })),
          ...(options.events !== undefined ? [{ name: 'events', size: options.events.length }] : []),
        ],
        order: report.findings.map((f) => [...(engine.orderOf(f) ?? [])]),
        firstByRule: Object.fromEntries(engine.firstByRule),
        held: { resources: engine.resourceCount, operations: engine.operations.made, captured: capture?.size ?? 0, copies: recent?.peak ?? 0, copyChars: recent?.peakChars ?? 0, leaseHolders: engine.holdersPeak },
        leaseScoped: { events: engine.leaseScopedEvents, applied: engine.leaseScopedApplied },
        inexact: [...engine.inexact].map(([reason, count]) => ({ reason, count })),
      };
      if (capture !== undefined) report.partition.uncaptured = uncaptured;
    }
    return report;
  } finally {
    lineStore.close();
  }
}

/** How many jobs a run takes (see AnalyzeOptions.jobs). */
async function jobsFor(options: AnalyzeOptions): Promise<number> {
  const asked = options.jobs ?? 'auto';
  if (asked !== 'auto' && !(Number.isInteger(asked) && asked >= 1 && asked <= MAX_PARTITIONS)) throw new OptionError('jobs', `jobs must be "auto" or a whole number from 1 to ${MAX_PARTITIONS} (got ${String(asked)})`);
  if (asked === 1 || options.partition !== undefined) return 1;
  const files = options.files ?? [];
  const why =
    (options.streams?.length ?? 0) > 0 || options.events !== undefined || files.length === 0
      ? 'jobs read files: streams and events are analysed on one thread'
      : files.includes('-')
        ? 'jobs read files: stdin ("-") is read by one thread'
        : (options.profile ?? canonical).recipe === undefined
          ? 'this profile cannot be rebuilt on a worker thread (it has no recipe)'
          : options.strict === true || options.maxInvalid !== undefined
            ? 'strict and maxInvalid stop at the first invalid line of the whole input, which one thread reads'
            : undefined;
  if (why !== undefined) {
    if (asked === 'auto') return 1;
    throw new OptionError('jobs', `jobs ${asked}: ${why}; leave jobs out, or give 1`);
  }
  if (asked !== 'auto') return asked;
  if (options.onFinding !== undefined) return 1;
  let bytes = 0;
  for (const f of files) bytes += (await checkFile(f)).size;
  return autoJobs(bytes);
}

/** The run on `jobs` worker threads, one partition each (partition/jobs.ts). */
async function inJobs(options: AnalyzeOptions, jobs: number, made: boolean): Promise<ReportView> {
  const { files, profile, onFinding, onProblem, onProgress, onNote, streams: _s, events: _e, partition: _p, jobs: _j, workers: _w, ...plain } = options;
  // The plain files (read by reference, as a job's analyze() tells them, the same file named twice
  // once) are read once, on this thread, and their lines handed out (partition/feed.ts).
  const fed: string[] = [];
  const seen = new Set<string>();
  let unique = 0;
  for (const f of files!) {
    const st = await checkFile(f);
    const id = `${st.dev}:${st.ino}`;
    if (seen.has(id)) continue;
    seen.add(id);
    unique++;
    if (canReadBack(f, st)) fed.push(f);
  }
  const recipe = (profile ?? canonical).recipe!;
  const [{ runJobs }, { rebuildProfile }] = await Promise.all([import('./partition/jobs.js'), import('./profiles/index.js')]);
  return runJobs(
    { files: files!, recipe, options: plain as Record<string, unknown>, findings: onFinding !== undefined, problems: onProblem !== undefined, progress: onProgress !== undefined, notes: onNote !== undefined, fed },
    jobs,
    { onFinding, onProblem, onProgress, onNote },
    { profile: rebuildProfile(recipe), maxLineBytes: options.maxLineBytes, reopen: unique > MANY_FILES },
    made,
  );
}

/** Live input quiet this long (ms) emits the findings that wait for worker views (see Engine). */
export const QUIET_FLUSH_MS = 500;

async function feed(engine: Engine, merged: ReturnType<typeof mergeByTime>, recent: RecentEvents | undefined, summaries: FileSummary[], onInput: () => void): Promise<void> {
  for await (const { events, from } of merged) {
    onInput();
    if (recent === undefined) {
      for (let i = 0; i < events.length; i++) engine.push(events[i]!);
      continue;
    }
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      if (recent.seen(ev)) {
        // A copy (at-least-once delivery): counted once, analysed once.
        const summary = summaries[typeof from === 'number' ? from : from[i]!]!;
        summary.events--;
        summary.duplicates++;
        continue;
      }
      engine.push(ev);
    }
  }
}

/**
 * A partition run's feed: every item of the merge keeps its place (this partition's events, and
 * placeholders for the lines the other partitions own, see ingest/partition.ts). Each event is
 * pushed with its place in the merged input, so that the merge of the partitions' reports can
 * order their findings as a single run would.
 */
async function feedPartition(engine: Engine, merged: ReturnType<typeof mergeByTime>, recent: RecentEvents | undefined, summaries: FileSummary[], onInput: () => void, witness: Witness, inputs: number): Promise<void> {
  const highest = new Float64Array(inputs).fill(-Infinity);
  const seq = new Float64Array(inputs);
  let newest = -Infinity;
  for await (const { events, from } of merged) {
    onInput();
    // Lines folded out of the batch (PartitionFilter.fold, one input only): counted in their place.
    const folds = (events as FoldedBatch).folds;
    let f = 0;
    let foldAt = folds === undefined || folds.length === 0 ? -1 : folds[0]!;
    const unfold = (src: number): void => {
      const n = folds![f + 1]!;
      const max = folds![f + 2]!;
      seq[src]! += n;
      if (max > highest[src]!) highest[src] = max;
      if (max > newest) newest = max;
      engine.skipForeign(n, max);
      f += 3;
      foldAt = f < folds!.length ? folds![f]! : -1;
    };
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      const src = typeof from === 'number' ? from : from[i]!;
      if (i === foldAt) unfold(src);
      const t = ev.ts;
      if (t > highest[src]!) highest[src] = t;
      const at = ++seq[src]!;
      if (t > newest) newest = t;
      // A lease-scoped event another partition counts: applied here as it is, but not counted.
      let shared = false;
      if (ev instanceof Placeholder) {
        if (!ev.apply) {
          witness.item(ev, src, ev.extra ? ITEM_EXTRA : ITEM_EVENT);
          engine.pushForeign(ev);
          continue;
        }
        shared = true;
      }
      const own = shared ? (ev as Placeholder).full() : ev;
      if (recent !== undefined && recent.seen(own)) {
        const summary = summaries[src]!;
        if (!shared) {
          summary.events--;
          summary.duplicates++;
        }
        // A single run's window ends at the newest time of every partition's lines.
        if (t < newest - recent.window) engine.noteInexact('a copy was recognised that arrived further behind the newest line than the duplicate window: a single run may not have recognised it');
        witness.item(own, src, ITEM_COPY);
        engine.pushForeign(own);
        continue;
      }
      witness.item(own, src, shared || isLeaseScoped(own) ? ITEM_SCOPED : ITEM_EVENT);
      engine.atTs = highest[src]!;
      engine.atFrom = src;
      engine.atSeq = at;
      engine.push(own);
    }
    // Folds come with one input only (`from` is its index); none is left after the last item, but one would be counted here.
    if (foldAt === events.length && typeof from === 'number') unfold(from);
  }
}

/** The options that change a partition's results, resolved to their values: every partition of one run must have the same. */
function fingerprint(options: AnalyzeOptions, rules: readonly Rule[], profile: Profile, clockSkewMs: number): Record<string, unknown> {
  return {
    profile: profile.recipe ?? profile.name,
    rules: rules.map((r) => r.meta.id),
    strict: options.strict ?? false,
    maxInvalid: options.maxInvalid ?? null,
    maxProblems: options.maxProblems ?? DEFAULT_MAX_PROBLEMS,
    maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
    clockSkewMs,
    maxFindings: options.maxFindings ?? DEFAULT_MAX_FINDINGS,
    maxResources: options.maxResources ?? DEFAULT_MAX_RESOURCES,
    busyWindowMs: options.busyWindowMs ?? DEFAULT_BUSY_WINDOW_MS,
    busyThreshold: options.busyThreshold ?? DEFAULT_BUSY_THRESHOLD,
    dedupe: options.dedupe !== false,
    maxLeaseHolders: options.maxLeaseHolders ?? DEFAULT_MAX_LEASE_HOLDERS,
    duplicateWindowMs: options.duplicateWindowMs ?? Math.max(clockSkewMs, DUPLICATE_WINDOW_MS),
    timelines: options.timelines === undefined ? null : { all: options.timelines.all ?? false, resources: options.timelines.resources ?? null, maxResources: options.timelines.maxResources ?? 50, perResource: options.timelines.perResource ?? 1000 },
  };
}

function checkPartition(p: PartitionSpec | undefined): void {
  if (p === undefined) return;
  if (p === null || typeof p !== 'object') throw new OptionError('partition', 'partition must be { index, count }');
  const { index, count } = p;
  if (!Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS) throw new OptionError('partition', `partition.count must be a whole number from 1 to ${MAX_PARTITIONS} (got ${String(count)})`);
  if (!Number.isInteger(index) || index < 0 || index >= count) throw new OptionError('partition', `partition.index must be a whole number from 0 to ${count - 1} (got ${String(index)})`);
}

/** Attach captured histories, marking the events that findings point at. */
function addTimelines(report: ReportView, capture: EventCapture, opts: NonNullable<AnalyzeOptions['timelines']>, lines: LineReader, { findingPointers, pointAt, drawnResources }: typeof import('./partition/merge.js'), uncapturedNames?: string[]): void {
  const pointers = findingPointers(report.findings);
  const max = opts.maxResources ?? 50;
  const { drawn, wanted } = drawnResources(report.resources, Boolean(opts.all), opts.resources, max);
  report.timelines = [];
  let uncaptured = 0;
  for (const r of drawn) {
    const h = capture.history(r.resource);
    if (h === undefined) {
      uncaptured++; // past the capture's total cap before it had a finding: not drawn, but counted
      uncapturedNames?.push(r.resource);
      continue;
    }
    let highest: bigint | undefined;
    const resourceLogs = h.events.some((e) => e.type === 'write' && e.observer === 'resource');
    const events = h.events.map((e) => {
      const item: TimelineEvent = { ...toEvidence({ event: e, role: '' }, lines) };
      delete (item as { role?: string }).role;
      if (e.type === 'write' && e.result === 'accepted' && e.fenceToken !== undefined && (e.observer !== 'worker' || !resourceLogs)) {
        if (highest === undefined || e.fenceToken > highest) highest = e.fenceToken;
      }
      if (highest !== undefined) item.highestAccepted = highest.toString();
      pointAt(item, pointers);
      return item;
    });
    report.timelines.push({ resource: r.resource, readiness: r.readiness, events, omitted: h.omitted });
  }
  report.timelinesOmitted = Math.max(0, wanted - max) + uncaptured;
}

export function selectRules(ids: readonly string[] | undefined): readonly Rule[] {
  if (ids === undefined) return allRules;
  const known = new Map(allRules.map((r) => [r.meta.id, r]));
  return ids.map((id) => {
    const r = known.get(id);
    if (r === undefined) throw new InputError(`unknown rule "${id}"; known rules: ${[...known.keys()].join(', ')}`);
    return r;
  });
}

/** A clear InputError for a missing, unreadable or directory path, before any reading starts; else its size in bytes. */
export async function checkReadable(path: string): Promise<number> {
  return (await checkFile(path)).size;
}

/** checkReadable, with the file's stat (device and inode tell the same file named twice). */
async function checkFile(path: string): Promise<Stats> {
  try {
    const st = await stat(path);
    if (st.isDirectory()) throw new InputError(`cannot read ${path}: it is a directory`);
    await access(path, constants.R_OK);
    return st;
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
  }
}

interface ProgressState {
  info: ProgressInfo;
  report: (p: ProgressInfo) => void;
}

async function* counted(chunks: AsyncIterable<Buffer>, name: string, progress: ProgressState): AsyncGenerator<Buffer> {
  for await (const c of chunks) {
    progress.info.bytes += c.length;
    progress.info.file = name;
    yield c;
  }
}

/** Which of the files (by index; `undefined` size: stdin) a worker thread parses. */
async function filesForWorkers(sizes: readonly (number | undefined)[], profile: Profile, mode: 'auto' | 'on' | 'off'): Promise<Set<number>> {
  const chosen = new Set<number>();
  if (mode === 'off' || profile.recipe === undefined || (mode === 'auto' && availableParallelism() < 3)) return chosen;
  // A profile whose declared lock service its recipe does not carry (`{ ...canonical, service }`)
  // would lose it on a worker thread: such a profile is run on the main thread.
  const recipeService = profile.recipe.kind === 'mapping' ? (profile.recipe.spec as { service?: string }).service : undefined;
  if (profile.service !== recipeService) return chosen;
  const candidates: { i: number; size: number }[] = [];
  sizes.forEach((size, i) => {
    if (size !== undefined && (mode === 'on' || size >= WORKER_MIN_BYTES)) candidates.push({ i, size });
  });
  candidates.sort((a, b) => b.size - a.size || a.i - b.i);
  for (const { i } of candidates.slice(0, maxWorkers())) chosen.add(i);
  return chosen;
}

async function* workerSource(job: Parameters<Threaded['workerEvents']>[0], stats: InputStats, summary: FileSummary, progress?: ProgressState): AsyncGenerator<LockEvent[]> {
  const onBatch =
    progress === undefined
      ? undefined
      : (lines: number, bytes: number) => {
          progress.info.file = job.name;
          progress.info.bytes += bytes;
          progress.info.lines += lines;
          progress.report(progress.info);
        };
  const { workerEvents } = await import('./ingest/threaded.js');
  yield* workerEvents(job, stats, summary, onBatch);
}

async function* sourceEvents(input: InputSource, profile: Profile, stats: InputStats, summary: FileSummary, maxLineBytes: number | undefined, progress?: ProgressState, byReference = false, part?: PartitionFilter, quietMs?: number): AsyncGenerator<LockEvent[]> {
  const chunks = progress === undefined ? input.open() : counted(input.open(), input.name, progress);
  for await (const { events, lines } of parseSource(chunks, input.name, profile, stats, summary, maxLineBytes, byReference, part, true, quietMs)) {
    if (progress !== undefined) {
      progress.info.lines += lines;
      progress.report(progress.info);
    }
    if (events.length > 0) yield events;
  }
}

/** A fed input's events (partition/feed.ts), or, when the reader says so first, the input read here. */
async function* fedEvents(items: AsyncIterable<FedItem | { self: true }>, own: () => AsyncGenerator<LockEvent[]>, name: string, profile: Profile, stats: InputStats, summary: FileSummary, byReference: boolean, part: PartitionFilter): AsyncGenerator<LockEvent[]> {
  const it = items[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) return;
  if ('self' in first.value) {
    yield* own();
    return;
  }
  const head = first.value;
  async function* all(): AsyncGenerator<FedItem> {
    yield head;
    for (let r = await it.next(); r.done !== true; r = await it.next()) yield r.value as FedItem;
  }
  for await (const { events } of parseFed(all(), name, profile, stats, summary, part, byReference)) if (events.length > 0) yield events;
}

async function* recordEvents(records: readonly Record<string, unknown>[], chosen: Profile, stats: InputStats, summary: FileSummary, part?: PartitionFilter): AsyncGenerator<LockEvent[]> {
  const profile = chosen.detect !== undefined && records.length > 0 ? chosen.detect(JSON.stringify(records[0])) : chosen;
  if (profile.service !== undefined) summary.service = profile.service;
  // Records are no text log: only a profile that expects every input to be mostly no events marks them.
  if (profile.sparse === 'all') summary.sparse = true;
  const out: LockEvent[] = [];
  for (let i = 0; i < records.length; i++) {
    summary.lines++;
    const r = records[i]!;
    count(profile.toEvent(r, { file: 'events', line: i + 1, source: 'events' }), stats, summary, i + 1, out, part, false, profile);
  }
  yield out;
}

/** The report of a finished run, `resources` as the engine gave them (Engine.resources() or resourceList()). */
function buildReport(engine: Engine, stats: InputStats, resources: ResourceSummaries): ReportView {
  // One pass over the resources, keeping none but the few the reasons name.
  const digest = readinessDigest(resources);
  const verdict = digest.verdict;
  const input = stats.summary();
  const reasons = verdictReasons(
    { resources: digest, findings: engine.findings, input, writeEvents: engine.writeEvents, untrackedEvents: engine.untrackedEvents, leaseScopedEvents: engine.leaseScopedEvents, leaseScopedApplied: engine.leaseScopedApplied },
    verdict,
  );
  return {
    tool: { name: 'stalewrite', version: VERSION, reportFormat: 2 },
    summary: {
      verdict,
      reasons,
      writeEvents: engine.writeEvents,
      findings: engine.findings.length + engine.findingsOmitted,
      findingsOmitted: engine.findingsOmitted,
      bySeverity: { ...engine.bySeverity },
      possibleBySeverity: { ...engine.possibleBySeverity },
      byRule: { ...engine.byRule },
      resources: digest.count,
      byReadiness: digest.byReadiness,
      untrackedEvents: engine.untrackedEvents,
    },
    findings: engine.findings,
    resources,
    input,
  };
}
