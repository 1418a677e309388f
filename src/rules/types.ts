/**
 * The rule contract, ESLint-style: metadata (one row of the article's table), handlers per event
 * type, and, for a rule that remembers something per resource, `state`: the engine gives each
 * rule its own slot per resource, made by `state()` the first time the rule asks for it
 * (`context.slot()`), so a stateful rule never writes shared state. Write rules with defineRule().
 */
import type { EventType, LockEvent } from '../model/event.js';
import type { Certainty, Finding, Severity, Uncertainty } from '../model/report.js';
import type { MessageData } from '../model/message.js';
import type { ServiceFacts } from '../model/services.js';
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
  /**
   * The key of one of the rule's `messages`; the engine renders the template with `data` into the
   * finding's `message` (there is no other way to give one), and records `<rule>/<messageId>`.
   */
  messageId: string;
  /** The template's placeholders: `{name}` is replaced by `data.name`, verbatim. Default: none. */
  data?: MessageData;
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

export interface RuleContext<S = unknown> {
  /** State of the event's resource *before* this event is applied (a view, valid during the call). */
  readonly timeline: ResourceTimeline;
  /**
   * The resource's id in this run (0, 1, 2… in the order resources first appear): for a rule that
   * keeps a few numbers for every resource in typed arrays of its own (see `state()`), where an
   * object per resource in `slot()` would cost more than the numbers.
   */
  readonly resourceId: number;
  readonly options: RuleOptions;
  /** Writes by operationId (bounded), with the worker views of each. */
  readonly operations: OperationIndex;
  /**
   * The lock service the event's input is declared to come from (its profile's or mapping's
   * `service`), or undefined. A rule that knows the service's own case reports a message variant
   * that names it, with the service's facts as data; its generic messages never name a service.
   */
  service(event: LockEvent): ServiceFacts | undefined;
  /**
   * Report a finding. The engine makes it final: worker views of its subject write that arrive
   * within the clock-skew bound join its evidence (see onView), then it is emitted and never changes.
   */
  report(finding: ReportInput): void;
  /**
   * The calling rule's own state for this run, made by `create` on first use: for state that is
   * not per resource (e.g. per clock domain). One slot per engine and rule, never shared.
   */
  state<T>(create: () => T): T;
  /**
   * This rule's own state for the event's resource, made by the rule's `state()` on first use.
   * Keep it small and bounded (it lives as long as the resource): say its bound in the rule.
   */
  slot(): S;
  /** The slot if the rule has made it for this resource, without making it. */
  peek(): S | undefined;
}

export type Handler<S = any> = (event: LockEvent, context: RuleContext<S>) => void;

/** When a handler can act (Rule.when). */
export interface RuleGate {
  readonly results?: readonly string[];
  readonly slot?: true;
}

/** A message for a finding: the key of one of the rule's `messages`, and its data. */
export interface RuleMessage {
  readonly messageId: string;
  readonly data?: MessageData;
}

export interface Rule<S = any> {
  readonly meta: RuleMeta;
  /**
   * The rule's message templates by id, ESLint-style: `{name}` placeholders filled from a report's
   * `data` (see formatMessage). Every finding's text comes from one of these.
   */
  readonly messages: Readonly<Record<string, string>>;
  /** Makes the rule's per-resource state (see RuleContext.slot). */
  readonly state?: () => S;
  readonly on: Partial<Record<EventType, Handler<S>>>;
  /**
   * When each handler of `on` can act at all, for the engine to skip the calls that cannot (rules
   * run per event, most of them return at once): `results`, only for events with one of these
   * results; `slot`, only when the rule's slot exists for the event's resource (the handler does
   * nothing before `context.peek()` gives one). A gate must be exact: a call it skips would have
   * reported nothing and changed nothing (test/rules-gate.test.ts runs every rule with and without
   * its gates and compares). Default: every event of the handler's type.
   */
  readonly when?: Partial<Record<EventType, RuleGate>>;
  /**
   * Called when a worker's view of a write arrives after a finding of this rule about that write
   * (same resource and operationId) was made, and before it is emitted; the view is already in the
   * evidence. Returns the finding's new message (an id of the rule's `messages` and its data), or
   * undefined to keep it.
   */
  readonly onView?: (finding: Readonly<Finding>, view: LockEvent) => RuleMessage | undefined;
  /** Called once per resource at the end of input (for rules that wait, e.g. out a clock-skew window). */
  readonly end?: (context: RuleContext<S>) => void;
  /**
   * For a rule whose state is not per resource (RuleContext.state): called, in a partition run
   * (`--partition`), for the lines of other partitions, in their place in the merged order, so the
   * rule sees every line as a single run would. Only `ts`, `source`, `file` and `line` are at hand
   * at once (the rest is read from the line when asked for), `context.timeline` is not set, and the
   * handler must not report. With one input, a line is left out when it cannot be a step back in
   * time in its clock domain, nor be followed by one (ingest/partition.ts, PartitionFilter.fold):
   * a handler must not depend on lines that lie, in time, between the two around them.
   */
  readonly onForeign?: Handler<S>;
}

/** A rule, typed with its own per-resource state `S` (identity at run time); every rule of src/rules is written with it, a rule with no state as `defineRule({ meta, messages, on })`. */
export function defineRule<S = undefined>(rule: Rule<S>): Rule<S> {
  return rule;
}
