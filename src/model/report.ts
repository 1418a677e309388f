/** The report: what every reporter renders. Plain data, JSON-serialisable (tokens are decimal strings). */

export type Severity = 'error' | 'warning' | 'info';
export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];
export type Certainty = 'definite' | 'likely' | 'possible';
export type Readiness = 'verified' | 'violated' | 'untested';

/** Violated first, then verified, then untested; by resource key within each. */
export function byReadiness(a: ResourceSummary, b: ResourceSummary): number {
  return READINESS_ORDER[a.readiness] - READINESS_ORDER[b.readiness] || (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0);
}

const READINESS_ORDER: Record<Readiness, number> = { violated: 0, verified: 1, untested: 2 };

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
   * This item is a lease end that no line logged: it was inferred as last renewal + ttl.
   * `ts` is the inferred time; `file:line` point at the renewal it was inferred from.
   */
  inferred?: boolean;
  /** The event the finding is about (the late write, the old release…): where annotations point. */
  decisive?: boolean;
}

export interface Finding {
  id: string;
  rule: string;
  severity: Severity;
  certainty: Certainty;
  resource: string;
  message: string;
  symptom: string;
  cause: string;
  check: string;
  action: string;
  evidence: EvidenceItem[];
  /** Structured figures behind the finding, where the rule has them (e.g. busy-rate-rising). */
  details?: Record<string, unknown>;
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

export interface Problem {
  file: string;
  line: number;
  reason: string;
}

/** How lines were accounted for. Always: lines + expanded = events + blank + ignored + invalid. */
export interface LineCounts {
  lines: number;
  events: number;
  blank: number;
  ignored: number;
  invalid: number;
  /** Records beyond the first on lines that hold several (OTLP export batches); 0 otherwise. */
  expanded: number;
}

export interface FileSummary extends LineCounts {
  file: string;
  /** Set when the input could not be read to its end (unreadable, truncated gzip, …). */
  error?: string;
  /** The profile `--profile auto` chose for this input. */
  profile?: string;
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
  tool: { name: 'stalewrite'; version: string; reportFormat: 1 };
  summary: {
    verdict: Readiness;
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
  /** Resources whose history was not included, past the cap. */
  timelinesOmitted?: number;
}
