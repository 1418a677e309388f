/** Shared by the differential tests of the fast paths (fast-path, fast-bytes, fast-mapping). */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { LockEvent } from '../../src/model/event.js';
import type { Profile, RecordOrigin } from '../../src/profiles/types.js';

/** The line as a JSON object, or why it is not one. */
export function parseObject(text: string): Record<string, unknown> | string {
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return 'not an object';
  return record as Record<string, unknown>;
}

/** The general path alone: JSON.parse, then the profile's toEvent (a reason, or null for no event). */
export function generalEvent(profile: Profile, text: string, origin: RecordOrigin): LockEvent | string | null {
  const record = parseObject(text);
  return typeof record === 'string' ? record : profile.toEvent(record, { ...origin, text });
}

/** Every file below `dir` (recursively) that `keep` accepts. */
export function filesUnder(dir: string, keep: (path: string) => boolean = () => true): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p, keep));
    else if (keep(p)) out.push(p);
  }
  return out;
}
