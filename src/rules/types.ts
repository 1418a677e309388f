/** The rule contract, ESLint-style: metadata (one row of the article's table) plus handlers per event type. */
import type { EventType, LockEvent } from '../model/event.js';
import type { Certainty, Finding, Severity, Uncertainty } from '../model/report.js';
import type { ResourceTimeline } from '../timeline/timeline.js';
import type { OperationIndex } from '../timeline/operations.js';

export interface RuleMeta {
  /** Stable id; part of the public contract. */
  readonly id: string;
  readonly severity: Severity;
  /** One line: what the rule detects. */
  readonly title: string;
  /** The four columns of the article's diagnostic table. */
  readonly symptom: string;
  readonly cause: string;
  readonly check: string;
  readonly action: string;
}

export interface EvidenceRef {
  readonly event: LockEvent;
  readonly role: string;
  /**
   * Set when this item stands for a lease end that was not logged but inferred (last renewal +
   * ttl): `event` is the renewal it was inferred from, and this is the inferred time (ms).
   */
  readonly inferredEnd?: number;
}

export interface ReportInput {
  message: string;
  evidence: EvidenceRef[];
  /** Defaults to the rule's severity. */
  severity?: Severity;
  /** Defaults to what the engine derives from `order`, or definite. */
  certainty?: Certainty;
  /**
   * The two evidence events whose order the finding rests on, when it rests on an order
   * (earlier first). The engine derives certainty from their sources and timestamps.
   */
  order?: readonly [LockEvent, LockEvent];
  /** The order rests on an inferred lease end: certainty is at most likely. */
  inferred?: boolean;
  /** The write the finding is about; worker views of its operationId join the evidence. Default: the last evidence event. */
  subject?: LockEvent;
  /** Structured figures behind the finding (e.g. busy shares, latency percentiles). */
  details?: Record<string, unknown>;
  /** With an explicit `certainty` below definite: why, and what would decide it (the engine fills it in for `order`). */
  uncertainty?: Uncertainty;
}

export interface RuleOptions {
  /** Clock-skew bound between sources, ms. */
  readonly clockSkewMs: number;
  /** busy-rate-rising: window length, ms. */
  readonly busyWindowMs: number;
  /** busy-rate-rising: rise of the busy share over the baseline that is reported (0..1). */
  readonly busyThreshold: number;
  /** busy-rate-rising: attempts a window needs to count. */
  readonly busyMinAttempts: number;
}

export interface RuleContext {
  /** State of the event's resource *before* this event is applied. */
  readonly timeline: ResourceTimeline;
  readonly options: RuleOptions;
  /** Writes by operationId (bounded), with the worker views of each. */
  readonly operations: OperationIndex;
  /** Report a finding; returns it (it may still gain evidence), or undefined past the findings cap. */
  report(finding: ReportInput): Finding | undefined;
  /** Add an evidence item to a finding reported earlier. */
  addEvidence(finding: Finding, ref: EvidenceRef): void;
  /**
   * The calling rule's own state for this run, made by `create` on first use: for state that is
   * not per resource (e.g. per clock domain). One slot per engine and rule, never shared.
   */
  state<T>(create: () => T): T;
}

export type Handler = (event: LockEvent, context: RuleContext) => void;

export interface Rule {
  readonly meta: RuleMeta;
  readonly on: Partial<Record<EventType, Handler>>;
  /**
   * Called when a worker's view of a write arrives after a finding of this rule about that write
   * (same resource and operationId); the view is already in the evidence. May refine the message.
   */
  readonly onView?: (finding: Finding, view: LockEvent) => void;
  /** Called once per resource at the end of input (for rules that wait, e.g. out a clock-skew window). */
  readonly end?: (context: RuleContext) => void;
}
