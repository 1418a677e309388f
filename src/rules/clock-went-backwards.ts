import type { LockEvent } from '../model/event.js';
import { bounded, detach, keep } from '../model/event.js';
import { formatDuration } from '../model/time.js';
import { defineRule, type EvidenceRef, type Handler, type RuleContext } from './types.js';

/**
 * Timestamps of one clock domain (`source`) went backwards by more than the clock-skew bound.
 * Within one file the order is the file's, so each event is compared with the previous event of
 * the same input file and source; steps are counted per source and reported once per source, at the end of
 * input, under the resource of the first step's line.
 */
export const clockWentBackwards = defineRule<undefined>({
  meta: {
    id: 'clock-went-backwards',
    severity: 'warning',
    title: "Timestamps in one clock domain went backwards by more than the clock-skew bound",
    symptom: 'A line is timestamped earlier than the line before it in the same file',
    cause: 'The host clock was stepped back (NTP correction, VM restore, manual set), or lines of two clocks share one source',
    check: 'Compare each line with the previous line of the same file, per clock domain, against --clock-skew',
    action: 'Log from a clock that is only slewed, not stepped; give each host its own source; durations and lease ends across the step are not to be trusted',
  },
  messages: {
    once: 'the clock of {source} went backwards once by more than --clock-skew {skew} (largest step {largestStep}; at {first}): its lines are taken in file order, but durations, TTLs and lease ends across a step are wrong',
    firstLargest:
      'the clock of {source} went backwards {count} times by more than --clock-skew {skew} (largest step {largestStep}; at {first}): its lines are taken in file order, but durations, TTLs and lease ends across a step are wrong',
    largestLater:
      'the clock of {source} went backwards {count} times by more than --clock-skew {skew} (largest step {largestStep}; first at {first}; the largest step at {largest}): its lines are taken in file order, but durations, TTLs and lease ends across a step are wrong',
  },
  on: {
    acquire: check,
    keepalive: check,
    expire: check,
    revoke: check,
    release: check,
    write: check,
  },
  // Partition runs: the lines of other partitions are steps of the same clocks.
  onForeign: check,
  end(context) {
    const state = context.state(create);
    // (Most runs have none: no resource name asked for.)
    if (state.byResource.size === 0) return;
    const list = state.byResource.get(context.timeline.resource);
    if (list === undefined) return;
    for (const s of list) report(context, s);
  },
});

/** (source, file) pairs followed at most. */
export const MAX_DOMAINS = 10_000;

interface Step {
  readonly before: LockEvent;
  readonly after: LockEvent;
  readonly ms: number;
}

interface SourceSteps {
  readonly source: string;
  count: number;
  readonly first: Step;
  largest: Step;
}

/** A clock domain of one input file: its previous event. */
interface Domain {
  readonly source: string;
  readonly file: string;
  event: LockEvent;
}

interface State {
  /** The previous event of each clock domain in each input file: by file, then by source. */
  readonly previous: Map<string, Map<string, Domain>>;
  /** The domains followed, in the order they were first seen (the first let go past MAX_DOMAINS). */
  readonly order: Set<Domain>;
  /** The last domain used: consecutive events mostly come from one file and source. */
  lastEntry: Domain | undefined;
  readonly sources: Map<string, SourceSteps>;
  /** Sources by the resource their first step is filed under. */
  readonly byResource: Map<string, SourceSteps[]>;
}

function create(): State {
  return { previous: new Map(), order: new Set(), lastEntry: undefined, sources: new Map(), byResource: new Map() };
}

/** Let go of the domain followed longest (see MAX_DOMAINS). */
function letGoOldest(state: State): void {
  const d = state.order.values().next().value!;
  state.order.delete(d);
  const domains = state.previous.get(d.file)!;
  domains.delete(d.source);
  if (domains.size === 0) state.previous.delete(d.file);
}

function check(...[event, context]: Parameters<Handler>): void {
  const state = context.state(create);
  // One file may interleave several clock domains: a step between two of them is skew, not a step back.
  const last = state.lastEntry;
  // (Compared with the last event's own strings, mostly the very same objects as this one's.)
  let entry = last !== undefined && last.event.file === event.file && last.event.source === event.source ? last : state.previous.get(event.file)?.get(event.source);
  if (entry === undefined) {
    // Bounded: past MAX_DOMAINS (source, file) pairs the oldest is let go (a hostile log can give
    // every line its own source); a step in a domain let go is then not seen.
    if (state.order.size >= MAX_DOMAINS) letGoOldest(state);
    entry = { source: detach(event.source), file: event.file, event: bounded(event) };
    let domains = state.previous.get(event.file);
    if (domains === undefined) state.previous.set(detach(event.file), (domains = new Map()));
    domains.set(entry.source, entry);
    state.order.add(entry);
    state.lastEntry = entry;
    return;
  }
  state.lastEntry = entry;
  const before = entry.event;
  entry.event = bounded(event);
  const ms = before.ts - event.ts;
  if (ms <= context.options.clockSkewMs) return;
  let s = state.sources.get(event.source);
  if (s === undefined) {
    const step = { before: keep(before), after: keep(event), ms };
    s = { source: detach(event.source), count: 0, first: step, largest: step };
    state.sources.set(s.source, s);
    let list = state.byResource.get(event.resource);
    if (list === undefined) state.byResource.set(detach(event.resource), (list = []));
    list.push(s);
  } else if (ms > s.largest.ms) {
    s.largest = { before: keep(before), after: keep(event), ms };
  }
  s.count++;
}

function at(e: LockEvent): string {
  return `${e.file}:${e.line}`;
}

function report(context: RuleContext, s: SourceSteps): void {
  const { first, largest } = s;
  const skew = formatDuration(context.options.clockSkewMs);
  // Once; several times, the first step the largest; several times, a larger step later.
  const messageId = s.count === 1 ? 'once' : largest === first ? 'firstLargest' : 'largestLater';
  const evidence: EvidenceRef[] = [
    { event: first.before, role: `line before the ${s.count === 1 ? '' : 'first '}step back` },
    { event: first.after, role: `${formatDuration(first.ms)} earlier than the line before it${largest === first && s.count > 1 ? ' (the largest step)' : ''}` },
  ];
  if (largest !== first) {
    evidence.push({ event: largest.before, role: 'line before the largest step back' }, { event: largest.after, role: `${formatDuration(largest.ms)} earlier than the line before it (the largest step)` });
  }
  context.report({
    messageId,
    data: {
      source: s.source,
      ...(s.count === 1 ? {} : { count: s.count }),
      skew,
      largestStep: formatDuration(largest.ms),
      first: at(first.after),
      ...(messageId === 'largestLater' ? { largest: at(largest.after) } : {}),
    },
    evidence,
    certainty: 'definite',
    subject: first.after,
    details: { source: s.source, steps: s.count, largestStepMs: largest.ms, first: at(first.after), largest: at(largest.after), clockSkewMs: context.options.clockSkewMs },
  });
}
