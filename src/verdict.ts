/**
 * The overall verdict and the reasons behind it (the headline of every report). The verdict is
 * the worst readiness over resources (violated, inconclusive, unconfirmed, verified, untested);
 * the reasons say why, what was not analysed, and what would decide an inconclusive finding.
 */
import { plural } from './model/format.js';
import { worse, type FileSummary, type Finding, type InputSummary, type Readiness, type ResourceSummary, type VerdictReason } from './model/report.js';

/** Rules whose finding is an accepted stale write: the one named first in readiness reasons. */
export function isStaleRule(rule: string): boolean {
  return rule === 'accepted-stale-write' || rule === 'accepted-equal-token';
}

/** Resources named one by one in the reasons at most; the rest are counted. */
const MAX_NAMED = 5;

export interface VerdictFacts {
  /** What the reasons need of the resources (readinessDigest). */
  resources: ReadinessDigest;
  findings: readonly Finding[];
  input: InputSummary;
  writeEvents: number;
  untrackedEvents: number;
  /** Lease-scoped events (an authority's session or lease end naming no resource), and those that found a resource holding their lease. */
  leaseScopedEvents?: number;
  leaseScopedApplied?: number;
}

/** What the verdict and its reasons need of the resources: kept in one pass, without keeping every summary. */
export interface ReadinessDigest {
  /** Resources in all. */
  count: number;
  byReadiness: Record<Readiness, number>;
  /** The worst readiness (untested when there is no resource). */
  verdict: Readiness;
  /** Of the readiness values the reasons name resources of, the first MAX_NAMED resources, in the resources' order. */
  first: Record<'violated' | 'inconclusive' | 'unconfirmed', ResourceSummary[]>;
}

/**
 * Set on ResourceSummaries that give their digest themselves (Engine.resourceList()): without
 * making a summary of every resource, only of the few the reasons name.
 */
export const OWN_DIGEST: unique symbol = Symbol('readiness digest');

/** The digest of `resources` (in their order: the report's, by resource key), in one pass. */
export function readinessDigest(resources: Iterable<ResourceSummary>): ReadinessDigest {
  const own = (resources as { [OWN_DIGEST]?: () => ReadinessDigest })[OWN_DIGEST];
  if (own !== undefined) return own.call(resources);
  const d = new DigestBuilder();
  for (const r of resources) if (d.add(r.readiness)) d.name(r);
  return d.digest();
}

/** A digest kept one resource at a time, in the resources' order. */
export class DigestBuilder {
  private count = 0;
  private readonly byReadiness: Record<Readiness, number> = { violated: 0, inconclusive: 0, unconfirmed: 0, verified: 0, untested: 0 };
  private readonly first: ReadinessDigest['first'] = { violated: [], inconclusive: [], unconfirmed: [] };
  private verdict: Readiness = 'untested';

  /** Count a resource of readiness `v`; true when the reasons name it (then give its summary to name()). */
  add(v: Readiness): boolean {
    this.count++;
    this.byReadiness[v]++;
    this.verdict = worse(this.verdict, v);
    return (v === 'violated' || v === 'inconclusive' || v === 'unconfirmed') && this.first[v].length < MAX_NAMED;
  }

  name(r: ResourceSummary): void {
    this.first[r.readiness as keyof ReadinessDigest['first']].push(r);
  }

  digest(): ReadinessDigest {
    return { count: this.count, byReadiness: this.byReadiness, verdict: this.verdict, first: this.first };
  }
}

export function verdictReasons(facts: VerdictFacts, verdict: Readiness): VerdictReason[] {
  const out: VerdictReason[] = [];
  const i = facts.input;
  if (i.events === 0) {
    out.push({ id: 'no-events', message: noEventsMessage(i) });
  } else if (facts.writeEvents === 0) {
    out.push({
      id: 'no-writes',
      message: `0 of ${i.events} events are writes: does your profile or mapping map the writes? (\`stalewrite map FILE\` shows what each line became)`,
    });
  }
  const unread = i.events > 0 ? mostlyUnread(i.files) : undefined;
  if (unread !== undefined) out.push({ id: 'mostly-unread', message: unread });
  const scoped = facts.leaseScopedEvents ?? 0;
  if (scoped > 0 && (facts.leaseScopedApplied ?? 0) === 0) {
    out.push({
      id: 'unmatched-lease-ends',
      message: `none of ${plural(scoped, 'lease-scoped event')} (an authority's session or lease end, naming no resource) found a live lease of its id in these logs: if the workers' sessions are among them, do the workers log the same lease or session id, normalised alike? (\`stalewrite map FILE\` shows both)`,
    });
  }
  if (facts.untrackedEvents > 0) {
    out.push({ id: 'untracked', message: `${facts.untrackedEvents} events of resources past --max-resources were NOT analysed` });
  }
  const d = facts.resources;
  const violated = d.byReadiness.violated;
  if (violated > 0) {
    out.push({ id: 'violated', message: `${plural(violated, 'resource')} violated: ${names(d.first.violated, violated)}` });
  }
  const perResource = (readiness: 'inconclusive' | 'unconfirmed', id: string) => {
    const n = d.byReadiness[readiness];
    for (const r of d.first[readiness]) {
      const possible = facts.findings.filter((x) => x.resource === r.resource && x.severity === 'error' && x.certainty === 'possible');
      const f = possible.find((x) => isStaleRule(x.rule)) ?? possible[0];
      const reason: VerdictReason = { id, message: `${r.resource} is ${readiness}: ${r.reason}`, resource: r.resource };
      if (f !== undefined) reason.finding = f.id;
      out.push(reason);
    }
    if (n > MAX_NAMED) out.push({ id, message: `and ${plural(n - MAX_NAMED, 'more resource')} ${readiness}` });
  };
  perResource('inconclusive', 'uncertain');
  perResource('unconfirmed', 'not-explicit');
  if (verdict === 'untested' && i.events > 0 && facts.writeEvents > 0) {
    out.push({
      id: 'no-stale-request',
      message: `no stale request was seen on ${d.count === 1 ? 'the resource' : `any of ${d.count} resources`}, so the logs do not show whether old tokens are rejected`,
    });
  }
  if (verdict === 'verified') {
    const n = d.byReadiness.verified;
    const untested = d.byReadiness.untested;
    out.push({
      id: 'verified',
      message: `${plural(n, 'resource')} showed stale requests explicitly rejected${untested > 0 ? `; ${plural(untested, 'other resource')} saw no stale request (untested)` : ''}`,
    });
  }
  return out;
}

/** How many lines of an input count for `mostly-unread`, and how many of those were not read. */
export function unreadLines(f: FileSummary): { judged: number; unread: number } {
  // A sparse input (a server's own text log) is mostly lines that are no events: its ignored
  // lines are neither held against the profile nor counted; its invalid lines are.
  const ignored = f.sparse === true ? 0 : f.ignored;
  return { judged: f.events + f.duplicates + ignored + f.invalid, unread: ignored + f.invalid };
}

/**
 * `mostly-unread`, judged per input: the inputs of which more than half the lines that count
 * (unreadLines) were not read as events — the sign of a profile or mapping that does not fit the
 * input, which would otherwise pass for an all clear. Undefined when there is none.
 */
export function mostlyUnread(files: readonly FileSummary[]): string | undefined {
  const bad = files.filter((f) => {
    const { judged, unread } = unreadLines(f);
    return judged > 0 && unread * 2 > judged;
  });
  if (bad.length === 0) return undefined;
  const counts = (f: FileSummary) => {
    const { judged, unread } = unreadLines(f);
    const ignored = f.sparse === true ? `${f.invalid} invalid; ${f.ignored} ignored lines not counted: an input of this kind is mostly other lines` : `${f.ignored} ignored, ${f.invalid} invalid`;
    return { judged, unread, ignored };
  };
  if (bad.length === 1) {
    const f = bad[0]!;
    const c = counts(f);
    return `${c.unread} of ${c.judged} lines of ${f.file} were not read as events (${c.ignored}): is the profile or mapping right for it? (\`stalewrite map ${f.file}\`)`;
  }
  const shown = bad.slice(0, MAX_NAMED).map((f) => {
    const c = counts(f);
    return `${f.file} (${c.unread} of ${c.judged}: ${c.ignored})`;
  });
  const more = bad.length > MAX_NAMED ? `, and ${bad.length - MAX_NAMED} more` : '';
  return `most lines of ${bad.length} inputs were not read as events: ${shown.join(', ')}${more}: is the profile or mapping right for them? (\`stalewrite map FILE\`)`;
}

/** Why nothing was analysed, and what to try (the CLI prints it and exits 2 unless --allow-empty). */
export function noEventsMessage(i: InputSummary): string {
  return noEventsParts(i).join('; ');
}

/** The same, as separate sentences: what was read, the commonest reasons, what to try. */
export function noEventsParts(i: InputSummary): string[] {
  const parts = [`no events in the input: ${plural(i.lines, 'line')} read (${i.blank} blank, ${i.ignored} ignored, ${i.invalid} invalid), so nothing was analysed`];
  const common = commonestReasons(i);
  if (common.length > 0) parts.push(`commonest reasons: ${common.join('; ')}`);
  if (i.lines > i.blank) parts.push('try --profile auto (a profile per file), `stalewrite map FILE` (what each line became), or a mapping file (README "Your own logs")');
  return parts;
}

/** The most frequent invalid-line reasons among those listed, with counts. */
export function commonestReasons(i: InputSummary, max = 3): string[] {
  const counts = new Map<string, number>();
  for (const p of i.problems) counts.set(p.reason, (counts.get(p.reason) ?? 0) + 1);
  const sorted = [...counts].sort((a, b) => b[1] - a[1]).slice(0, max);
  const out = sorted.map(([reason, n]) => `${n}× ${reason.length > 120 ? reason.slice(0, 120) + '…' : reason}`);
  if (i.ignored > 0) out.push(`${i.ignored}× ignored (no rule of the profile or mapping took the line)`);
  return out;
}

/** The first resources of `count` by name (`shown`: the first MAX_NAMED). */
function names(shown: readonly ResourceSummary[], count: number): string {
  return shown.map((r) => r.resource).join(', ') + (count > MAX_NAMED ? `, and ${count - MAX_NAMED} more` : '');
}

