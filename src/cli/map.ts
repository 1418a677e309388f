/**
 * `stalewrite map`: for the first N lines of a file, the raw line and the canonical event it
 * became, or why it was ignored or invalid — to debug a mapping in seconds.
 */
import { readLines } from '../ingest/lines.js';
import { fileSource } from '../ingest/open.js';
import { InputStats, toEvents } from '../ingest/records.js';
import type { LineBatch } from '../ingest/lines.js';
import type { FileSummary } from '../model/report.js';
import { isLeaseScoped, type LockEvent } from '../model/event.js';
import type { Profile } from '../profiles/types.js';
import { isoOf } from '../model/time.js';
import { escapeTerminal as t } from '../report/escape.js';
import type { KlogOptions } from '../profiles/parsers.js';
import { Unwrapper, unwrapLines } from '../ingest/wrappers.js';

export async function renderMap(file: string, profile: Profile, limit: number, maxLineBytes: number): Promise<string> {
  const out: string[] = [];
  const stats = new InputStats({ maxProblems: Number.MAX_SAFE_INTEGER });
  // Named as analyze names it: stdin is "stdin", also as the default clock domain.
  const name = file === '-' ? 'stdin' : file;
  const summary = stats.addFile(name);
  let chosen = profile.detect === undefined ? profile : undefined;
  let seen = 0;
  // Container log wrappers are unwrapped as analyze does: each line is shown as the profile reads it.
  const unwrapper = new Unwrapper(maxLineBytes);
  /** Show the lines of a batch; false once the limit is reached. */
  const show = (batch: LineBatch): boolean => {
    if (unwrapper.kind != null && summary.wrapper === undefined) {
      summary.wrapper = unwrapper.kind;
      out.push(`(wrapper: ${unwrapper.kind}, unwrapped; partial lines joined at their first line)`);
    }
    for (let i = 0; i < batch.lines.length; i++) {
      const line = batch.lineNumbers?.[i] ?? batch.firstLine + i;
      const text = batch.lines[i]!;
      if (seen++ >= limit) return false;
      // Its bytes not UTF-8 (or a joined line's, in some piece): invalid, as analyze reads it.
      const one: LineBatch = { firstLine: line, lines: [text], times: batch.times === undefined ? undefined : [batch.times[i]], invalidUtf8: batch.invalidUtf8?.has(i) === true ? new Set([0]) : undefined };
      if (chosen === undefined && text !== null && text.trim() !== '') {
        chosen = profile.detect!(text);
        out.push(`(auto: ${chosen.name})`);
      }
      out.push(`${line}: ${text === null ? '(longer than --max-line-bytes)' : t(clip(text, 300))}`);
      for (const outcome of outcomes(one, chosen ?? profile, name, stats, summary)) out.push(`  -> ${t(outcome)}`);
    }
    summary.lines += batch.joined ?? 0;
    summary.joined += batch.joined ?? 0;
    return true;
  };
  for await (const batch of unwrapLines(readLines(fileSource(file).open(), { maxLineBytes }), unwrapper)) if (!show(batch)) break;
  const s = summary;
  out.push('', `${s.lines} lines shown: ${s.events} events, ${s.blank} blank, ${s.ignored} ignored, ${s.invalid} invalid${s.expanded > 0 ? ` (${s.expanded} more records in batches)` : ''}${s.joined > 0 ? ` (${s.joined} partial lines joined)` : ''}`);
  return out.join('\n') + '\n';
}

/** What each record of one line became: an event, blank, ignored or invalid with its reason. */
function outcomes(one: LineBatch, profile: Profile, file: string, stats: InputStats, summary: FileSummary): string[] {
  const text = one.lines[0]!;
  const before = { ...summary };
  const problems = stats.problems.length;
  // Count the line as analyze does, then describe each record.
  toEvents(one, profile, file, file, stats, summary);
  if (text === null || summary.invalid > before.invalid && summary.events === before.events && summary.ignored === before.ignored && summary.expanded === before.expanded) {
    return stats.problems.slice(problems).map((p) => `invalid: ${p.reason}`);
  }
  if (summary.blank > before.blank) return ['blank'];
  let record: unknown;
  const wrapperTime = one.times?.[0];
  if (profile.parseLine !== undefined) record = profile.parseLine(text, wrapperTime);
  else record = JSON.parse(text);
  const records = profile.expand !== undefined ? profile.expand(record as Record<string, unknown>) : [record as Record<string, unknown>];
  if (records.length === 0) return ['ignored: a batch with no records'];
  return records.map((r, i) => {
    const prefix = records.length > 1 ? `record ${i + 1}: ` : '';
    const ev = profile.toEvent(r, { file, line: one.firstLine, source: file, text, wrapperTime });
    if (ev === null) return `${prefix}ignored: no match rule of the profile matches (not a lock or write event)`;
    if (typeof ev === 'string') return `${prefix}invalid: ${ev}`;
    return prefix + describe(ev);
  });
}

function describe(e: LockEvent): string {
  // A lease-scoped event names no resource: it applies to every resource its lease holds.
  const canonical: Record<string, unknown> = isLeaseScoped(e) ? { ts: isoOf(e.ts), type: e.type, scope: 'lease' } : { ts: isoOf(e.ts), type: e.type, resource: e.resource };
  if (e.ownerId !== undefined) canonical.ownerId = e.ownerId;
  if (e.leaseId !== undefined) canonical.leaseId = e.leaseId;
  if (e.operationId !== undefined) canonical.operationId = e.operationId;
  if (e.fenceToken !== undefined) canonical.fenceToken = e.fenceToken.toString();
  if (e.ttlMs !== undefined) canonical.ttlMs = e.ttlMs;
  canonical.result = e.result;
  canonical.observer = e.observer;
  canonical.source = e.source;
  return JSON.stringify(canonical);
}

/**
 * `map --suggest`: a mapping drafted from the first lines of each file, as JSON for stdout (one
 * match rule per line), and what was recognised and what was not, for stderr. The mapping is
 * compiled before it is printed, so what is printed runs as it is.
 */
export async function renderSuggestion(files: readonly string[], maxLineBytes: number, klog: KlogOptions): Promise<{ mapping: string; messages: string[] }> {
  const { suggestMapping, SUGGEST_SAMPLE_LINES } = await import('../profiles/suggest.js');
  const { compileMapping } = await import('../profiles/mapping.js');
  const samples = [];
  for (const file of files) samples.push({ name: file, lines: await firstLines(file, SUGGEST_SAMPLE_LINES, maxLineBytes) });
  const s = suggestMapping(samples, { klog });
  compileMapping(s.mapping, 'suggested', { klog });
  const messages = [...s.notes.map((n) => `stalewrite: ${n}`), ...s.questions.map((q) => `stalewrite: ? ${q}`)];
  if (s.questions.length === 0) messages.push('stalewrite: no open questions; check the guesses above');
  return { mapping: formatMapping(s.mapping), messages };
}

/**
 * The first lines of a file as a profile reads them: container log wrappers unwrapped, as analyze
 * does; null for a line too long, or whose bytes are not UTF-8 (analyze counts it invalid, so a
 * drafted mapping does not learn from it).
 */
export async function firstLines(file: string, limit: number, maxLineBytes: number): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for await (const b of unwrapLines(readLines(fileSource(file).open(), { maxLineBytes }), new Unwrapper(maxLineBytes))) {
    b.lines.forEach((l, i) => out.push(b.invalidUtf8?.has(i) === true ? null : l));
    if (out.length >= limit) break;
  }
  return out.slice(0, limit);
}

/** Pretty JSON, with each match rule and value map on one line. */
export function formatMapping(m: object): string {
  const entries = Object.entries(m).map(([k, v]) => {
    let body: string;
    if (Array.isArray(v) && k === 'match') body = `[\n${v.map((r) => `    ${JSON.stringify(r)}`).join(',\n')}\n  ]`;
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) body = `{\n${Object.entries(v).map(([k2, v2]) => `    ${JSON.stringify(k2)}: ${JSON.stringify(v2)}`).join(',\n')}\n  }`;
    else body = JSON.stringify(v);
    return `  ${JSON.stringify(k)}: ${body}`;
  });
  return `{\n${entries.join(',\n')}\n}\n`;
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) + '…' : s;
}
