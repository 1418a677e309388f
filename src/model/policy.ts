/** Which findings fail a run: at or above --fail-on, and definite or likely unless possible ones are included. */
import type { Finding, Severity } from './report.js';

export type FailOn = Severity | 'none';

export interface FailPolicy {
  failOn: FailOn;
  includePossible: boolean;
}

export const DEFAULT_POLICY: FailPolicy = { failOn: 'error', includePossible: false };

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
