/** The library API: the whole pipeline from inputs to a report. */
import { access, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { Engine, DEFAULT_CLOCK_SKEW_MS } from './engine.js';
import { readLines, type LineBatch } from './ingest/lines.js';
import { mergeByTime } from './ingest/merge.js';
import { fileSource, InputError, reasonOf, streamSource, type InputSource } from './ingest/open.js';
import { InputStats, toEvents, type InputPolicy } from './ingest/records.js';
import type { LockEvent } from './model/event.js';
import type { Finding, Problem, Readiness, Report } from './model/report.js';
import { canonical } from './profiles/canonical.js';
import type { Profile } from './profiles/types.js';
import { rules as allRules } from './rules/index.js';
import type { Rule } from './rules/types.js';
import { VERSION } from './version.js';

export interface AnalyzeOptions {
  /** Paths to read; `-` is stdin. Gzip is detected by its magic bytes. */
  files?: readonly string[];
  /** Readable streams (or async iterables of bytes/strings), each with the name used in `file:line`. */
  streams?: readonly { name: string; stream: NodeJS.ReadableStream | AsyncIterable<Buffer | string> }[];
  /** Records already parsed, in canonical form (source name `events`, line = index + 1). */
  events?: readonly Record<string, unknown>[];
  /** Defaults to the canonical profile. */
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
  /** busy-rate-rising window in ms (default 60000), threshold 0..1 (default 0.25). */
  busyWindowMs?: number;
  busyThreshold?: number;
  /** Called as soon as a finding is detected. */
  onFinding?: (finding: Finding) => void;
  /** Called for every invalid line. */
  onProblem?: (problem: Problem) => void;
}

export async function analyze(options: AnalyzeOptions): Promise<Report> {
  const rules = selectRules(options.rules);
  const profile = options.profile ?? canonical;
  const policy: InputPolicy = {
    strict: options.strict,
    maxInvalid: options.maxInvalid,
    maxProblems: options.maxProblems,
    onProblem: options.onProblem,
  };
  const stats = new InputStats(policy);
  const sources: AsyncIterable<LockEvent[]>[] = [];
  for (const path of options.files ?? []) {
    if (path !== '-') await checkReadable(path);
    sources.push(sourceEvents(fileSource(path), profile, stats, options.maxLineBytes));
  }
  for (const s of options.streams ?? []) sources.push(sourceEvents(streamSource(s.name, s.stream), profile, stats, options.maxLineBytes));
  if (options.events !== undefined) sources.push(recordEvents(options.events, profile, stats));
  if (sources.length === 0) throw new InputError('nothing to analyze: give files, streams or events');

  const engine = new Engine({
    rules,
    clockSkewMs: options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS,
    maxFindings: options.maxFindings,
    busyWindowMs: options.busyWindowMs,
    busyThreshold: options.busyThreshold,
    onFinding: options.onFinding,
  });
  for await (const batch of mergeByTime(sources)) {
    for (let i = 0; i < batch.length; i++) engine.push(batch[i]!);
  }
  engine.finish();
  return buildReport(engine, stats);
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

async function checkReadable(path: string): Promise<void> {
  try {
    const st = await stat(path);
    if (st.isDirectory()) throw new InputError(`cannot read ${path}: it is a directory`);
    await access(path, constants.R_OK);
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
  }
}

async function* sourceEvents(input: InputSource, profile: Profile, stats: InputStats, maxLineBytes: number | undefined): AsyncGenerator<LockEvent[]> {
  const summary = stats.addFile(input.name);
  let lines: AsyncGenerator<LineBatch>;
  try {
    lines = readLines(input.open(), { maxLineBytes });
    for await (const batch of lines) {
      const events = toEvents(batch, profile, input.name, input.name, stats, summary);
      if (events.length > 0) yield events;
    }
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    // The input broke off (truncated gzip, read error): keep what was read, and say so.
    summary.error = err.message;
  }
}

async function* recordEvents(records: readonly Record<string, unknown>[], profile: Profile, stats: InputStats): AsyncGenerator<LockEvent[]> {
  const summary = stats.addFile('events');
  const out: LockEvent[] = [];
  for (let i = 0; i < records.length; i++) {
    summary.lines++;
    const r = records[i]!;
    const ev = profile.toEvent(r, { file: 'events', line: i + 1, source: 'events' });
    if (ev === null) summary.ignored++;
    else if (typeof ev === 'string') stats.problem(summary, i + 1, ev);
    else {
      summary.events++;
      out.push(ev);
    }
  }
  yield out;
}

export function buildReport(engine: Engine, stats: InputStats): Report {
  const resources = engine.resources();
  const byReadiness: Record<Readiness, number> = { verified: 0, violated: 0, untested: 0 };
  for (const r of resources) byReadiness[r.readiness]++;
  const verdict: Readiness = byReadiness.violated > 0 ? 'violated' : byReadiness.verified > 0 ? 'verified' : 'untested';
  return {
    tool: { name: 'stalewrite', version: VERSION, reportFormat: 1 },
    summary: {
      verdict,
      findings: engine.findings.length + engine.findingsOmitted,
      findingsOmitted: engine.findingsOmitted,
      bySeverity: { ...engine.bySeverity },
      possibleBySeverity: { ...engine.possibleBySeverity },
      byRule: { ...engine.byRule },
      resources: resources.length,
      byReadiness,
    },
    findings: engine.findings,
    resources,
    input: stats.summary(),
  };
}
