/**
 * One input, from byte chunks to batches of canonical events: lines, records, events, every line
 * counted in the input's summary. Shared by the main thread and the parsing worker threads.
 */
import type { LockEvent } from '../model/event.js';
import type { FileSummary } from '../model/report.js';
import { canonical } from '../profiles/canonical.js';
import type { Profile } from '../profiles/types.js';
import { readLines } from './lines.js';
import { InputError } from './open.js';
import { firstContentLine, toEvents, type InputStats } from './records.js';

export async function* parseSource(
  chunks: AsyncIterable<Buffer>,
  name: string,
  profile: Profile,
  stats: InputStats,
  summary: FileSummary,
  maxLineBytes: number | undefined,
): AsyncGenerator<{ events: LockEvent[]; lines: number }> {
  try {
    let chosen = profile.detect === undefined ? profile : undefined;
    for await (const batch of readLines(chunks, { maxLineBytes })) {
      if (chosen === undefined) {
        const first = firstContentLine(batch);
        chosen = first === undefined ? undefined : profile.detect!(first);
        if (chosen === undefined) {
          // Only blank or over-long lines so far: count them; any profile does.
          toEvents(batch, canonical, name, name, stats, summary);
          yield { events: [], lines: batch.lines.length };
          continue;
        }
        summary.profile = chosen.name;
      }
      yield { events: toEvents(batch, chosen, name, name, stats, summary), lines: batch.lines.length };
    }
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    // The input broke off (truncated gzip, read error): keep what was read, and say so.
    summary.error = err.message;
  }
}
