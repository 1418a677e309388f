/**
 * `stalewrite map`: for the first N lines of a file, the raw line and the canonical event it
 * became, or why it was ignored or invalid — to debug a mapping in seconds.
 */
import { readLines } from '../ingest/lines.js';
import { fileSource } from '../ingest/open.js';
import { InputStats, toEvents } from '../ingest/records.js';
import type { LineBatch } from '../ingest/lines.js';
import type { FileSummary } from '../model/report.js';
import type { LockEvent } from '../model/event.js';
import type { Profile } from '../profiles/types.js';
import { isoOf } from '../model/time.js';
import { escapeTerminal as t } from '../report/escape.js';

export async function renderMap(file: string, profile: Profile, limit: number, maxLineBytes: number): Promise<string> {
  const out: string[] = [];
  const stats = new InputStats({ maxProblems: Number.MAX_SAFE_INTEGER });
  const summary = stats.addFile(file);
  let chosen = profile.detect === undefined ? profile : undefined;
  let seen = 0;
  outer: for await (const batch of readLines(fileSource(file).open(), { maxLineBytes })) {
    for (let i = 0; i < batch.lines.length; i++) {
      const line = batch.firstLine + i;
      const text = batch.lines[i]!;
      if (seen++ >= limit) break outer;
      const one = { firstLine: line, lines: [text] };
      if (chosen === undefined && text !== null && text.trim() !== '') {
        chosen = profile.detect!(text);
        out.push(`(auto: ${chosen.name})`);
      }
      out.push(`${line}: ${text === null ? '(longer than --max-line-bytes)' : t(clip(text, 300))}`);
      for (const outcome of outcomes(one, chosen ?? profile, file, stats, summary)) out.push(`  -> ${t(outcome)}`);
    }
  }
  const s = summary;
  out.push('', `${s.lines} lines shown: ${s.events} events, ${s.blank} blank, ${s.ignored} ignored, ${s.invalid} invalid${s.expanded > 0 ? ` (${s.expanded} more records in batches)` : ''}`);
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
  if (profile.parseLine !== undefined) record = profile.parseLine(text);
  else record = JSON.parse(text);
  const records = profile.expand !== undefined ? profile.expand(record as Record<string, unknown>) : [record as Record<string, unknown>];
  if (records.length === 0) return ['ignored: a batch with no records'];
  return records.map((r, i) => {
    const prefix = records.length > 1 ? `record ${i + 1}: ` : '';
    const ev = profile.toEvent(r, { file, line: one.firstLine, source: file, text });
    if (ev === null) return `${prefix}ignored: no match rule of the profile matches (not a lock or write event)`;
    if (typeof ev === 'string') return `${prefix}invalid: ${ev}`;
    return prefix + describe(ev);
  });
}

function describe(e: LockEvent): string {
  const canonical: Record<string, unknown> = { ts: isoOf(e.ts), type: e.type, resource: e.resource };
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

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) + '…' : s;
}
