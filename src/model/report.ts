/** The report: what every reporter renders. Plain data, JSON-serialisable (tokens are decimal strings). */
import type { MessageData } from './message.js';
import type { ServiceId } from './services.js';

export type Severity = 'error' | 'warning' | 'info';
export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];
export type Certainty = 'definite' | 'likely' | 'possible';
/**
 * Per resource, worst first: `violated` (a definite or likely error), `inconclusive` (only
 * possible errors), `unconfirmed` (a stale request answered without an explicit stale result),
 * `verified` (stale requests seen and all explicitly rejected), `untested` (no stale request seen).
 */
export type Readiness = 'violated' | 'inconclusive' | 'unconfirmed' | 'verified' | 'untested';
export const READINESS: readonly Readiness[] = ['violated', 'inconclusive', 'unconfirmed', 'verified', 'untested'];

/** Worst first (see READINESS), then by resource key. */
export function byReadiness(a: ResourceSummary, b: ResourceSummary): number {
  return READINESS_ORDER[a.readiness] - READINESS_ORDER[b.readiness] || (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0);
}

const READINESS_ORDER: Record<Readiness, number> = { violated: 0, inconclusive: 1, unconfirmed: 2, verified: 3, untested: 4 };

/**
 * The first `end` of `resources` sorted by byReadiness (worst first), in one pass that keeps no
 * more than that many: the same as `[...resources].sort(byReadiness).slice(0, end)` (a stable
 * sort: of equal ones, the earlier first), for resources made one at a time (ResourceSummaries).
 */
export function worstResources(resources: Iterable<ResourceSummary> & { readonly length?: number }, end: number): ResourceSummary[] {
  const out: ResourceSummary[] = [];
  // As slice() takes its end: truncated, NaN as 0, a negative one from the length.
  let max = Math.trunc(end) || 0;
  if (max < 0) max = Math.max((resources.length ?? 0) + max, 0);
  if (max === 0) return out;
  for (const r of resources) {
    if (out.length === max && byReadiness(r, out[max - 1]!) >= 0) continue;
    // After the last one that is not worse (upper bound): equal ones keep their order.
    let lo = 0;
    let hi = out.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byReadiness(r, out[mid]!) < 0) hi = mid;
      else lo = mid + 1;
    }
    out.splice(lo, 0, r);
    if (out.length > max) out.pop();
  }
  return out;
}

/** The worse of two readiness values (the overall verdict is the worst over resources). */
export function worse(a: Readiness, b: Readiness): Readiness {
  return READINESS_ORDER[a] <= READINESS_ORDER[b] ? a : b;
}

export interface EvidenceItem {
  /** What this event proves in the finding, e.g. "newer accepted write", "late write". */
  role: string;
  file: string;
  line: number;
  source: string;
  ts: string;
  type: string;
  ownerId?: string;
  leaseId?: string;
  operationId?: string;
  fenceToken?: string;
  ttlMs?: number;
  result: string;
  observer: string;
  /** Fields of the original record that are not canonical, for display. */
  fields?: Record<string, unknown>;
  /**
   * Set when the line, kept by reference, could not be read back for `fields` (the file changed
   * after it was read): why. The other values of the item are what was read the first time.
   */
  lineUnavailable?: string;
  /**
   * This item is a lease end that no line logged: it was inferred as last renewal + ttl.
   * `ts` is the inferred time; `file:line` point at the renewal it was inferred from.
   */
  inferred?: boolean;
  /** The event the finding is about (the late write, the old release…): where annotations point. */
  decisive?: boolean;
}

/** Where a finding's order came from, when it is not definite: what would decide it. */
export interface Uncertainty {
  /**
   * `clock-skew`: two events from different clock domains closer than --clock-skew (or, when
   * likely, further apart but still across clocks); `same-timestamp`: two events of one clock
   * domain in different files with equal timestamps, ordered only by the merge's tie-break;
   * `inferred-end`: a lease end computed as last renewal + ttl; `unknown-end`: a lease with no
   * logged end and no TTL.
   */
  kind: 'clock-skew' | 'same-timestamp' | 'inferred-end' | 'unknown-end';
  /** The two events the order rests on, earlier first (as the merge placed them). */
  between?: { file: string; line: number; source: string; ts: string }[];
  /** Time between them, ms (clock-skew and same-timestamp). */
  gapMs?: number;
  /** The --clock-skew bound in force, ms. */
  clockSkewMs?: number;
  /** One sentence: the evidence or setting that would make the finding definite. */
  decide: string;
}

export interface Finding {
  id: string;
  rule: string;
  severity: Severity;
  certainty: Certainty;
  resource: string;
  /** The finding in one sentence: the rule's message template `messageId` rendered with `data`. */
  message: string;
  /**
   * Which of the rule's message templates `message` was rendered from: `<rule>/<id>`, e.g.
   * `accepted-stale-write/lateAccepted` (stable, for grouping and translation). Always set by this
   * version; absent in reports written before it.
   */
  messageId?: string;
  /**
   * The values the template's `{name}` placeholders were filled with (owners, tokens, durations…,
   * some already-formatted phrases), verbatim and unescaped. Set with `messageId`.
   */
  data?: MessageData;
  symptom: string;
  cause: string;
  check: string;
  action: string;
  evidence: EvidenceItem[];
  /** Structured figures behind the finding, where the rule has them (e.g. busy-rate-rising). */
  details?: Record<string, unknown>;
  /** Why the certainty is not definite, and what would decide it (absent for definite findings). */
  uncertainty?: Uncertainty;
}

/** One reason behind the overall verdict, for the headline: an id plus its sentence. */
export interface VerdictReason {
  /**
   * `no-events`, `no-writes`, `mostly-unread`, `unmatched-lease-ends`, `untracked`, `uncertain` (a possible error
   * finding), `not-explicit` (unconfirmed), `no-stale-request` (untested).
   */
  id: string;
  message: string;
  /** The finding or resource the reason is about, when it is about one. */
  finding?: string;
  resource?: string;
}

export interface ResourceSummary {
  resource: string;
  readiness: Readiness;
  /** Why the readiness is what it is, in one sentence. */
  reason: string;
  highestAcceptedToken: string | null;
  events: number;
  writes: { accepted: number; rejectedStaleFence: number; rejectedOther: number; withoutToken: number };
  /** Writes that arrived with a token below the highest accepted (or equal, from another lease). */
  staleWrites: number;
  /** Releases from a handle that was not the current holder's while another lease held the resource. */
  oldHandleReleases: number;
  findings: number;
}

/**
 * A report's resource summaries as its readers take them: in the report's order (by resource
 * key), walked once or more, each walk giving the same summaries. An array (what analyze()
 * returns), or summaries made one at a time as they are walked (the CLI's reports: a million
 * resources are never all held at once, see Engine.resourceList()).
 */
export interface ResourceSummaries extends Iterable<ResourceSummary> {
  readonly length: number;
}

/**
 * Set (true) on ResourceSummaries whose every summary has exactly ResourceSummary's fields, in its
 * order, each of its type (the engine's, Engine.resourceList()): the JSON writer then writes them
 * field by field (report/json.ts summaryJson) instead of through JSON.stringify.
 */
export const PLAIN_SUMMARIES: unique symbol = Symbol('plain resource summaries');

/** A report whose `resources` may be made as they are read (ResourceSummaries): what the reporters take. A Report is one. */
export interface ReportView extends Omit<Report, 'resources'> {
  resources: ResourceSummaries;
}

export interface Problem {
  file: string;
  line: number;
  reason: string;
}

/** How lines were accounted for. Always: lines + expanded = events + duplicates + blank + ignored + invalid + joined. */
export interface LineCounts {
  lines: number;
  /** Events analysed (each counted once; see `duplicates`). */
  events: number;
  blank: number;
  ignored: number;
  invalid: number;
  /** Records beyond the first on lines that hold several (OTLP export batches); 0 otherwise. */
  expanded: number;
  /** Physical lines merged into a following line (partial lines of a container log wrapper); 0 otherwise. */
  joined: number;
  /**
   * Events identical to one already read (at-least-once delivery: a line delivered twice, one log
   * in two inputs), counted here and not analysed again; 0 otherwise. See README "Reading input".
   */
  duplicates: number;
  /**
   * Only in the report of one partition of a run (`--partition I/N`): lines and records that belong
   * to other partitions (README "Scaling out"). Then
   * `lines + expanded = events + duplicates + blank + ignored + invalid + joined + otherPartitions`.
   */
  otherPartitions?: number;
}

export interface FileSummary extends LineCounts {
  file: string;
  /** Set when the input could not be read to its end (unreadable, truncated gzip, …). */
  error?: string;
  /** The profile `--profile auto` chose for this input. */
  profile?: string;
  /** The lock service the profile or mapping that read this input declares (its `service`). */
  service?: ServiceId;
  /**
   * The profile that read this input expects most of its lines to be no events (Profile.sparse:
   * a server's own text log): its ignored lines do not count toward `mostly-unread`.
   */
  sparse?: true;
  /** The container log wrapper detected and unwrapped in this input: `docker`, `cri` or `kubectl`. */
  wrapper?: 'docker' | 'cri' | 'kubectl';
  /** This path names the same file (device and inode) as an earlier input, named here: it was not read again, and its counts are 0. */
  sameAs?: string;
}

export interface InputSummary extends LineCounts {
  files: FileSummary[];
  problems: Problem[];
  /** Problems counted in `invalid` but not listed, past the cap. */
  problemsOmitted: number;
}

/** One event of a captured resource history (for pictures and the timeline command). */
export interface TimelineEvent extends Omit<EvidenceItem, 'role' | 'decisive'> {
  /** Ids of findings whose evidence points at this line. */
  findings?: string[];
  /** Ids of findings about this very event (their decisive evidence). */
  decisiveFor?: string[];
  /** The resource's highest accepted token after this event. */
  highestAccepted?: string;
}

export interface ResourceTimelineView {
  resource: string;
  readiness: Readiness;
  events: TimelineEvent[];
  /** Events of this resource not kept (the middle of a long history). */
  omitted: number;
}

export interface Report {
  tool: { name: 'stalewrite'; version: string; reportFormat: 2 };
  summary: {
    verdict: Readiness;
    /** Why the verdict is what it is (always at least one unless violated by definite findings only), most important first. */
    reasons: VerdictReason[];
    /** Write events read (decisions and worker views), of `input.events`. */
    writeEvents: number;
    findings: number;
    /** Findings detected but not listed, past the cap. */
    findingsOmitted: number;
    bySeverity: Record<Severity, number>;
    /** Of bySeverity, the findings whose certainty is only `possible` (not counted by --fail-on unless --include-possible). */
    possibleBySeverity: Record<Severity, number>;
    byRule: Record<string, number>;
    resources: number;
    byReadiness: Record<Readiness, number>;
    /** Events of resources past --max-resources: counted in input.events, but NOT analysed. */
    untrackedEvents: number;
  };
  findings: Finding[];
  resources: ResourceSummary[];
  input: InputSummary;
  /** Event histories of some resources, only when asked for (HTML report, timeline command). */
  timelines?: ResourceTimelineView[];
  /** Resources whose history was not included: past the cap, or not captured (past the capture's total of 500 000 events before they had a finding). */
  timelinesOmitted?: number;
  /** Only in the report of one partition of a run (`--partition I/N`): what `stalewrite merge` needs. */
  partition?: PartitionInfo;
  /**
   * Only in a merged report (`stalewrite merge`, `--jobs`) that may differ from a single run's:
   * why (README "Scaling out"). Absent when the merge is exactly the single run's report.
   */
  partitions?: { count: number; inexact: string[] };
  /**
   * Only when a live stream (`onFinding`, `-f ndjson`) ran on jobs whose merge could not be exactly
   * one thread's report, so the input was analysed again on one thread: the ids of findings the
   * jobs streamed that this report does not have (a line written is not taken back). Folded (a
   * later line of an id replaces an earlier one; these ids dropped), the stream's finding lines
   * are this report's findings. Absent otherwise.
   */
  withdrawn?: string[];
}

/** One partition's part of a partitioned run: how it was run, and what the merge puts back together. */
export interface PartitionInfo {
  /** This partition, from 0, of `count`. */
  index: number;
  count: number;
  /** How resource keys are hashed: FNV-1a 64 of the key's UTF-8 bytes, modulo `count`. */
  hash: 'fnv1a64-utf8';
  /** The options that change results; every partition of one run has the same. */
  options: Record<string, unknown>;
  /** The inputs as given, with their sizes in bytes (null: stdin, a stream). */
  inputs: { name: string; size: number | null }[];
  /** Where each listed finding was made, in the order of `findings` (the merge orders findings by it). */
  order: number[][];
  /** Where each rule's first finding was made, listed or not (the order of `summary.byRule`). */
  firstByRule: Record<string, number[]>;
  /** What this partition held of the run's global bounds (the merge compares their sums with the bounds). */
  held: { resources: number; operations: number; captured: number; copies: number; copyChars: number; leaseHolders: number };
  /** Lease-scoped events (applied in every partition) and how many of them found a lease here (the merge's `unmatched-lease-ends`). */
  leaseScoped: { events: number; applied: number };
  /** Why this partition's part may differ from a single run's, with how often. */
  inexact: { reason: string; count: number }[];
  /** With timelines: the resources drawn whose history was not captured. */
  uncaptured?: string[];
}
