/**
 * Recorded cases for `stalewrite check`: `X.ndjson` (or `X.ndjson.gz`) beside `X.expect.json`,
 * or a directory of several `*.ndjson[.gz]` files (one incident split by source) with an
 * `expect.json`. The project's own fixtures use the same mechanism.
 */
import { existsSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { analyze, type AnalyzeOptions } from '../analyze.js';
import { getProfile, loadMapping, PROFILE_NAMES, type ProfileName } from '../profiles/index.js';
import type { Profile } from '../profiles/types.js';
import { InputError } from '../ingest/open.js';
import type { Report } from '../model/report.js';
import { diffExpectation, type Expectation, type ExpectedFinding } from './expect.js';
import { describeJsonError } from '../profiles/json-error.js';
import { InputSet, writeFileAtomicSync, writeReason } from '../cli/output.js';

export interface Case {
  name: string;
  files: string[];
  expectPath: string;
}

export interface CaseResult {
  case: Case;
  ok: boolean;
  diffs: string[];
  report: Report;
}

const LOG = /\.(ndjson|jsonl|json|log|txt)(\.gz)?$/;
const EXPECT = /\.expect\.json$|^expect\.json$/;

/**
 * Find the cases in directories and files. Logs without an expectation file count only with
 * `withoutExpectation` (for --update, which writes one).
 */
export function findCases(paths: readonly string[], withoutExpectation = false): Case[] {
  const out: Case[] = [];
  for (const p of paths) {
    if (statOf(p).isDirectory()) {
      scanDir(p, withoutExpectation, out, true);
    } else if (LOG.test(p) && !EXPECT.test(p)) {
      out.push({ name: p, files: [p], expectPath: join(dirname(p), basename(p).replace(LOG, '.expect.json')) });
    } else throw new InputError(`${p} is neither a directory nor a log file (.ndjson, .jsonl, .json, .log, .txt, optionally .gz)`);
  }
  return out;
}

/** A directory with expect.json is one case; otherwise its logs with X.expect.json beside them are, and its subdirectories are searched. */
function scanDir(dir: string, withoutExpectation: boolean, out: Case[], top: boolean): void {
  if (existsSync(join(dir, 'expect.json'))) {
    out.push(dirCase(dir));
    return;
  }
  for (const entry of listDir(dir)) {
    const full = join(dir, entry);
    if (statOf(full).isDirectory()) {
      if (entry !== 'node_modules' && !entry.startsWith('.')) scanDir(full, withoutExpectation, out, false);
    } else if (LOG.test(entry) && !EXPECT.test(entry)) {
      const expectPath = join(dir, entry.replace(LOG, '.expect.json'));
      if ((withoutExpectation && top) || existsSync(expectPath)) out.push({ name: full, files: [full], expectPath });
    }
  }
}

/** stat, or an InputError in one line (a missing path, a symlink loop, no permission). */
function statOf(p: string): Stats {
  try {
    return statSync(p);
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new InputError(`cannot read ${p}: ${code === 'ENOENT' ? 'no such file or directory' : writeReason(err)}`);
  }
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (err) {
    throw new InputError(`cannot read ${dir}: ${writeReason(err)}`);
  }
}

function dirCase(dir: string): Case {
  const files = listDir(dir).filter((f) => LOG.test(f) && !EXPECT.test(f) && !f.endsWith('mapping.json')).sort().map((f) => join(dir, f));
  return { name: `${dir}/`, files, expectPath: join(dir, 'expect.json') };
}

/**
 * An expectation file. It may hold only `description` and `options` (a case being set up):
 * `check` then fails it, and `check --update` fills in findings, readiness and input.
 */
export function readExpectation(path: string): Expectation {
  let parsed: unknown;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read expectation ${path}: ${(err as Error).message}`);
  }
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new InputError(`expectation ${path} is not valid JSON: ${describeJsonError(text, err)}`);
  }
  const e = parsed as Expectation;
  if (e === null || typeof e !== 'object' || Array.isArray(e)) throw new InputError(`expectation ${path} must be a JSON object`);
  if (e.findings !== undefined && !Array.isArray(e.findings)) throw new InputError(`expectation ${path}: "findings" must be an array`);
  if (e.options !== undefined && (e.options === null || typeof e.options !== 'object' || Array.isArray(e.options))) throw new InputError(`expectation ${path}: "options" must be an object`);
  return e;
}

export async function runCase(c: Case): Promise<CaseResult> {
  const expected = existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined;
  const report = await analyze({ files: c.files, ...analysisOptions(c, expected) });
  if (expected === undefined) return { case: c, ok: false, diffs: [`- no expectation file ${c.expectPath} (run with --update to write it)`], report };
  if (expected.findings === undefined) return { case: c, ok: false, diffs: [`- ${c.expectPath} has no "findings" yet (run with --update to fill in findings, readiness and input)`], report };
  const diffs = diffExpectation(report, expected);
  return { case: c, ok: diffs.length === 0, diffs, report };
}

/** The analysis options an expectation asks for: skew, busy settings, a profile or a mapping. */
export function analysisOptions(c: Case, expected: Expectation | undefined): Partial<AnalyzeOptions> {
  const o = expected?.options;
  if (o === undefined) return {};
  const klog = { year: o.klogYear, zone: o.klogZone };
  const log4j = { zone: o.log4jZone };
  let profile: Profile | undefined;
  if (o.mapping !== undefined) profile = loadMapping(join(dirname(c.expectPath), o.mapping), { klog, log4j });
  else if (o.profile !== undefined) {
    if (!(PROFILE_NAMES as readonly string[]).includes(o.profile)) throw new InputError(`${c.expectPath}: unknown profile "${o.profile}" (${PROFILE_NAMES.join(', ')})`);
    profile = getProfile(o.profile as ProfileName, { klog, log4j });
  }
  return { clockSkewMs: o.clockSkewMs, busyWindowMs: o.busyWindowMs, busyThreshold: o.busyThreshold, profile };
}

/** The expectation the current results would satisfy; keeps the old description and options. */
export function expectationFrom(report: Report, previous?: Expectation): Expectation {
  const pairs = new Map<string, ExpectedFinding & { certainties: Set<string> }>();
  for (const f of report.findings) {
    const key = `${f.rule}\u0000${f.resource}`;
    let p = pairs.get(key);
    if (p === undefined) pairs.set(key, (p = { rule: f.rule, resource: f.resource, count: 0, certainties: new Set() }));
    p.count!++;
    p.certainties.add(f.certainty);
  }
  const findings: ExpectedFinding[] = [...pairs.values()].map(({ certainties, ...p }) =>
    certainties.size === 1 ? { ...p, certainty: [...certainties][0] as ExpectedFinding['certainty'] } : p,
  );
  const out: Expectation = {};
  if (previous?.description !== undefined) out.description = previous.description;
  if (previous?.options !== undefined) out.options = previous.options;
  out.findings = findings;
  out.readiness = Object.fromEntries(report.resources.map((r) => [r.resource, r.readiness]));
  out.input = { lines: report.input.lines, events: report.input.events, blank: report.input.blank, ignored: report.input.ignored, invalid: report.input.invalid };
  if (report.input.joined > 0) out.input.joined = report.input.joined;
  if (report.input.duplicates > 0) out.input.duplicates = report.input.duplicates;
  return out;
}

export function writeExpectation(c: Case, report: Report): void {
  const previous = existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined;
  // Atomic (temporary file + rename), and never over one of the case's inputs.
  const inputs = new InputSet(c.files);
  if (previous?.options?.mapping !== undefined) inputs.add(join(dirname(c.expectPath), previous.options.mapping));
  writeFileAtomicSync(c.expectPath, JSON.stringify(expectationFrom(report, previous), null, 2) + '\n', inputs);
}
