/** The headline every reporter shows: resource counts by readiness, and the reasons for the verdict. */
import { READINESS, type ReportView } from '../model/report.js';

/** "3 resources: 1 violated, 1 inconclusive, 1 untested" (readiness values with no resource left out). */
export function readinessCounts(report: ReportView): string {
  const s = report.summary;
  const parts = READINESS.filter((r) => s.byReadiness[r] > 0).map((r) => `${s.byReadiness[r]} ${r}`);
  return `${s.resources} resource${s.resources === 1 ? '' : 's'}${parts.length > 0 ? `: ${parts.join(', ')}` : ''}`;
}

/** The verdict's reasons, most important first (plain text: escape for the format). */
export function reasonLines(report: ReportView): string[] {
  return report.summary.reasons.map((r) => r.message);
}
