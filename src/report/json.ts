import type { Report } from '../model/report.js';

/** The JSON report (see schema/report.schema.json). Tokens are decimal strings. */
export function renderJson(report: Report): string {
  return JSON.stringify(report, null, 2) + '\n';
}
