/**
 * The engine: walks canonical events, in order, through per-resource timelines and the rules,
 * and collects findings. Synchronous and push-based, so findings can be streamed as they happen.
 *
 * A finding is final when it is emitted (onFinding, and `findings`): nothing changes it later.
 * A finding about a write with an operationId waits until stream time (the newest timestamp
 * pushed) passes the write's time by the clock-skew bound, so that worker views of the write
 * logged by other sources join its evidence first; findings are emitted in the order they were
 * made, so one that waits holds back those made after it. `flush()` emits what waits (the CLI
 * calls it when live input goes quiet), and `finish()` does at the end of input. A view that
 * arrives after its finding was emitted joins no finding (it is still an event analysed like any
 * other, counted in `input.events`).
 */
import { detach, EVENT_TYPES, fieldsOf, isLeaseScoped, RESULTS, type EventType, type LineReader, type LockEvent } from './model/event.js';
import { PLAIN_SUMMARIES, type Certainty, type EvidenceItem, type Finding, type Readiness, type ResourceSummaries, type ResourceSummary, type Severity, type Uncertainty } from './model/report.js';
import { formatToken, plural } from './model/format.js';
import { formatMessage, type MessageData } from './model/message.js';
import { serviceFacts, type ServiceId } from './model/services.js';
import { DigestBuilder, isStaleRule, OWN_DIGEST, type ReadinessDigest } from './verdict.js';
import { isoOf } from './model/time.js';
import { checkEngineOptions, OptionError } from './model/options.js';
import type { EvidenceRef, Handler, ReportInput, Rule, RuleContext, RuleOptions } from './rules/types.js';
import { DEFAULT_MAX_OPERATIONS, OperationIndex } from './timeline/operations.js';
import type { EventCapture } from './timeline/capture.js';
import { ResourceTimeline, TimelineStore } from './timeline/timeline.js';
import { findingId } from './partition/hash.js';
import { DEFAULT_MAX_LEASE_HOLDERS, LeaseHolders } from './timeline/lease-holders.js';

export interface EngineOptions {
  rules: readonly Rule[];
  /** Two timestamps from different sources closer than this are not trusted to be in order. */
  clockSkewMs?: number;
  /** Findings kept in the report; more are counted in `findingsOmitted`. */
  maxFindings?: number;
  /** busy-rate-rising: window length in ms (default 60 s), threshold (default 0.25), attempts per window (default 5). */
  busyWindowMs?: number;
  busyThreshold?: number;
  busyMinAttempts?: number;
  /** Operations remembered for duplicate-effect and views (default 100 000). */
  maxOperations?: number;
  /** Keep event histories for pictures (off by default). */
  capture?: EventCapture;
  /** Resources tracked at most (default 1 000 000); events of further resources are counted, not analysed. */
  maxResources?: number;
  /** Reads back lines that kept events hold by reference (ingest/readback.ts), for evidence. */
  lines?: LineReader;
  /** Called as soon as a finding is final (live output); see the comment at the top. */
  onFinding?: (finding: Finding) => void;
  /**
   * A partition run (`--partition`): the engine records where each finding was made (orderOf), for
   * the merge, and watches for the cases where a partition could differ from a single run (inexact).
   */
  partition?: boolean;
  /** The lock service the input named `file` is declared to come from (a profile's or mapping's `service`), if any. */
  serviceOf?: (file: string) => ServiceId | undefined;
  /**
   * Lease-scoped events will come (Profile.leaseScoped): keep an index of the resources each lease
   * was granted on, so that each such event finds them at once. Without it, one is still applied,
   * but by looking through every resource.
   */
  leaseScoped?: boolean;
  /** (lease, resource) pairs that index keeps at most (default 200 000); see LeaseHolders. */
  maxLeaseHolders?: number;
}

export const DEFAULT_CLOCK_SKEW_MS = 250;
export const DEFAULT_MAX_FINDINGS = 10000;
export const DEFAULT_BUSY_WINDOW_MS = 60_000;
export const DEFAULT_MAX_RESOURCES = 1_000_000;
export const DEFAULT_BUSY_THRESHOLD = 0.25;
export const DEFAULT_BUSY_MIN_ATTEMPTS = 5;


export class Engine {
  readonly findings: Finding[] = [];
  findingsOmitted = 0;
  /** Events of resources past the resource limit: counted, never analysed. */
  untrackedEvents = 0;
  /** The first resource that did not fit, for the message. */
  firstUntracked: string | undefined;
  /** Totals, including findings past the cap. */
  readonly bySeverity: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  /** Of those, the ones whose certainty is only `possible`. */
  readonly possibleBySeverity: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  readonly operations: OperationIndex;
  readonly options: RuleOptions;
  readonly byRule: Record<string, number> = {};
  /** Write events taken (decisions and worker views), including those of untracked resources. */
  writeEvents = 0;
  /**
   * Partition runs: the place in the merged input of the event about to be pushed (set by the
   * caller before push): the highest timestamp of its input so far, the input's index, and the
   * event's place in its input. Findings are ordered by where they were made (orderOf).
   */
  atTs = 0;
  atFrom = 0;
  atSeq = 0;
  /** Partition runs: why this partition's report may differ from a single run's (see README "Scaling out"). */
  readonly inexact = new Map<string, number>();
  /** Partition runs: the newest timestamp of every line placed in the merge, this partition's or not. */
  private globalTime = -Infinity;
  private readonly orderKeys: Map<Finding, number[]> | undefined;
  /** Partition runs: where each rule's first finding was made (listed or not): the order of `byRule`. */
  readonly firstByRule = new Map<string, number[]>();
  /** Partition runs: each timeline's first event's place (atTs, atFrom, atSeq), by creation order. */
  private firstKeys: Float64Array | undefined;
  private created = 0;
  /** Findings made while pushing the current event, or ending the current rule on the current timeline. */
  private madeHere = 0;
  /** In finish(): the end rule's place in `ends`, and the timeline's creation index. */
  private ending = -1;
  private endingTimeline = 0;
  /** Partition runs: where each (lease, resource) pair of the lease index was granted, and the copy of a lease-scoped event being pushed. */
  private readonly grantAt: Map<string, number[]> | undefined;
  private copyAt: number[] | undefined;
  /** The most (lease, resource) pairs the lease index held at once (partition runs compare the sum with its bound). */
  holdersPeak = 0;
  /** Lines placed in the merge so far (partition runs: this partition's and the others'). */
  private items = 0;
  private readonly maxOperations: number;
  /** Partition runs: when (`items`) each operation entry was made. */
  private readonly operationMade: Float64Array | undefined;
  /** Partition runs: per waiting or emitted finding, its deadline, negative when a single run's could have been later. */
  private readonly deadlineOf: WeakMap<Finding, number> | undefined;
  /** Lease-scoped events (a session expiry naming no resource), and those that found a resource holding their lease. */
  leaseScopedEvents = 0;
  leaseScopedApplied = 0;
  /** Which resources each lease was granted on, when lease-scoped events will come. */
  private readonly holders: LeaseHolders | undefined;
  /** Every resource's state, by resource id (see timeline.ts). */
  private readonly store = new TimelineStore();
  /** The view pushed events are applied through, re-pointed to each event's resource. */
  private readonly hot: ResourceTimeline;
  /** Per event type, the handlers that can act on each result (see Rule.when and dispatchOf). */
  private readonly handlers: Map<string, Dispatch>;
  private readonly foreignRules: HandlerEntry[] = [];
  private readonly maxFindings: number;
  private readonly onFinding?: (finding: Finding) => void;
  private readonly lines?: LineReader;
  /** The rules with an `end` handler, each with its index in the rule list (its slot). */
  private readonly ends: { rule: Rule; index: number }[];
  private readonly capture?: EventCapture;
  private readonly maxResources: number;
  private readonly ruleById: Map<string, Rule>;
  /**
   * Per rule position, its slot in a timeline's `slots`: given when a rule first asks for its
   * slot (-1 until then), so the rules that keep state in most resources come first and a
   * timeline's `slots` is only as long as the highest slot it holds.
   */
  private readonly slotOf: Int32Array;
  private slotsGiven = 0;
  private seq = 0;
  /** The resource of the previous event and its id. */
  private lastResource: string | undefined;
  private lastId = -1;
  // Reused per event to avoid a closure per event on the hot path.
  private currentRule: Rule | undefined;
  private currentIndex = 0;
  private currentTimeline: ResourceTimeline | undefined;
  private readonly context: RuleContext;
  /** Each rule's own state (RuleContext.state). */
  private readonly ruleStates = new Map<Rule, unknown>();
  /** Findings made but not emitted yet, in the order made, with the stream time each waits for. */
  private readonly pending: Finding[] = [];
  private readonly deadlines: number[] = [];
  private pendingHead = 0;
  private readonly waiting = new Set<Finding>();
  /** The newest timestamp pushed. */
  private streamTime = -Infinity;

  constructor(options: EngineOptions) {
    checkEngineOptions(options as unknown as Record<string, unknown>);
    this.options = {
      clockSkewMs: options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS,
      busyWindowMs: options.busyWindowMs ?? DEFAULT_BUSY_WINDOW_MS,
      busyThreshold: options.busyThreshold ?? DEFAULT_BUSY_THRESHOLD,
      busyMinAttempts: options.busyMinAttempts ?? DEFAULT_BUSY_MIN_ATTEMPTS,
    };
    this.maxOperations = options.maxOperations ?? DEFAULT_MAX_OPERATIONS;
    this.operations = new OperationIndex(this.maxOperations, this.store);
    this.ends = options.rules.flatMap((rule, index) => (rule.end !== undefined ? [{ rule, index }] : []));
    this.capture = options.capture;
    this.maxResources = options.maxResources ?? DEFAULT_MAX_RESOURCES;
    this.ruleById = new Map(options.rules.map((r) => [r.meta.id, r]));
    this.slotOf = new Int32Array(options.rules.length).fill(-1);
    this.maxFindings = options.maxFindings ?? DEFAULT_MAX_FINDINGS;
    this.onFinding = options.onFinding;
    this.lines = options.lines;
    if (options.partition === true) {
      this.orderKeys = new Map();
      this.firstKeys = new Float64Array(3 * 1024);
      this.deadlineOf = new WeakMap();
      // Per slot of the operation index: where its entry was made (NaN: never).
      this.operationMade = new Float64Array(Math.max(1, this.maxOperations)).fill(NaN);
      if (options.leaseScoped === true) this.grantAt = new Map();
      this.foreignRules = options.rules.flatMap((rule, index) => (rule.onForeign !== undefined ? [{ rule, index, handle: rule.onForeign, slot: false }] : []));
    }
    this.holders = options.leaseScoped === true ? new LeaseHolders(options.maxLeaseHolders ?? DEFAULT_MAX_LEASE_HOLDERS) : undefined;
    this.handlers = dispatchOf(options.rules);
    this.hot = this.store.view(-1);
    const self = this;
    const serviceOf = options.serviceOf;
    this.context = {
      get timeline() {
        return self.currentTimeline!;
      },
      get resourceId() {
        return self.currentTimeline!.id;
      },
      options: this.options,
      operations: this.operations,
      service(event: LockEvent) {
        return serviceFacts(serviceOf?.(event.file));
      },
      report(input: ReportInput) {
        self.report(input);
      },
      state<T>(create: () => T): T {
        const rule = self.currentRule!;
        let s = self.ruleStates.get(rule) as T | undefined;
        if (s === undefined) self.ruleStates.set(rule, (s = create()));
        return s;
      },
      slot() {
        const rule = self.currentRule!;
        let i = self.slotOf[self.currentIndex]!;
        if (i < 0) {
          if (rule.state === undefined) throw new Error(`rule ${rule.meta.id} asks for its slot but has no state()`);
          i = self.slotOf[self.currentIndex] = self.slotsGiven++;
        }
        const all = self.store.slots;
        const id = self.currentTimeline!.id;
        let slots = all.get(id);
        if (slots === undefined || i >= slots.length) {
          // Only as long as the highest slot held.
          const longer = new Array<unknown>(i + 1);
          if (slots !== undefined) for (let j = 0; j < slots.length; j++) longer[j] = slots[j];
          all.set(id, (slots = longer));
        }
        let s = slots[i];
        if (s === undefined) s = slots[i] = rule.state!();
        return s;
      },
      peek() {
        return self.slotAt(self.currentIndex, self.currentTimeline!.id);
      },
    };
  }

  push(event: LockEvent): void {
    this.items++;
    this.madeHere = 0;
    if (event.ts > this.globalTime) this.globalTime = event.ts;
    if (event.ts > this.streamTime) {
      this.streamTime = event.ts;
      if (this.pendingHead < this.pending.length && this.deadlines[this.pendingHead]! < event.ts) this.emitDue(event.ts);
    }
    if (isLeaseScoped(event)) return this.pushLeaseScoped(event);
    if (event.type === 'write') this.writeEvents++;
    // Consecutive events often name the same resource: one comparison instead of a map lookup.
    let id = this.lastResource === event.resource ? this.lastId : this.store.idOf(event.resource);
    if (id === -1) {
      if (this.store.size >= this.maxResources) {
        this.untrackedEvents++;
        this.firstUntracked ??= event.resource;
        return;
      }
      id = this.store.add(detach(event.resource));
      if (this.firstKeys !== undefined) this.noteFirst();
    }
    this.lastResource = event.resource;
    this.lastId = id;
    const timeline = this.hot;
    timeline.id = id;
    const d = this.handlers.get(event.type);
    if (d !== undefined) {
      // The list for the event's result (the last one: any result the gates do not name).
      const results = d.results;
      let k = 0;
      while (k < results.length && results[k] !== event.result) k++;
      const list = d.lists[k]!;
      if (list.length > 0) this.handle(list, event, timeline);
    }
    if (event.type === 'write' && event.operationId !== undefined) this.track(timeline, event);
    this.capture?.add(event, timeline.findings > 0);
    timeline.apply(event);
    if (this.holders !== undefined && event.leaseId !== undefined && event.type !== 'write' && event.type !== 'keepalive') this.index(timeline, event);
    // No live lease left: the resource's leases and window shrink to a summary record until its next event needs them.
    this.store.compact(id);
  }

  /**
   * A lease-scoped event: one copy of it, naming the resource, for each resource whose lease of
   * that id is live (no end logged yet), in the order the lease was granted there.
   */
  private pushLeaseScoped(event: LockEvent): void {
    this.leaseScopedEvents++;
    const holds = (t: ResourceTimeline | undefined): t is ResourceTimeline => {
      // A summary record's leases have all ended: not read back for this.
      if (t === undefined || this.store.isCompact(t.id)) return false;
      const lease = t.findLease(event);
      return lease !== undefined && lease.end === undefined;
    };
    const targets: ResourceTimeline[] = [];
    if (event.leaseId !== undefined) {
      if (this.holders !== undefined) {
        for (const r of this.holders.resources(event.leaseId)) {
          const t = this.timeline(r);
          if (holds(t)) targets.push(t);
        }
      } else for (let id = 0; id < this.store.size; id++) {
        const t = this.store.view(id);
        if (holds(t)) targets.push(t);
      }
    }
    if (targets.length === 0) return;
    this.leaseScopedApplied++;
    for (const t of targets) {
      // Partition runs: each copy is ordered by where its lease was granted on the resource, as a
      // single run applies the copies (the lease's grants, oldest first).
      if (this.grantAt !== undefined) this.copyAt = this.grantAt.get(`${event.leaseId}\u0000${t.resource}`);
      this.push({ ...event, resource: t.resource });
    }
    this.copyAt = undefined;
  }

  /** Keep the lease index: a grant adds the resource to its lease, a logged end removes it. */
  private index(timeline: ResourceTimeline, event: LockEvent): void {
    const lease = timeline.findLease(event);
    const holders = this.holders!;
    if (event.type === 'acquire') {
      if (event.result === 'granted' && lease !== undefined) {
        const key = `${lease.leaseId!}\u0000${timeline.resource}`;
        if (this.grantAt !== undefined && !holders.resources(lease.leaseId!).includes(timeline.resource)) this.grantAt.set(key, [this.atTs, this.atFrom, this.atSeq]);
        holders.add(lease.leaseId!, timeline.resource);
        if (holders.size > this.holdersPeak) this.holdersPeak = holders.size;
        // Pairs the index forgot (past its bound) keep no place either.
        if (this.grantAt !== undefined && this.grantAt.size > 2 * holders.size + 1024) this.grantAt.clear();
      }
    } else if (lease === undefined || lease.end !== undefined) {
      holders.delete(event.leaseId!, timeline.resource);
      this.grantAt?.delete(`${event.leaseId!}\u0000${timeline.resource}`);
    }
  }

  /** (lease, resource) pairs forgotten by the lease index, past its bound. */
  get leaseHoldersForgotten(): number {
    return this.holders?.forgotten ?? 0;
  }

  /**
   * The operation index's entry. In a partition run, also whether a single run could have
   * forgotten it: its index holds the operations of every partition, first in, first out, so an
   * entry is safe while fewer lines than the index holds have been placed in the merge since it
   * was made.
   */
  private touchOperation(timeline: ResourceTimeline, write: LockEvent): number {
    const ops = this.operations;
    const before = ops.made;
    const entry = ops.touch(timeline.id, write);
    const made = this.operationMade;
    if (made !== undefined) {
      // An entry's slot is reused once the entry is forgotten: a new entry is made anew.
      const at = ops.made !== before ? NaN : made[entry]!;
      if (at !== at) made[entry] = this.items;
      else if (this.items - at >= this.maxOperations) this.noteInexact(`an operation was seen again after more than ${this.maxOperations} lines: a single run, whose index holds the operations of every partition, may have forgotten it`);
    }
    return entry;
  }

  /** Partition runs: a line of another partition (or one of this partition's that is no event), in its place in the merge. */
  pushForeign(event: LockEvent): void {
    this.items++;
    if (event.ts > this.globalTime) this.globalTime = event.ts;
    if (this.foreignRules.length > 0) this.handle(this.foreignRules, event, undefined);
  }

  /** Partition runs: `n` lines of other partitions folded out of the merge (PartitionFilter.fold), the highest of their times `max`, in their place. */
  skipForeign(n: number, max: number): void {
    this.items += n;
    if (max > this.globalTime) this.globalTime = max;
  }

  /** The slot of rule `index` for resource `id` (context.peek()), undefined while it has none. */
  private slotAt(index: number, id: number): unknown {
    const i = this.slotOf[index]!;
    return i < 0 ? undefined : this.store.slots.get(id)?.[i];
  }

  /** Run the handlers of `list` for the event, on the timeline (none for another partition's line). */
  private handle(list: readonly HandlerEntry[], event: LockEvent, timeline: ResourceTimeline | undefined): void {
    this.currentTimeline = timeline;
    for (let i = 0; i < list.length; i++) {
      const h = list[i]!;
      // Gated on the rule's slot (Rule.when): skipped while the rule has none for this resource (peek() would give none).
      if (h.slot && this.slotAt(h.index, timeline!.id) === undefined) continue;
      this.currentRule = h.rule;
      this.currentIndex = h.index;
      h.handle(event, this.context);
    }
    this.currentRule = undefined;
  }

  /** Count one reason why a partition's report may differ from a single run's. */
  noteInexact(reason: string): void {
    this.inexact.set(reason, (this.inexact.get(reason) ?? 0) + 1);
  }

  /** Partition runs: where a listed finding was made, to order the partitions' findings as one run would (see merge). */
  orderOf(f: Finding): readonly number[] | undefined {
    return this.orderKeys?.get(f);
  }

  private noteFirst(): void {
    let keys = this.firstKeys!;
    const at = 3 * this.created++;
    if (at + 3 > keys.length) {
      const bigger = new Float64Array(keys.length * 2);
      bigger.set(keys);
      keys = this.firstKeys = bigger;
    }
    keys[at] = this.atTs;
    keys[at + 1] = this.atFrom;
    keys[at + 2] = this.atSeq;
  }

  /** Index writes by operationId: the first accepted decision, and worker views of the same write. */
  private track(timeline: ResourceTimeline, write: LockEvent): void {
    const ops = this.operations;
    const entry = this.touchOperation(timeline, write);
    if (timeline.isDecision(write)) {
      if (write.result === 'accepted') ops.accept(entry, write);
      // A worker's line judged for lack of a resource log is still the worker's view, should the resource log the same write later.
      if (write.observer === 'worker') ops.addView(entry, write);
      return;
    }
    if (!ops.addView(entry, write)) return;
    for (const f of ops.findingsAt(entry)) {
      if (!this.waiting.has(f)) {
        // A single run's deadline could have been later: it might still have waited for this view.
        if ((this.deadlineOf?.get(f) ?? 0) < 0) this.noteInexact('a worker view came after its finding was emitted, where a single run may still have waited for it (input out of timestamp order)');
        continue;
      }
      // Lines of other partitions past the deadline: a single run may have emitted it already.
      const d = this.deadlineOf?.get(f);
      if (d !== undefined && this.globalTime > Math.abs(d)) this.noteInexact('a worker view joined a finding that a single run may have emitted before it (input out of timestamp order)');
      addEvidence(f, { event: write, role: viewRole(write) }, this.lines);
      const rule = this.ruleById.get(f.rule);
      const next = rule?.onView?.(f, write);
      if (next !== undefined) Object.assign(f, renderMessage(rule!, next.messageId, next.data));
    }
  }

  /** Emit the waiting findings whose stream time has passed, in the order they were made. */
  private emitDue(now: number): void {
    while (this.pendingHead < this.pending.length && this.deadlines[this.pendingHead]! < now) this.emitHead();
    if (this.pendingHead === this.pending.length && this.pendingHead > 0) {
      this.pending.length = 0;
      this.deadlines.length = 0;
      this.pendingHead = 0;
    } else if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
      // Findings keep waiting behind one another: drop the emitted ones from the front.
      this.pending.splice(0, this.pendingHead);
      this.deadlines.splice(0, this.pendingHead);
      this.pendingHead = 0;
    }
  }

  private emitHead(): void {
    const f = this.pending[this.pendingHead]!;
    this.pending[this.pendingHead++] = undefined as unknown as Finding;
    this.waiting.delete(f);
    freezeFinding(f);
    this.findings.push(f);
    this.onFinding?.(f);
  }

  /** Findings made and not yet emitted. */
  get waitingFindings(): number {
    return this.pending.length - this.pendingHead;
  }

  /** Emit every waiting finding now (live input gone quiet; the end of input). */
  flush(): void {
    this.emitDue(Infinity);
  }

  /** End of input: rules that wait (e.g. out a clock-skew window) report now. */
  finish(): void {
    this.ends.forEach(({ rule, index }, k) => {
      this.currentRule = rule;
      this.currentIndex = index;
      this.ending = k;
      this.endingTimeline = 0;
      const t = this.hot;
      for (let id = 0; id < this.store.size; id++) {
        t.id = id;
        this.currentTimeline = t;
        this.madeHere = 0;
        rule.end!(this.context);
        this.store.compact(id);
        this.endingTimeline++;
      }
    });
    this.currentRule = undefined;
    this.flush();
  }

  get resourceCount(): number {
    return this.store.size;
  }

  /** A view of a resource's state (see timeline.ts). */
  timeline(resource: string): ResourceTimeline | undefined {
    const id = this.store.idOf(resource);
    return id === -1 ? undefined : this.store.view(id);
  }

  /** Per-resource summaries, sorted by resource key. */
  resources(): ResourceSummary[] {
    const list = this.resourceList();
    const out = new Array<ResourceSummary>(list.length);
    let i = 0;
    for (const r of list) out[i++] = r;
    return out;
  }

  /**
   * The same summaries, sorted by resource key, made one at a time as they are walked (each walk
   * makes them again, from the state as it is then): a report of a million resources is written
   * without holding a million summaries. Only the order is kept (an id per resource). Walk it once
   * the input has ended (after finish()): events pushed later change what a walk gives.
   */
  resourceList(): ResourceSummaries & { readonly [PLAIN_SUMMARIES]: true; [OWN_DIGEST](): ReadinessDigest } {
    const store = this.store;
    const n = store.size;
    // The names sorted first (the default sort: UTF-16 code units, as `<` compares them; names are
    // distinct), then each one's id, so that a walk finds each summary's state by id.
    const names = new Array<string>(n);
    for (let id = 0; id < n; id++) names[id] = store.name(id);
    names.sort();
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) ids[i] = store.idOf(names[i]!);
    return {
      length: n,
      // Each summary is summarise()'s object literal.
      [PLAIN_SUMMARIES]: true as const,
      *[Symbol.iterator](): Generator<ResourceSummary> {
        const t = store.view(0);
        for (let i = 0; i < n; i++) {
          t.id = ids[i]!;
          yield summarise(t);
        }
      },
      // The readiness of each, and a summary only of the few the reasons name.
      [OWN_DIGEST](): ReadinessDigest {
        const d = new DigestBuilder();
        const t = store.view(0);
        for (let i = 0; i < n; i++) {
          t.id = ids[i]!;
          if (d.add(readinessOf(t).readiness)) d.name(summarise(t));
        }
        return d.digest();
      },
    };
  }

  private report(input: ReportInput): void {
    const rule = this.currentRule!;
    const timeline = this.currentTimeline!;
    const severity: Severity = input.severity ?? rule.meta.severity;
    let certainty: Certainty;
    let uncertainty: Uncertainty | undefined = input.uncertainty;
    if (input.certainty !== undefined) certainty = input.certainty;
    else {
      const o = this.orderCertainty(input.order);
      certainty = o.certainty;
      uncertainty ??= o.uncertainty;
    }
    if (input.inferred && certainty === 'definite') {
      certainty = 'likely';
      uncertainty ??= {
        kind: 'inferred-end',
        decide: "it rests on a lease end inferred as last renewal + ttl; log the lease's end (expire, revoke or release) to make it definite",
      };
    }
    if (certainty === 'definite') uncertainty = undefined;
    timeline.findings++;
    if (severity === 'error' && certainty !== 'possible') timeline.rareFacts().errorFindings++;
    if (severity === 'error' && certainty === 'possible') timeline.rareFacts().possibleErrorFindings++;
    this.bySeverity[severity]++;
    if (certainty === 'possible') this.possibleBySeverity[severity]++;
    this.byRule[rule.meta.id] = (this.byRule[rule.meta.id] ?? 0) + 1;
    // The id comes from the finding's content and its place among its resource's findings
    // (findingId), never from the order of findings of other resources: a single run, a merge of
    // partitions and --jobs give the same ids.
    const id = findingId(rule.meta.id, timeline.resource, timeline.findings);
    const made = this.madeHere++;
    // Where it was made: at an event (its place in the merged input), or at the end of input (the
    // end rule's place, the resource's first event's place).
    let key: number[] | undefined;
    if (this.orderKeys !== undefined) {
      if (this.ending === -1) {
        const g = this.copyAt;
        key = g === undefined ? [0, this.atTs, this.atFrom, this.atSeq, -1, -1, -1, made] : [0, this.atTs, this.atFrom, this.atSeq, g[0]!, g[1]!, g[2]!, made];
      }
      else {
        const k = this.firstKeys!;
        const j = 3 * this.endingTimeline;
        key = [1, this.ending, k[j]!, k[j + 1]!, k[j + 2]!, made];
      }
      if (this.byRule[rule.meta.id] === 1) this.firstByRule.set(rule.meta.id, key);
    }
    // The reason names one possible error: the first, or the first about an accepted stale write
    // (also when it is past --max-findings, so that a partition, which lists others, says the same).
    if (severity === 'error' && certainty === 'possible' && (timeline.firstUncertain === undefined || (!isStaleRule(timeline.firstUncertain.rule) && isStaleRule(rule.meta.id)))) {
      timeline.rareFacts().firstUncertain = { finding: id, rule: rule.meta.id, decide: uncertainty?.decide === undefined ? undefined : detach(uncertainty.decide) };
    }
    if (this.seq >= this.maxFindings) {
      this.findingsOmitted++;
      return;
    }
    this.seq++;
    const finding: Finding = {
      id,
      rule: rule.meta.id,
      severity,
      certainty,
      resource: timeline.resource,
      ...renderMessage(rule, input.messageId, input.data),
      symptom: rule.meta.symptom,
      cause: rule.meta.cause,
      check: rule.meta.check,
      action: rule.meta.action,
      evidence: input.evidence.map((r) => toEvidence(r, this.lines)),
    };
    if (input.details !== undefined) finding.details = input.details;
    if (uncertainty !== undefined) finding.uncertainty = uncertainty;
    if (key !== undefined) this.orderKeys!.set(finding, key);
    const subject = input.subject ?? input.evidence[input.evidence.length - 1]?.event;
    const at = input.evidence.findIndex((r) => r.event === subject && r.inferredEnd === undefined);
    if (at !== -1) finding.evidence[at]!.decisive = true;
    // Worker views of the write may still come from other sources: wait out the clock-skew bound.
    let deadline = -Infinity;
    if (subject !== undefined && subject.operationId !== undefined && subject.type === 'write') {
      const entry = this.touchOperation(timeline, subject);
      this.operations.link(entry, finding);
      for (const view of this.operations.viewsAt(entry)) addEvidence(finding, { event: view, role: viewRole(view) }, this.lines);
      deadline = Math.max(this.streamTime, subject.ts) + this.options.clockSkewMs;
      this.waiting.add(finding);
      // A single run's stream time may be ahead of this partition's (input out of timestamp order).
      if (this.deadlineOf !== undefined) this.deadlineOf.set(finding, this.globalTime > Math.max(this.streamTime, subject.ts) && this.ending === -1 ? -deadline : deadline);
    }
    this.pending.push(finding);
    this.deadlines.push(deadline);
    this.emitDue(this.streamTime);
  }

  /**
   * Certainty of an order between two events, and what would decide it. Definite within one clock
   * domain (`source`): one file keeps its own order, and files of one domain share a clock, except
   * when their timestamps are equal (the order is then only the merge's tie-break). Across domains:
   * likely when the timestamps are further apart than the skew bound, possible when closer.
   */
  private orderCertainty(order: readonly [LockEvent, LockEvent] | undefined): { certainty: Certainty; uncertainty?: Uncertainty } {
    if (order === undefined) return { certainty: 'definite' };
    const [a, b] = order;
    const gapMs = b.ts - a.ts;
    const skew = this.options.clockSkewMs;
    const between = [a, b].map((e) => ({ file: e.file, line: e.line, source: e.source, ts: isoOf(e.ts) }));
    const what = a.type === b.type ? `the two ${a.type}s` : `the ${a.type} and the ${b.type}`;
    if (a.source === b.source) {
      if (a.file === b.file || gapMs !== 0) return { certainty: 'definite' };
      return {
        certainty: 'possible',
        uncertainty: {
          kind: 'same-timestamp',
          between,
          gapMs: 0,
          clockSkewMs: skew,
          decide: `${what} carry the same timestamp in different files (${a.file}, ${b.file}) of one clock domain (${a.source}), so their order is only the merge's tie-break; with finer timestamps, or both in one file, this finding would be definite`,
        },
      };
    }
    const ms = fmtMs(gapMs);
    const likely = gapMs > skew;
    const decide = likely
      ? `more than --clock-skew ${fmtMs(skew)} ms; with both in one clock domain (the same source) this finding would be definite`
      : `within --clock-skew ${fmtMs(skew)} ms; ${gapMs > 0 ? `with a clock-skew bound under ${ms} ms, or ` : ''}with both files in one clock domain (the same source), this finding would be definite`;
    return {
      certainty: likely ? 'likely' : 'possible',
      uncertainty: { kind: 'clock-skew', between, gapMs, clockSkewMs: skew, decide: `${what} are ${ms} ms apart in different clock domains (${a.source}, ${b.source}), ${decide}` },
    };
  }
}


/** A rule's handler for one event type, and whether it is gated on the rule's slot (Rule.when). */
interface HandlerEntry {
  readonly rule: Rule;
  readonly index: number;
  readonly handle: Handler;
  readonly slot: boolean;
}

/**
 * The handlers of one event type: `lists[k]` for events whose result is `results[k]`, and the last
 * list for any other result; `results` are the ones the type's gates name (none when no handler
 * of the type is gated on results: one list for all).
 */
interface Dispatch {
  readonly results: readonly string[];
  readonly lists: readonly (readonly HandlerEntry[])[];
}

/** Each event type's dispatch (the rules' order kept in every list): an index of which handlers each event can need. */
function dispatchOf(rules: readonly Rule[]): Map<string, Dispatch> {
  for (const rule of rules) checkGates(rule);
  const out = new Map<string, Dispatch>();
  for (const type of EVENT_TYPES) {
    const entries: { entry: HandlerEntry; results: readonly string[] | undefined }[] = [];
    rules.forEach((rule, index) => {
      const handle = rule.on[type];
      if (handle === undefined) return;
      const gate = rule.when?.[type];
      entries.push({ entry: { rule, index, handle, slot: gate?.slot === true }, results: gate?.results });
    });
    if (entries.length === 0) continue;
    const results = [...new Set(entries.flatMap((e) => e.results ?? []))];
    const lists = [...results, undefined].map((result) => entries.filter((e) => e.results === undefined || (result !== undefined && e.results.includes(result))).map((e) => e.entry));
    out.set(type, { results, lists });
  }
  return out;
}

/**
 * A rule's handlers and gates name event types, and a gate names results of its type and guards a
 * handler the rule has: a rule written in JavaScript could name anything, and a handler or gate
 * that never runs would go unnoticed (a gate with no result would skip every event).
 */
function checkGates(rule: Rule): void {
  const id = rule.meta?.id ?? '(a rule with no meta.id)';
  const types: readonly string[] = EVENT_TYPES;
  for (const type of Object.keys(rule.on)) {
    if (!types.includes(type)) throw new OptionError('rules', `rule ${id} has a handler for "${type}", which is not an event type (${EVENT_TYPES.join(', ')})`);
  }
  for (const [type, gate] of Object.entries(rule.when ?? {})) {
    if (!types.includes(type)) throw new OptionError('rules', `rule ${id} has a gate (when) for "${type}", which is not an event type (${EVENT_TYPES.join(', ')})`);
    if (rule.on[type as EventType] === undefined) throw new OptionError('rules', `rule ${id} has a gate (when) for "${type}" but no handler for it`);
    if (gate === undefined) continue;
    if (gate.slot !== undefined && gate.slot !== true) throw new OptionError('rules', `rule ${id}: when.${type}.slot must be true or left out`);
    if (gate.results === undefined) continue;
    const known = RESULTS[type as EventType];
    if (!Array.isArray(gate.results) || gate.results.length === 0) throw new OptionError('rules', `rule ${id}: when.${type}.results must name at least one result (${known.join(', ')})`);
    for (const r of gate.results) {
      if (!known.includes(r)) throw new OptionError('rules', `rule ${id}: when.${type}.results names "${String(r)}", which is not a result of ${type} (${known.join(', ')})`);
    }
  }
}

/** A finding's message, id and data, rendered from one of the rule's templates. */
function renderMessage(rule: Rule, id: string, data: MessageData | undefined): { message: string; messageId: string; data: MessageData } {
  const template = Object.prototype.hasOwnProperty.call(rule.messages, id) ? rule.messages[id] : undefined;
  if (template === undefined) throw new Error(`rule ${rule.meta.id} reported message "${id}", which is not one of its messages`);
  const copy: Record<string, string | number> = { ...data };
  return { message: formatMessage(template, copy), messageId: `${rule.meta.id}/${id}`, data: copy };
}

function fmtMs(ms: number): string {
  return String(Math.round(ms * 1000) / 1000);
}

function viewRole(view: LockEvent): string {
  return `worker's view: ${view.result}${view.fenceToken !== undefined ? ` with token ${view.fenceToken}` : ' with no token'}`;
}

/**
 * A finding, once emitted, is a value: frozen with its evidence and details, so nothing can change
 * it. Its strings are detached first: a message or an owner cut from a long line would otherwise
 * keep the whole line alive as long as the finding (see detach()).
 */
function freezeFinding(f: Finding): void {
  detachAll(f);
  for (const e of f.evidence) {
    if (e.fields !== undefined) Object.freeze(e.fields);
    Object.freeze(e);
  }
  Object.freeze(f.evidence);
  if (f.details !== undefined) deepFreeze(f.details);
  if (f.data !== undefined) deepFreeze(f.data);
  if (f.uncertainty !== undefined) deepFreeze(f.uncertainty);
  Object.freeze(f);
}

function detachAll(o: Record<string, unknown> | unknown[] | object): void {
  const bag = o as Record<string, unknown>;
  for (const k of Object.keys(bag)) {
    const v = bag[k];
    if (typeof v === 'string') bag[k] = detach(v);
    else if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) detachAll(v);
  }
}

function deepFreeze(v: unknown): void {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
}

/** Add an evidence item unless the same line is already there in the same role. */
function addEvidence(finding: Finding, ref: EvidenceRef, lines: LineReader | undefined): void {
  const item = toEvidence(ref, lines);
  if (finding.evidence.some((e) => e.file === item.file && e.line === item.line && e.role === item.role)) return;
  finding.evidence.push(item);
}

/** An evidence item of the report from a reference to an event (its line read back if need be, with `lines`). */
export function toEvidence(ref: EvidenceRef, lines?: LineReader): EvidenceItem {
  const e = ref.event;
  const inferred = ref.inferredEnd !== undefined;
  const item: EvidenceItem = {
    role: ref.role,
    file: e.file,
    line: e.line,
    source: e.source,
    ts: isoOf(inferred ? ref.inferredEnd! : e.ts),
    type: inferred ? 'expire' : e.type,
    result: inferred ? 'expired' : e.result,
    observer: inferred ? 'authority' : e.observer,
  };
  if (inferred) item.inferred = true;
  if (e.ownerId !== undefined) item.ownerId = e.ownerId;
  if (e.leaseId !== undefined) item.leaseId = e.leaseId;
  if (e.operationId !== undefined) item.operationId = e.operationId;
  if (e.fenceToken !== undefined) item.fenceToken = e.fenceToken.toString();
  if (e.ttlMs !== undefined && !inferred) item.ttlMs = e.ttlMs;
  if (!inferred) {
    const { fields, unavailable } = fieldsOf(e, lines);
    if (fields !== undefined) item.fields = fields;
    if (unavailable !== undefined) item.lineUnavailable = unavailable;
  }
  return item;
}

function summarise(t: ResourceTimeline): ResourceSummary {
  const rare = t.rare;
  const { readiness, reason } = readinessOf(t);
  // The token's double, when it is one: small tokens have one text each, without a BigInt.
  const key = t.highestTokenKey;
  return {
    resource: t.resource,
    readiness,
    reason,
    highestAcceptedToken: Number.isNaN(key) ? null : key >= 0 && key < SMALL_TOKEN_TEXTS ? smallTokenText(key) : t.highestToken!.toString(),
    events: t.events,
    writes: writesOf(t.accepted, t.rejectedStaleFence, t.rejectedOther, t.withoutToken),
    staleWrites: rare?.staleWrites ?? 0,
    oldHandleReleases: rare?.oldHandleReleases ?? 0,
    findings: t.findings,
  };
}

/*
 * A report lists every resource (a million of them, at the resource limit): a summary's parts
 * that most resources share are made once. The text of a small token is one string per value,
 * and a resource's write counts, frozen, are one object per combination of small counts.
 */
const SMALL_TOKEN_TEXTS = 4096;
const tokenTexts: (string | undefined)[] = [];

function smallTokenText(n: number): string {
  return (tokenTexts[n] ??= String(n));
}

type WriteCounts = ResourceSummary['writes'];
const SMALL_COUNT = 8;
const sharedWrites: (WriteCounts | undefined)[] = [];

/** The write counts, frozen: one shared object for each combination of counts below SMALL_COUNT. */
function writesOf(accepted: number, rejectedStaleFence: number, rejectedOther: number, withoutToken: number): WriteCounts {
  const small = accepted < SMALL_COUNT && rejectedStaleFence < SMALL_COUNT && rejectedOther < SMALL_COUNT && withoutToken < SMALL_COUNT;
  if (!small) return Object.freeze({ accepted, rejectedStaleFence, rejectedOther, withoutToken });
  const key = ((accepted * SMALL_COUNT + rejectedStaleFence) * SMALL_COUNT + rejectedOther) * SMALL_COUNT + withoutToken;
  return (sharedWrites[key] ??= Object.freeze({ accepted, rejectedStaleFence, rejectedOther, withoutToken }));
}

const UNTESTED_REASON = 'no stale request was seen, so the logs do not show whether old tokens are rejected';

/** The article's readiness criterion, per resource (README "Readiness"). */
export function readinessOf(t: ResourceTimeline): { readiness: Readiness; reason: string } {
  // No rare fact (most resources): no finding, no stale request seen.
  if (t.rare === undefined) return { readiness: 'untested', reason: UNTESTED_REASON };
  if (t.errorFindings > 0) {
    return { readiness: 'violated', reason: `${plural(t.errorFindings, 'definite or likely error finding')} on this resource` };
  }
  if (t.possibleErrorFindings > 0) {
    const u = t.firstUncertain;
    const which = u === undefined ? '' : ` (${u.finding} ${u.rule})`;
    return {
      readiness: 'inconclusive',
      reason: `${plural(t.possibleErrorFindings, 'error finding')}${which} only possible${u?.decide !== undefined ? `: ${u.decide}` : ''}`,
    };
  }
  if (t.staleWritesAccepted > 0) {
    // Seen by the state, reported by no rule (rules deselected): still not a pass.
    const s = t.firstAcceptedStale!;
    return {
      readiness: 'inconclusive',
      reason: `${plural(t.staleWritesAccepted, 'stale write')} accepted (${staleText(s)}) but judged by no rule that was run`,
    };
  }
  if (t.oldHandleReleasesSucceeded > 0) {
    return {
      readiness: 'inconclusive',
      reason: `${plural(t.oldHandleReleasesSucceeded, 'old-handle release')} succeeded while another lease held the resource, but judged by no rule that was run`,
    };
  }
  if (t.staleWrites === 0 && t.oldHandleReleases === 0) return { readiness: 'untested', reason: UNTESTED_REASON };
  const notExplicit = t.staleWrites - t.staleWritesExplicit - t.staleWritesAccepted;
  if (notExplicit > 0) {
    const s = t.firstNotExplicit!;
    return {
      readiness: 'unconfirmed',
      reason: `${plural(notExplicit, 'stale write')} got ${answers(t.notExplicitResults, notExplicit)} (${notExplicit > 1 ? 'the first: ' : ''}${staleText(s)}) instead of an explicit rejected-stale-fence, so the logs do not show the token check`,
    };
  }
  const parts: string[] = [];
  if (t.staleWrites > 0) parts.push(`${plural(t.staleWrites, 'stale write')} got rejected-stale-fence`);
  if (t.oldHandleReleases > 0) parts.push(`${plural(t.oldHandleReleases, 'old-handle release')} rejected`);
  return { readiness: 'verified', reason: parts.join('; ') };
}

/** "a timeout", "timeouts", "a timeout or an error"… from the generic answers seen. */
function answers(results: ReadonlySet<string> | undefined, n: number): string {
  const one: Record<string, string> = { error: 'an error', timeout: 'a timeout', rejected: 'a plain rejected' };
  const many: Record<string, string> = { error: 'errors', timeout: 'timeouts', rejected: 'plain rejected' };
  const list = [...(results ?? [])].sort();
  if (list.length === 1) return n === 1 ? one[list[0]!] ?? list[0]! : many[list[0]!] ?? list[0]!;
  return list.map((r) => one[r] ?? r).join(' or ');
}

function staleText(s: { token?: bigint; highest?: bigint }): string {
  return s.token === s.highest ? `token ${formatToken(s.token)} again, from another lease` : `token ${formatToken(s.token)} after token ${formatToken(s.highest)}`;
}

