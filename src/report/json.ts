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
    for (let i = 0; i < value.length; i++) {
      const item = value[i] === undefined || typeof value[i] === 'function' ? 'null' : JSON.stringify(value[i], null, 2);
      buf += `${i === 0 ? '' : ','}\n    ${indent(item, '\n    ')}`;
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
