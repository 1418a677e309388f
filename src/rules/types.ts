/** The rule contract, ESLint-style: metadata (one row of the article's table) plus handlers per event type. */
import type { EventType, LockEvent } from '../model/event.js';
import type { Certainty, Severity } from '../model/report.js';
import type { ResourceTimeline } from '../timeline/timeline.js';

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
}

export interface ReportInput {
  message: string;
  evidence: EvidenceRef[];
  /** Defaults to the rule's severity. */
  severity?: Severity;
  /** Defaults to what the engine derives from the evidence's sources and times. */
  certainty?: Certainty;
  /**
   * The two evidence events whose order the finding rests on, when it rests on an order
   * (earlier first). The engine derives certainty from their sources and timestamps.
   */
  order?: readonly [LockEvent, LockEvent];
}

export interface RuleContext {
  /** State of the event's resource *before* this event is applied. */
  readonly timeline: ResourceTimeline;
  report(finding: ReportInput): void;
}

export type Handler = (event: LockEvent, context: RuleContext) => void;

export interface Rule {
  readonly meta: RuleMeta;
  readonly on: Partial<Record<EventType, Handler>>;
}
