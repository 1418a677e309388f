/**
 * Expectation files (`X.expect.json` beside `X.ndjson`): the findings and readiness a recorded
 * incident must produce. Used by the project's own fixture tests, and the base of `stalewrite check`.
 */
import type { Readiness, Report } from '../model/report.js';

export interface ExpectedFinding {
  rule: string;
  resource: string;
  /** Exact number of findings of this rule on this resource (default: at least one). */
  count?: number;
  certainty?: 'definite' | 'likely' | 'possible';
  /** For rules with two severities (accepted-equal-token): every finding of the pair has it. */
  severity?: 'error' | 'warning' | 'info';
}

export interface Expectation {
  description?: string;
  /** Analysis options the case needs. */
  options?: {
    clockSkewMs?: number;
    busyWindowMs?: number;
    busyThreshold?: number;
    /** A built-in profile name (see --profile). */
    profile?: string;
    /** A mapping file, relative to the expectation file. */
    mapping?: string;
    klogYear?: number;
    klogZone?: string;
    /** The zone of Java log timestamps written without one (parse log4j: the zookeeper profile). */
    log4jZone?: string;
  };
  /** Every (rule, resource) pair that must fire; any other pair must not. */
  findings?: ExpectedFinding[];
  /** Readiness per resource; resources not listed are not checked. */
  readiness?: Record<string, Readiness>;
  /** Input counts to match exactly, where given. */
  input?: Partial<Record<'lines' | 'events' | 'blank' | 'ignored' | 'invalid' | 'expanded' | 'joined' | 'duplicates', number>>;
}

/** Differences between a report and an expectation, one line each; empty when they agree. */
export function diffExpectation(report: Report, expected: Expectation): string[] {
  const diffs: string[] = [];
  const actual = new Map<string, { count: number; certainties: Set<string>; severities: Set<string> }>();
  for (const f of report.findings) {
    const key = `${f.rule} @ ${f.resource}`;
    let a = actual.get(key);
    if (a === undefined) actual.set(key, (a = { count: 0, certainties: new Set(), severities: new Set() }));
    a.count++;
    a.certainties.add(f.certainty);
    a.severities.add(f.severity);
  }
  const expectedKeys = new Set<string>();
  for (const e of expected.findings ?? []) {
    const key = `${e.rule} @ ${e.resource}`;
    expectedKeys.add(key);
    const a = actual.get(key);
    if (a === undefined) {
      diffs.push(`- missing finding ${key}${e.count !== undefined ? ` (expected ${e.count})` : ''}`);
      continue;
    }
    if (e.count !== undefined && a.count !== e.count) diffs.push(`~ ${key}: expected ${e.count} finding(s), got ${a.count}`);
    if (e.certainty !== undefined && (a.certainties.size !== 1 || !a.certainties.has(e.certainty))) {
      diffs.push(`~ ${key}: expected certainty ${e.certainty}, got ${[...a.certainties].join(', ')}`);
    }
    if (e.severity !== undefined && (a.severities.size !== 1 || !a.severities.has(e.severity))) {
      diffs.push(`~ ${key}: expected severity ${e.severity}, got ${[...a.severities].join(', ')}`);
    }
  }
  for (const [key, a] of actual) {
    if (!expectedKeys.has(key)) diffs.push(`+ unexpected finding ${key} (${a.count})`);
  }
  const readiness = new Map(report.resources.map((r) => [r.resource, r.readiness]));
  for (const [resource, want] of Object.entries(expected.readiness ?? {})) {
    const got = readiness.get(resource);
    if (got === undefined) diffs.push(`- resource ${resource} not seen (expected ${want})`);
    else if (got !== want) diffs.push(`~ readiness of ${resource}: expected ${want}, got ${got}`);
  }
  for (const [k, want] of Object.entries(expected.input ?? {})) {
    const got = report.input[k as keyof NonNullable<Expectation['input']>];
    if (got !== want) diffs.push(`~ input.${k}: expected ${want}, got ${got}`);
  }
  return diffs;
}
