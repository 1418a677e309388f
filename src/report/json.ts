import { PLAIN_SUMMARIES, type ReportView, type ResourceSummary } from '../model/report.js';
import { listOf } from './chunks.js';
import { renderStory } from './story.js';

/**
 * The JSON report (see schema/report.schema.json). Tokens are decimal strings. Each finding also
 * carries its story, rendered from its evidence.
 */
export function renderJson(report: ReportView): string {
  let out = '';
  for (const chunk of renderJsonChunks(report)) out += chunk;
  return out;
}

const CHUNK = 64 * 1024;
/** Array elements stringified together. */
const SLICE = 32;
const SLICE_HEAD = '{\n  "x": [\n';
const SLICE_TAIL = '\n  ]\n}';

/**
 * The same text as renderJson (JSON.stringify with two-space indentation), in pieces of about
 * 64 KiB: a report listing 100 000 resources is written without ever being one string.
 */
export function* renderJsonChunks(report: ReportView): Generator<string> {
  const doc: Record<string, unknown> = { ...report, findings: report.findings.map((f) => ({ ...f, story: renderStory(f) })) };
  let buf = '{';
  let first = true;
  for (const key of Object.keys(doc)) {
    const value = doc[key];
    if (value === undefined || typeof value === 'function') continue;
    buf += `${first ? '' : ','}\n  ${JSON.stringify(key)}: `;
    first = false;
    const list = listOf(key, value);
    if (list === undefined || list.length === 0) {
      buf += list === undefined ? indent(JSON.stringify(value, null, 2), '\n  ') : '[]';
      continue;
    }
    buf += '[';
    if ((list as { [PLAIN_SUMMARIES]?: boolean })[PLAIN_SUMMARIES] === true) {
      let head = '\n';
      for (const r of list as Iterable<ResourceSummary>) {
        buf += head + summaryJson(r);
        head = ',\n';
        if (buf.length >= CHUNK) {
          yield buf;
          buf = '';
        }
      }
      buf += '\n  ]';
      continue;
    }
    // Elements in slices, each slice stringified at the depth it has in the report, so the text
    // needs no re-indenting: {"x": [...]} with two-space indentation puts elements at four spaces.
    let slice: unknown[] = [];
    let head = '\n';
    const put = () => {
      const text = JSON.stringify({ x: slice }, null, 2);
      buf += head + text.slice(SLICE_HEAD.length, text.length - SLICE_TAIL.length);
      head = ',\n';
      slice = [];
    };
    for (const item of list) {
      slice.push(item);
      if (slice.length < SLICE) continue;
      put();
      if (buf.length >= CHUNK) {
        yield buf;
        buf = '';
      }
    }
    if (slice.length > 0) put();
    buf += '\n  ]';
  }
  yield buf + (first ? '}' : '\n}') + '\n';
}

/**
 * A summary as JSON.stringify(report, null, 2) writes it as an element of `resources` (at four
 * spaces), for a summary of exactly ResourceSummary's fields in its order (PLAIN_SUMMARIES):
 * several times faster. Its strings go through JSON.stringify, which escapes them.
 */
export function summaryJson(r: ResourceSummary): string {
  const w = r.writes;
  const token = r.highestAcceptedToken === null ? 'null' : JSON.stringify(r.highestAcceptedToken);
  return (
    `    {\n      "resource": ${JSON.stringify(r.resource)},\n      "readiness": ${JSON.stringify(r.readiness)},\n      "reason": ${JSON.stringify(r.reason)},\n      "highestAcceptedToken": ${token},\n      "events": ${JSON.stringify(r.events)},\n` +
    `      "writes": {\n        "accepted": ${JSON.stringify(w.accepted)},\n        "rejectedStaleFence": ${JSON.stringify(w.rejectedStaleFence)},\n        "rejectedOther": ${JSON.stringify(w.rejectedOther)},\n        "withoutToken": ${JSON.stringify(w.withoutToken)}\n      },\n` +
    `      "staleWrites": ${JSON.stringify(r.staleWrites)},\n      "oldHandleReleases": ${JSON.stringify(r.oldHandleReleases)},\n      "findings": ${JSON.stringify(r.findings)}\n    }`
  );
}

/** Nest a JSON text one level deeper (a newline can only be indentation: strings escape theirs). */
function indent(text: string, newline: string): string {
  return text.includes('\n') ? text.replace(/\n/g, newline) : text;
}
