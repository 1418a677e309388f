/**
 * Live NDJSON output: one line per finding as soon as it is detected, then one summary line at
 * the end of input. `tail -F app.log | stalewrite analyze --format ndjson -` alerts while the
 * input keeps flowing.
 */
import type { Finding, Report } from '../model/report.js';
import { renderStory } from './story.js';

export function findingLine(f: Finding): string {
  return JSON.stringify({ kind: 'finding', ...f, story: renderStory(f) }) + '\n';
}

export function summaryLine(report: Report): string {
  return JSON.stringify({ kind: 'summary', tool: report.tool, summary: report.summary, resources: report.resources, input: report.input }) + '\n';
}
