/**
 * `stalewrite map`: for the first N lines of a file, the raw line and the canonical event it
 * became, or why it was ignored or invalid — to debug a mapping in seconds.
 */
import { readLines } from '../ingest/lines.js';
import { fileSource } from '../ingest/open.js';
import { InputStats, toEvents } from '../ingest/records.js';
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
      const before = { ...summary };
      const problems = stats.problems.length;
      const events = toEvents(one, chosen ?? profile, file, file, stats, summary);
      out.push(`${line}: ${text === null ? '(longer than --max-line-bytes)' : t(clip(text, 300))}`);
      if (events.length > 0) for (const e of events) out.push(`  -> ${t(describe(e))}`);
      else if (summary.blank > before.blank) out.push('  -> blank');
      else if (summary.ignored > before.ignored) out.push('  -> ignored: no match rule of the profile matches (not a lock or write event)');
      else if (stats.problems.length > problems) out.push(`  -> invalid: ${t(stats.problems[stats.problems.length - 1]!.reason)}`);
    }
  }
  const s = summary;
  out.push('', `${s.lines} lines shown: ${s.events} events, ${s.blank} blank, ${s.ignored} ignored, ${s.invalid} invalid${s.expanded > 0 ? ` (${s.expanded} more records in batches)` : ''}`);
  return out.join('\n') + '\n';
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
