import type { LockEvent } from '../model/event.js';

/** Where a record came from. */
export interface RecordOrigin {
  readonly file: string;
  readonly line: number;
  /** Default `source` for events without one. */
  readonly source: string;
  /** The raw line text, for exact recovery of large numbers. */
  readonly text?: string;
}

/**
 * A profile turns one parsed JSON record into a canonical event.
 * Returns the event, `null` when the record is not a lock/write event under this profile
 * (counted as ignored), or a string: the one-line reason the record is invalid.
 */
export interface Profile {
  readonly name: string;
  toEvent(record: Record<string, unknown>, origin: RecordOrigin): LockEvent | string | null;
}
