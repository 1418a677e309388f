import type { Report } from '../model/report.js';
import { renderStory } from './story.js';

/**
 * The JSON report (see schema/report.schema.json). Tokens are decimal strings. Each finding also
 * carries its story, rendered from its evidence.
 */
export function renderJson(report: Report): string {
  const withStories = { ...report, findings: report.findings.map((f) => ({ ...f, story: renderStory(f) })) };
  return JSON.stringify(withStories, null, 2) + '\n';
}
