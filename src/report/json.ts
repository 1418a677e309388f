import type { Report } from '../model/report.js';
import { renderStory } from './story.js';

/**
 * The JSON report (see schema/report.schema.json). Tokens are decimal strings. Each finding also
 * carries its story, rendered from its evidence.
 */
export function renderJson(report: Report): string {
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
export function* renderJsonChunks(report: Report): Generator<string> {
  const doc: Record<string, unknown> = { ...report, findings: report.findings.map((f) => ({ ...f, story: renderStory(f) })) };
  let buf = '{';
  let first = true;
  for (const key of Object.keys(doc)) {
    const value = doc[key];
    if (value === undefined || typeof value === 'function') continue;
    buf += `${first ? '' : ','}\n  ${JSON.stringify(key)}: `;
    first = false;
    if (!Array.isArray(value) || value.length === 0) {
      buf += indent(JSON.stringify(value, null, 2), '\n  ');
      continue;
    }
    buf += '[';
    // Elements in slices, each slice stringified at the depth it has in the report, so the text
    // needs no re-indenting: {"x": [...]} with two-space indentation puts elements at four spaces.
    for (let i = 0; i < value.length; i += SLICE) {
      const text = JSON.stringify({ x: value.slice(i, i + SLICE) }, null, 2);
      buf += (i === 0 ? '\n' : ',\n') + text.slice(SLICE_HEAD.length, text.length - SLICE_TAIL.length);
      if (buf.length >= CHUNK) {
        yield buf;
        buf = '';
      }
    }
    buf += '\n  ]';
  }
  yield buf + (first ? '}' : '\n}') + '\n';
}

/** Nest a JSON text one level deeper (a newline can only be indentation: strings escape theirs). */
function indent(text: string, newline: string): string {
  return text.includes('\n') ? text.replace(/\n/g, newline) : text;
}
