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
  // Counts are whole numbers, readiness a plain word, a token decimal digits: nothing to escape.
  const token = r.highestAcceptedToken === null ? 'null' : `"${r.highestAcceptedToken}"`;
  return (
    `    {\n      "resource": ${text(r.resource)},\n      "readiness": "${r.readiness}",\n      "reason": ${reasonText(r.reason)},\n      "highestAcceptedToken": ${token},\n      "events": ${r.events},\n` +
    `      "writes": {\n        "accepted": ${w.accepted},\n        "rejectedStaleFence": ${w.rejectedStaleFence},\n        "rejectedOther": ${w.rejectedOther},\n        "withoutToken": ${w.withoutToken}\n      },\n` +
    `      "staleWrites": ${r.staleWrites},\n      "oldHandleReleases": ${r.oldHandleReleases},\n      "findings": ${r.findings}\n    }`
  );
}

/** What JSON.stringify escapes in a string: quotes, backslashes, control characters, surrogates (a lone one is escaped). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON.stringify writes it: quoted as it is when nothing in it is escaped. */
function text(s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** The last reason written and its JSON: most resources share one reason (the same string). */
let lastReason = '';
let lastReasonJson = '""';

function reasonText(s: string): string {
  if (s !== lastReason) {
    lastReasonJson = text(s);
    lastReason = s;
  }
  return lastReasonJson;
}

/** Nest a JSON text one level deeper (a newline can only be indentation: strings escape theirs). */
function indent(text: string, newline: string): string {
  return text.includes('\n') ? text.replace(/\n/g, newline) : text;
}
