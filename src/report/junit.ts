/**
 * JUnit XML for CI: one testcase per (rule, resource) with findings, whose failure body holds the
 * stories and evidence; one passing testcase per resource that is verified or untested, so a clean
 * run shows passes. Names are unique (GitLab drops repeated ones). Findings below the fail policy
 * pass, with their text in system-out. Findings at or above --fail-on whose certainty is only
 * `possible` fail as `inconclusive` (pass with allowInconclusive; fail as findings with
 * includePossible), and with requireTested an untested or unconfirmed resource fails too, as
 * the exit code does.
 */
import type { Finding, ReportView } from '../model/report.js';
import { atOrAbove, DEFAULT_POLICY, exitCodeFor, isFailing, type FailPolicy } from '../model/policy.js';
import { gather } from './chunks.js';
import { escapeXml as x } from './escape.js';
import { renderStory } from './story.js';

export function renderJunit(report: ReportView, policy: FailPolicy = DEFAULT_POLICY): string {
  return [...renderJunitChunks(report, policy)].join('');
}

/**
 * The same XML in pieces of bounded size. The suite's counts come before its testcases, so the
 * testcases are walked twice: once to count them, once to write them.
 */
export function renderJunitChunks(report: ReportView, policy: FailPolicy = DEFAULT_POLICY): Generator<string> {
  return gather(junitPieces(report, policy));
}

function* junitPieces(report: ReportView, policy: FailPolicy): Generator<string> {
  let tests = 0;
  let failures = 0;
  const order = { increasing: true };
  for (const c of testcases(report, policy, false, order)) {
    tests++;
    if (c.failed) failures++;
  }
  const i = report.input;
  const props = [
    ['verdict', report.summary.verdict],
    ['lines', String(i.lines)],
    ['events', String(i.events)],
    ['blank', String(i.blank)],
    ['ignored', String(i.ignored)],
    ['invalid', String(i.invalid)],
  ]
    .map(([k, v]) => `      <property name="${k}" value="${x(v!)}"/>`)
    .join('\n');
  yield `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="stalewrite" tests="${tests}" failures="${failures}" errors="0">\n` +
    `  <testsuite name="stalewrite" tests="${tests}" failures="${failures}" errors="0" skipped="0" time="0">\n` +
    `    <properties>\n${props}\n    </properties>\n`;
  let first = true;
  for (const c of testcases(report, policy, true, order)) {
    if (!first) yield '\n';
    first = false;
    yield* c.text;
  }
  yield `${tests > 0 ? '\n' : ''}  </testsuite>\n</testsuites>\n`;
}

interface Testcase {
  failed: boolean;
  /** The testcase's XML in pieces (none when only counting). */
  text: Iterable<string>;
}

/**
 * The testcases in order; with `write` false only whether each fails (names and bodies are not
 * built), and whether the resources' keys are strictly increasing (`order`, for the walk that writes).
 */
function* testcases(report: ReportView, policy: FailPolicy, write: boolean, order: { increasing: boolean }): Generator<Testcase> {
  const groups = new Map<string, Finding[]>();
  for (const f of report.findings) {
    const key = `${f.rule}\u0000${f.resource}`;
    let list = groups.get(key);
    if (list === undefined) groups.set(key, (list = []));
    list.push(f);
  }
  let failures = 0;
  // Uniqueness holds on the names as written (escaped): `a\u0001` and a literal `a\u{1}` escape alike.
  const names = new Set<string>();
  // `later` false: no name made later can be this one unless it is kept (see the resources' loop).
  const unique = (name: string, later = true) => {
    const escaped = x(name);
    let n = escaped;
    for (let i = 2; names.has(n); i++) n = `${escaped} (${i})`;
    if (later || n !== escaped || escaped.includes('\\u{')) names.add(n);
    return n;
  };
  const none: string[] = [];
  const failedResources = new Set<string>();
  for (const list of groups.values()) {
    const first = list[0]!;
    const failing = list.filter((f) => isFailing(f, policy));
    const uncertain = policy.allowInconclusive ? [] : list.filter((f) => !isFailing(f, policy) && atOrAbove(f.severity, policy.failOn));
    if (failing.length > 0 || uncertain.length > 0) failedResources.add(first.resource);
    if (failing.length > 0 || uncertain.length > 0) failures++;
    if (!write) {
      yield { failed: failing.length > 0 || uncertain.length > 0, text: none };
      continue;
    }
    const decisive = first.evidence.find((e) => e.decisive) ?? first.evidence[first.evidence.length - 1];
    const attrs = `classname="${x(`stalewrite.${first.rule}`)}" name="${unique(`${first.rule} on ${first.resource}`)}"${decisive !== undefined ? ` file="${x(decisive.file)}" line="${decisive.line}"` : ''} time="0"`;
    let open: string;
    let close: string;
    if (failing.length > 0) {
      const worst = failing[0]!;
      open = `    <testcase ${attrs}>\n      <failure type="${worst.severity}" message="${x(`${list.length} finding${list.length === 1 ? '' : 's'}: ${worst.message}`)}">`;
      close = `</failure>\n    </testcase>`;
    } else if (uncertain.length > 0) {
      const u = uncertain[0]!;
      const why = u.uncertainty?.decide ?? `certainty ${u.certainty}`;
      open = `    <testcase ${attrs}>\n      <failure type="inconclusive" message="${x(`inconclusive: ${u.message}; ${why}`)}">`;
      close = `</failure>\n    </testcase>`;
    } else {
      open = `    <testcase ${attrs}>\n      <system-out>`;
      close = `</system-out>\n    </testcase>`;
    }
    yield { failed: failing.length > 0 || uncertain.length > 0, text: body(open, list, close) };
  }
  const v = report.summary.verdict;
  let previous: string | undefined;
  for (const r of report.resources) {
    if (!write) {
      if (previous !== undefined && !(previous < r.resource)) order.increasing = false;
      previous = r.resource;
    }
    // A violated or inconclusive resource fails even when none of its findings is listed
    // (--max-findings) or judged (--rule): JUnit fails when the exit code does.
    let failure: { type: string; message: string } | undefined;
    if (!failedResources.has(r.resource) && policy.failOn !== 'none') {
      if (r.readiness === 'violated') failure = { type: 'violated', message: `violated: ${r.reason}` };
      else if (r.readiness === 'inconclusive' && !policy.allowInconclusive) failure = { type: 'inconclusive', message: `inconclusive: ${r.reason}` };
    }
    if (failure === undefined && policy.requireTested && (v === 'untested' || v === 'unconfirmed') && (r.readiness === 'untested' || r.readiness === 'unconfirmed')) {
      failure = { type: r.readiness, message: `${r.readiness} (--require-tested): ${r.reason}` };
    }
    if (failure === undefined && r.readiness === 'violated') continue; // its failing findings stand for it
    if (failure !== undefined) failures++;
    if (!write) {
      yield { failed: failure !== undefined, text: none };
      continue;
    }
    // Of distinct keys (strictly increasing), two readiness names are written alike only when an
    // invalid character was made visible (`\u{1}`) or one holds that text: only those, and names
    // that took a number, are kept to compare with later ones (a million resources, a million names
    // otherwise). The findings' names, all made before, are kept; the summary's cannot be one of these.
    const name = unique(`readiness of ${r.resource}: ${r.readiness}`, !order.increasing);
    if (failure !== undefined) {
      yield { failed: true, text: [`    <testcase classname="stalewrite.readiness" name="${name}" time="0">\n      <failure type="${x(failure.type)}" message="${x(failure.message)}">${x(r.reason)}</failure>\n    </testcase>`] };
    } else yield { failed: false, text: [`    <testcase classname="stalewrite.readiness" name="${name}" time="0">\n      <system-out>${x(r.reason)}</system-out>\n    </testcase>`] };
  }
  // Whatever else fails the run (findings past --max-findings, say) fails the suite too.
  if (failures === 0 && exitCodeFor(report, policy) !== 0) {
    if (!write) {
      yield { failed: true, text: none };
      return;
    }
    const why = report.summary.reasons[0]?.message ?? `verdict ${v}`;
    const omitted = report.summary.findingsOmitted > 0 ? `${report.summary.findingsOmitted} findings not listed (--max-findings); ` : '';
    yield { failed: true, text: [`    <testcase classname="stalewrite.summary" name="${unique(`verdict: ${v}`)}" time="0">\n      <failure type="${x(v)}" message="${x(`${omitted}${why}`)}">${x(`${omitted}${why}`)}</failure>\n    </testcase>`] };
  }
}

/**
 * A testcase's body, the findings' texts escaped line by line: escapeXml of the joined text is the
 * same, as it never reads across a newline (a lone surrogate before or after one stays lone).
 */
function* body(open: string, list: Finding[], close: string): Generator<string> {
  yield open;
  for (let k = 0; k < list.length; k++) {
    if (k > 0) yield '\n\n';
    const lines = findingLines(list[k]!);
    for (let j = 0; j < lines.length; j++) yield (j > 0 ? '\n' : '') + x(lines[j]!);
  }
  yield close;
}

function findingLines(f: Finding): string[] {
  const lines = [`${f.id} ${f.severity} (${f.certainty}): ${f.message}`, '', ...renderStory(f), '', 'evidence:'];
  for (const e of f.evidence) {
    lines.push(`  ${e.file}:${e.line}  ${e.role}  ${e.ts} ${e.type} owner=${e.ownerId ?? '-'} lease=${e.leaseId ?? '-'} token=${e.fenceToken ?? '-'} result=${e.result}${e.inferred ? ' (inferred)' : ''}`);
  }
  lines.push('', `action: ${f.action}`);
  return lines;
}
