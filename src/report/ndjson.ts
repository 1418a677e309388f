/**
 * Live NDJSON output: one line per finding as soon as it is detected, then one summary line at
 * the end of input. `tail -F app.log | stalewrite analyze --format ndjson -` alerts while the
 * input keeps flowing.
 */
import type { Finding, ReportView } from '../model/report.js';
import { gather, listOf } from './chunks.js';
import { renderStory } from './story.js';

export function findingLine(f: Finding): string {
  return JSON.stringify({ kind: 'finding', ...f, story: renderStory(f) }) + '\n';
}

export function summaryLine(report: ReportView): string {
  return [...summaryLineChunks(report)].join('');
}

/**
 * The summary line in pieces: the same text as JSON.stringify of the summary object, with
 * `resources` stringified one resource at a time (a million resources are never one string).
 */
export function summaryLineChunks(report: ReportView): Generator<string> {
  return gather(summaryPieces({ kind: 'summary', tool: report.tool, summary: report.summary, resources: report.resources, input: report.input, partitions: report.partitions, withdrawn: report.withdrawn }));
}

function* summaryPieces(doc: Record<string, unknown>): Generator<string> {
  yield '{';
  let first = true;
  for (const key of Object.keys(doc)) {
    const value = doc[key];
    // What JSON.stringify leaves out of an object.
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    const list = listOf(key, value);
    if (list === undefined) {
      yield JSON.stringify(value);
      continue;
    }
    yield '[';
    // What JSON.stringify writes for an array element it cannot represent.
    let i = 0;
    for (const item of list) yield (i++ === 0 ? '' : ',') + (JSON.stringify(item) ?? 'null');
    yield ']';
  }
  yield '}\n';
}
