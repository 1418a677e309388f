/**
 * Which runs fail, and how (README "Exit codes"): findings at or above --fail-on that are definite
 * or likely (possible ones too with includePossible) fail with 1; a run that is only inconclusive
 * fails with 3 unless allowInconclusive; with requireTested, so does one that showed no stale
 * request answered explicitly.
 */
import { SEVERITIES, type Finding, type ReportView, type Severity } from './report.js';

export type FailOn = Severity | 'none';

export interface FailPolicy {
  failOn: FailOn;
  /** Findings of certainty `possible` count as confirmed ones (exit 1 instead of 3). */
  includePossible: boolean;
  /** An inconclusive run exits 0 instead of 3 (its headline still says inconclusive). */
  allowInconclusive?: boolean;
  /** A run whose verdict is `untested` or `unconfirmed` exits 3. */
  requireTested?: boolean;
}

export const DEFAULT_POLICY: FailPolicy = { failOn: 'error', includePossible: false };

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_USAGE = 2;
export const EXIT_INCONCLUSIVE = 3;

/** The exit code of an analysed run (input problems, exit 2, are the CLI's). */
export function exitCodeFor(report: ReportView, policy: FailPolicy): number {
  const s = report.summary;
  if (policy.failOn !== 'none') {
    const count = (b: Record<Severity, number>) => SEVERITIES.reduce((n, sev) => (atOrAbove(sev, policy.failOn) ? n + b[sev] : n), 0);
    const all = count(s.bySeverity);
    const possible = count(s.possibleBySeverity);
    if (all - (policy.includePossible ? 0 : possible) > 0 || s.verdict === 'violated') return EXIT_FINDINGS;
    if (!policy.allowInconclusive && (s.verdict === 'inconclusive' || possible > 0)) return EXIT_INCONCLUSIVE;
  }
  if (policy.requireTested && (s.verdict === 'untested' || s.verdict === 'unconfirmed')) return EXIT_INCONCLUSIVE;
  return EXIT_OK;
}


const RANK: Record<Severity, number> = { error: 3, warning: 2, info: 1 };

export function atOrAbove(severity: Severity, failOn: FailOn): boolean {
  return failOn !== 'none' && RANK[severity] >= RANK[failOn];
}

export function isFailing(f: Pick<Finding, 'severity' | 'certainty'>, policy: FailPolicy): boolean {
  return atOrAbove(f.severity, policy.failOn) && (policy.includePossible || f.certainty !== 'possible');
}

/** Most severe first, then definite before likely before possible, then detection order. */
export function bySeverity(a: Finding, b: Finding): number {
  const c: Record<string, number> = { definite: 0, likely: 1, possible: 2 };
  return RANK[b.severity] - RANK[a.severity] || c[a.certainty]! - c[b.certainty]! || Number(a.id.slice(1)) - Number(b.id.slice(1));
}
