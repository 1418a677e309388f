/**
 * `stalewrite merge` (README "Scaling out"): the reports of the N partitions of one run, put
 * back together into the report a single run would have written: the same findings in the same
 * order with the same ids, the same resources, readiness, verdict and reasons, the same counts,
 * problems and timelines.
 *
 * - Findings are ordered by where they were made in the merged input (each partition records it,
 *   PartitionInfo.order), and the global bounds are applied again: --max-findings, --max-problems,
 *   the timelines html draws (--max-drawn).
 * - Bounds that a partition cannot apply as a single run would (--max-resources, the duplicate
 *   window's bounds, the capture for html) are compared with the sums over the partitions; the
 *   operation index is watched by each partition (an operation seen again after more lines than
 *   the index holds). Where a single run could have differed, the merged report says so in
 *   `partitions`, as it says what the partitions' witnesses saw (input out of timestamp order).
 * - Reports that do not form one run's complete set are refused with a MergeError: a missing or
 *   repeated partition, another N, other options, other inputs (names as given and sizes), another
 *   version.
 */
import { DEFAULT_CAPTURE_TOTAL } from '../timeline/capture.js';
import { MAX_REMEMBERED, MAX_REMEMBERED_CHARS } from '../ingest/duplicates.js';
import { addUp } from '../ingest/records.js';
import { worstResources, type FileSummary, type Finding, type InputSummary, type PartitionInfo, type Problem, type Report, type ReportView, type ResourceSummaries, type ResourceSummary, type ResourceTimelineView, type TimelineEvent } from '../model/report.js';
import { isWireResources, mergedResources, type WireResources } from './wire-resources.js';
import { readinessDigest, verdictReasons } from '../verdict.js';

/** The reports given are not the complete set of one partitioned run (the CLI exits 2). */
export class MergeError extends Error {}

/** A partition's report as the merge takes it: read from a file, or a job's, its summaries in columns (wire-resources.ts). */
export type PartitionReport = Omit<Report, 'resources'> & { resources: ResourceSummary[] | WireResources };

/** The merged input is one a single run would have stopped on (--strict, --max-invalid): not a usage error, its input's failure. */
export class MergedInputError extends MergeError {}

/** Where findings point, by `file NUL line`: the findings whose evidence cites the line, and those it is decisive for. */
export function findingPointers(findings: readonly Finding[]): Map<string, { findings: string[]; decisive: string[] }> {
  const pointers = new Map<string, { findings: string[]; decisive: string[] }>();
  for (const f of findings) {
    for (const e of f.evidence) {
      if (e.inferred) continue;
      const key = `${e.file}\u0000${e.line}`;
      let p = pointers.get(key);
      if (p === undefined) pointers.set(key, (p = { findings: [], decisive: [] }));
      if (!p.findings.includes(f.id)) p.findings.push(f.id);
      if (e.decisive && !p.decisive.includes(f.id)) p.decisive.push(f.id);
    }
  }
  return pointers;
}

/** Mark a timeline event with the findings that point at its line. */
export function pointAt(item: TimelineEvent, pointers: ReturnType<typeof findingPointers>): void {
  const p = pointers.get(`${item.file}\u0000${item.line}`);
  if (p === undefined) return;
  item.findings = p.findings;
  if (p.decisive.length > 0) item.decisiveFor = p.decisive;
}

/** Lexicographic order of two places where findings were made. */
function byPlace(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** A stable text of a JSON value, keys sorted (to compare options). */
function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'undefined';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

/** What two options fingerprints differ in, for the message. */
function differences(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return keys.filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k])).map((k) => `${k} ${canonicalJson(a[k])} vs ${canonicalJson(b[k])}`);
}

/** A report's partition, checked to be one (names it by `name` in messages). */
function partitionOf(r: PartitionReport, name: string): PartitionInfo {
  const p = (r as Partial<Report>).partition;
  if (p === undefined || p === null || typeof p !== 'object') {
    throw new MergeError(`${name} is not the report of a partition run (no "partition"): write each part with stalewrite analyze --partition I/N -o part-I.json`);
  }
  // A report edited or cut short is refused here rather than merged wrong.
  const isPlace = (x: unknown) => Array.isArray(x) && x.length > 0 && x.every((v) => typeof v === 'number' && Number.isFinite(v));
  const ok =
    Number.isInteger(p.count) && Number.isInteger(p.index) &&
    Array.isArray(r.findings) && (Array.isArray(r.resources) || isWireResources(r.resources)) && r.input !== null && typeof r.input === 'object' && Array.isArray(r.input.files) &&
    Array.isArray(p.order) && p.order.length === r.findings.length && p.order.every(isPlace) &&
    p.firstByRule !== null && typeof p.firstByRule === 'object' && Object.values(p.firstByRule).every(isPlace) &&
    p.held !== null && typeof p.held === 'object' && p.leaseScoped !== null && typeof p.leaseScoped === 'object' && Array.isArray(p.inputs) && Array.isArray(p.inexact) && p.options !== null && typeof p.options === 'object';
  if (!ok) throw new MergeError(`${name} is not a whole partition report (its "partition" or findings are damaged)`);
  return p;
}

/**
 * Check that `reports` are the complete set of one partitioned run; returns them in partition
 * order. `names` name them in messages (file names as given).
 */
export function checkSet<R extends PartitionReport>(reports: readonly R[], names: readonly string[] = reports.map((_, i) => `report ${i + 1}`)): R[] {
  if (reports.length === 0) throw new MergeError('no reports to merge');
  const infos = reports.map((r, i) => partitionOf(r, names[i]!));
  const first = infos[0]!;
  const n = first.count;
  const byIndex: (R | undefined)[] = new Array(n).fill(undefined);
  const nameOf: string[] = new Array(n);
  reports.forEach((r, i) => {
    const p = infos[i]!;
    const name = names[i]!;
    if (p.count !== n) throw new MergeError(`${name} is partition ${p.index}/${p.count}, but ${names[0]} is of ${n} partitions: all parts must come from one run with the same N`);
    if (p.hash !== first.hash) throw new MergeError(`${name} hashes keys with ${p.hash}, ${names[0]} with ${first.hash}`);
    if (r.tool?.version !== reports[0]!.tool?.version || r.tool?.reportFormat !== reports[0]!.tool?.reportFormat) {
      throw new MergeError(`${name} was written by stalewrite ${r.tool?.version}, ${names[0]} by ${reports[0]!.tool?.version}: run every partition with the same version`);
    }
    const diff = differences(first.options, p.options);
    if (diff.length > 0) throw new MergeError(`${name} was run with other options than ${names[0]}: ${diff.join('; ')}`);
    const inputs = (list: PartitionInfo['inputs']) => list.map((x) => `${x.name} (${x.size === null ? 'stdin or a stream' : `${x.size} bytes`})`).join(', ');
    if (canonicalJson(p.inputs) !== canonicalJson(first.inputs)) throw new MergeError(`${name} read other inputs than ${names[0]}: ${inputs(p.inputs)} vs ${inputs(first.inputs)} (compared by the names as given and their sizes)`);
    if (byIndex[p.index] !== undefined) throw new MergeError(`partition ${p.index}/${n} is given twice: ${nameOf[p.index]} and ${name}`);
    byIndex[p.index] = r;
    nameOf[p.index] = name;
  });
  const missing = byIndex.flatMap((r, i) => (r === undefined ? [i] : []));
  if (missing.length > 0) {
    const list = missing.length > 8 ? `${missing.slice(0, 8).join(', ')}, … (${missing.length} in all)` : missing.join(', ');
    throw new MergeError(`partition${missing.length > 1 ? 's' : ''} ${list} of ${n} ${missing.length > 1 ? 'are' : 'is'} missing: give all ${n} partition reports of the run`);
  }
  return byIndex as R[];
}

/** The options a partition ran with, as the merge needs them. */
interface RunOptions {
  maxFindings: number;
  maxProblems: number;
  maxResources: number;
  strict: boolean;
  maxInvalid: number | null;
  maxLeaseHolders: number;
  timelines: { all: boolean; resources: string[] | null; maxResources: number; perResource: number } | null;
}

/**
 * Merge the complete set of one partitioned run's reports (in any order) into the single run's
 * report. Throws a MergeError when they are not one complete set, or when the single run would
 * have stopped (--strict, --max-invalid).
 */
export function mergeReports(given: readonly PartitionReport[], names?: readonly string[]): Report {
  return merge(given, names, false) as Report;
}

/**
 * mergeReports, its report's `resources` made one at a time as they are walked when the reports
 * are jobs' (their summaries in columns, wire-resources.ts): what the CLI writes.
 */
export function mergeReportView(given: readonly PartitionReport[], names?: readonly string[]): ReportView {
  return merge(given, names, true);
}

function merge(given: readonly PartitionReport[], names: readonly string[] | undefined, made: boolean): ReportView {
  const reports = checkSet(given, names);
  const info = reports.map((r) => r.partition!);
  const n = reports.length;
  const opts = info[0]!.options as unknown as RunOptions;
  const inexact = new Map<string, number>();
  const flag = (reason: string, count = 1) => inexact.set(reason, (inexact.get(reason) ?? 0) + count);
  for (const p of info) for (const x of p.inexact) flag(x.reason, x.count);

  const input = mergeInput(reports, opts.maxProblems);
  // A single run would have stopped with exit 2 and no report.
  if (opts.strict && input.invalid > 0) {
    const p = input.problems[0];
    throw new MergedInputError(`${p === undefined ? 'an input line' : `${p.file}:${p.line}`} is invalid${p === undefined ? '' : `: ${p.reason}`} (--strict stops at the first invalid line)`);
  }
  if (opts.maxInvalid !== null && input.invalid > opts.maxInvalid) throw new MergedInputError(`more than ${opts.maxInvalid} invalid lines in all partitions (--max-invalid): ${input.invalid}`);

  // Findings in the order they were made, cut at --max-findings again.
  const placed: { f: Finding; at: readonly number[] }[] = [];
  reports.forEach((r, k) => {
    r.findings.forEach((f, i) => {
      const at = info[k]!.order[i];
      if (at === undefined || at.length === 0) throw new MergeError(`partition ${k}/${n}: finding ${f.id} has no place (the report is damaged)`);
      const { story: _story, ...finding } = f as Finding & { story?: unknown };
      placed.push({ f: finding as Finding, at });
    });
  });
  placed.sort((a, b) => byPlace(a.at, b.at));
  const findings = placed.slice(0, opts.maxFindings).map((x) => x.f);

  // By resource key, as a single run lists them: jobs' columns are in that order already and
  // merged; reports read from files are sorted.
  const lists = reports.map((r) => r.resources);
  let resources: ResourceSummaries;
  if (lists.every(isWireResources)) {
    const merged = mergedResources(lists);
    resources = made ? merged : [...merged];
  } else resources = lists.flatMap((l) => (isWireResources(l) ? [...mergedResources([l])] : l)).sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
  const sum = (get: (r: PartitionReport) => number) => reports.reduce((a, r) => a + get(r), 0);
  const total = sum((r) => r.summary.findings);
  const bySeverity = { error: sum((r) => r.summary.bySeverity.error), warning: sum((r) => r.summary.bySeverity.warning), info: sum((r) => r.summary.bySeverity.info) };
  const possibleBySeverity = { error: sum((r) => r.summary.possibleBySeverity.error), warning: sum((r) => r.summary.possibleBySeverity.warning), info: sum((r) => r.summary.possibleBySeverity.info) };
  // byRule in the order each rule first reported, as a single run counts them.
  const firsts: { rule: string; at: readonly number[] }[] = [];
  for (const p of info) for (const [rule, at] of Object.entries(p.firstByRule)) firsts.push({ rule, at });
  firsts.sort((a, b) => byPlace(a.at, b.at));
  const byRule: Record<string, number> = {};
  for (const { rule } of firsts) if (byRule[rule] === undefined) byRule[rule] = sum((r) => r.summary.byRule[rule] ?? 0);
  const digest = readinessDigest(resources);
  const verdict = digest.verdict;
  const writeEvents = sum((r) => r.summary.writeEvents);
  const untrackedEvents = sum((r) => r.summary.untrackedEvents);
  // Every partition applies every lease-scoped event: one counts them all; it applied if any partition did.
  const leaseScopedEvents = info[0]!.leaseScoped.events;
  const leaseScopedApplied = info.reduce((a, p) => a + p.leaseScoped.applied, 0);
  const reasons = verdictReasons({ resources: digest, findings, input, writeEvents, untrackedEvents, leaseScopedEvents, leaseScopedApplied }, verdict);

  // Bounds a single run applies to all resources at once.
  const held = (k: keyof PartitionInfo['held']) => info.reduce((a, p) => a + p.held[k], 0);
  if (held('resources') > opts.maxResources && untrackedEvents === 0) {
    flag(`${held('resources')} resources in all, more than --max-resources ${opts.maxResources}: a single run would not have analysed the events of the resources past it`);
  } else if (held('resources') > opts.maxResources) flag(`more than --max-resources ${opts.maxResources} resources: a single run would have left out the events of other resources than the partitions did`);
  if (held('copies') > MAX_REMEMBERED || held('copyChars') > MAX_REMEMBERED_CHARS) flag(`the partitions remembered more events for the duplicate check than a single run's bound (${MAX_REMEMBERED} events, ${MAX_REMEMBERED_CHARS} characters)`);
  if (held('leaseHolders') > opts.maxLeaseHolders) flag(`the partitions' lease indexes held ${held('leaseHolders')} (lease, resource) pairs at most, more than a single run's ${opts.maxLeaseHolders}: a lease-scoped event could find other resources`);
  if (held('captured') > DEFAULT_CAPTURE_TOTAL) flag(`the partitions captured ${held('captured')} events for timelines, more than a single run's ${DEFAULT_CAPTURE_TOTAL}`);

  const report: ReportView = {
    tool: reports[0]!.tool,
    summary: {
      verdict,
      reasons,
      writeEvents,
      findings: total,
      findingsOmitted: total - findings.length,
      bySeverity,
      possibleBySeverity,
      byRule,
      resources: resources.length,
      byReadiness: digest.byReadiness,
      untrackedEvents,
    },
    findings,
    resources,
    input,
  };
  if (opts.timelines !== null) mergeTimelines(report, reports, opts.timelines);
  if (inexact.size > 0) {
    report.partitions = { count: n, inexact: [...inexact].map(([reason, count]) => (count > 1 ? `${reason} (${count}×)` : reason)) };
    // First in the headline of every format: the verdict may not be a single run's.
    report.summary.reasons.unshift({ id: 'partitions-inexact', message: `this merge of ${n} partitions may differ from one run's report: ${report.partitions.inexact.join('; ')}` });
  }
  return report;
}

const LINE_KEYS = ['lines', 'expanded', 'joined'] as const;
const OWN_KEYS = ['events', 'blank', 'ignored', 'invalid', 'duplicates'] as const;

/** The input summary: lines as every partition read them, each partition's own counts added up. */
function mergeInput(reports: readonly PartitionReport[], maxProblems: number): InputSummary {
  const n = reports.length;
  const base = reports[0]!.input.files;
  const files: FileSummary[] = base.map((f0, k) => {
    const all = reports.map((r, p) => {
      const f = r.input.files[k];
      if (f === undefined || f.file !== f0.file) throw new MergeError(`partition ${p}/${n} lists other inputs than partition 0 (${f?.file ?? 'none'} vs ${f0.file})`);
      return f;
    });
    for (const key of LINE_KEYS) {
      const other = all.find((f) => f[key] !== f0[key]);
      if (other !== undefined) throw new MergeError(`the partitions read ${f0.file} differently: ${key} ${f0[key]} vs ${other[key]} (did the file change between the partition runs?)`);
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(f0) as (keyof FileSummary)[]) {
      if (key === 'otherPartitions') continue;
      out[key] = (OWN_KEYS as readonly string[]).includes(key) ? all.reduce((a, f) => a + (f[key] as number), 0) : f0[key];
    }
    const merged = out as unknown as FileSummary;
    // Every line or record is in exactly one partition.
    const records = merged.lines + merged.expanded - merged.joined;
    const others = all.reduce((a, f) => a + (f.otherPartitions ?? 0), 0);
    if (others !== (n - 1) * records || OWN_KEYS.reduce((a, key) => a + merged[key], 0) !== records) {
      throw new MergeError(`the partitions' counts of ${f0.file} do not add up (${records} lines and records, ${others} counted for other partitions across ${n}): are they of one run?`);
    }
    return merged;
  });
  // Problems: per input, in line order, then the first --max-problems of them. A path named again
  // (`sameAs`, read once) has none of its own: its problems are the first name's, listed once.
  const problems: Problem[] = [];
  for (const f of files) {
    if (problems.length >= maxProblems) break;
    if (f.sameAs !== undefined) continue;
    const mine = reports.flatMap((r) => r.input.problems.filter((p) => p.file === f.file)).sort((a, b) => a.line - b.line);
    for (const p of mine) {
      if (problems.length >= maxProblems) break;
      problems.push(p);
    }
  }
  const input: InputSummary = { files, lines: 0, events: 0, blank: 0, ignored: 0, invalid: 0, expanded: 0, joined: 0, duplicates: 0, problems, problemsOmitted: 0 };
  addUp(input, files);
  input.problemsOmitted = input.invalid - problems.length;
  return input;
}

/** Timelines as a single run draws them: the resources wanted, worst first, at most maxResources, each marked with the merged findings. */
function mergeTimelines(report: ReportView, reports: readonly PartitionReport[], opts: NonNullable<RunOptions['timelines']>): void {
  const views = new Map<string, ResourceTimelineView>();
  const uncaptured = new Set<string>();
  reports.forEach((r, k) => {
    if (r.timelines === undefined) throw new MergeError(`partition ${k} has no timelines: run the partitions with --with-timelines for an html report of the merge`);
    for (const t of r.timelines) views.set(t.resource, t);
    for (const u of r.partition!.uncaptured ?? []) uncaptured.add(u);
  });
  const { drawn, wanted } = drawnResources(report.resources, opts.all, opts.resources, opts.maxResources);
  const pointers = findingPointers(report.findings);
  const timelines: ResourceTimelineView[] = [];
  let missed = 0;
  for (const r of drawn) {
    const view = views.get(r.resource);
    if (view === undefined) {
      if (!uncaptured.has(r.resource)) throw new MergeError(`no partition has the timeline of ${r.resource} (the reports are damaged)`);
      missed++;
      continue;
    }
    const events = view.events.map((e) => {
      const { findings: _f, decisiveFor: _d, ...item } = e;
      pointAt(item, pointers);
      return item;
    });
    timelines.push({ ...view, events });
  }
  report.timelines = timelines;
  report.timelinesOmitted = Math.max(0, wanted - opts.maxResources) + missed;
}

/**
 * The resources whose timelines a report draws: every one (`all`), the named ones (`only`), or
 * those with findings; worst first, at most `max` (`drawn`), and how many were wanted in all.
 * One pass, keeping no more than `max` (the resources may be made as they are walked).
 */
export function drawnResources(resources: Iterable<ResourceSummary>, all: boolean, only: readonly string[] | null | undefined, max: number): { drawn: ResourceSummary[]; wanted: number } {
  let wanted = 0;
  function* chosen(): Generator<ResourceSummary> {
    for (const r of resources) {
      if (only !== null && only !== undefined ? !only.includes(r.resource) : !all && r.findings === 0) continue;
      wanted++;
      yield r;
    }
  }
  const drawn = worstResources(chosen(), max);
  return { drawn, wanted };
}
