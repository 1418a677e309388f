import type { LockEvent } from '../model/event.js';
import type { KeyLook } from './canonical-key.js';
import type { ServiceId } from '../model/services.js';

/** A profile's partition key reader over a chunk's lines at once (Profile.partitionKeys). */
export interface KeyBatchReader {
  /** The line reader it gives the answers of: it is used only for a profile whose partitionKey is this one. */
  readonly lineReader: (bytes: Uint8Array, start: number, end: number, out: KeyLook) => boolean;
  /**
   * Read lines [0, count) of `chunk` (line k is bytes [starts[k], ends[k])); false when it cannot
   * here (read line by line then). With `partitions` (N of a partition run), quick() may answer.
   */
  scan(chunk: Uint8Array, starts: ArrayLike<number>, ends: ArrayLike<number>, count: number, partitions?: number): boolean;
  /** What partitionKey gives for line k of the chunk scanned last, into `out`. */
  read(k: number, out: KeyLook): boolean;
  /**
   * The partition (of the scan's N) of line k's key, with read()'s answer into `out`, where the
   * reader has both at hand; -1 where it has not (then read()).
   */
  quick?(k: number, out: KeyLook): number;
}

/** Where a record came from. */
export interface RecordOrigin {
  readonly file: string;
  readonly line: number;
  /** Default `source` for events without one. */
  readonly source: string;
  /** The raw line text, for exact recovery of large numbers. */
  readonly text?: string;
  /** Where the line is in a plain-file input (see LockEvent.offset); events whose `text` is this line carry them. */
  readonly offset?: number;
  readonly bytes?: number;
  /**
   * The time of the container log wrapper the line came in (docker json-file, CRI, kubectl
   * --timestamps; RFC 3339): the record's time when it carries none of its own.
   */
  readonly wrapperTime?: string;
}

/**
 * A profile turns one parsed JSON record into a canonical event.
 * Returns the event, `null` when the record is not a lock/write event under this profile
 * (counted as ignored), or a string: the one-line reason the record is invalid.
 */
export interface Profile {
  readonly name: string;
  /**
   * The lock service this profile's inputs come from, when it declares one (a mapping's
   * `service`): a fact about each input it reads (FileSummary.service), which rules read through
   * RuleContext.service; never a field of the events.
   */
  readonly service?: ServiceId;
  /**
   * The kind of input this profile reads in which most lines are expected to be no events — a
   * server's or an application's own log, where the lines it reads are few among the others:
   * `text`, an input whose first line is not a JSON object (a text log, for a parser of text
   * lines); `all`, every input. Such an input is marked `sparse` (FileSummary.sparse), and its
   * ignored lines are not taken as a sign of a wrong profile (verdict reason `mostly-unread`).
   */
  readonly sparse?: 'text' | 'all';
  /**
   * How a line becomes a record; default JSON.parse. Returns a string: the reason it is invalid.
   * `wrapperTime` is the container wrapper's time of the line, if any (klog text takes its year).
   */
  readonly parseLine?: (text: string, wrapperTime?: string) => Record<string, unknown> | string;
  /** Split a record into several (e.g. an OTLP export batch); default: the record itself. */
  readonly expand?: (record: Record<string, unknown>) => Record<string, unknown>[];
  /**
   * Optional fast path from the line's text straight to an event, skipping the record; `null`
   * when the line is sure to be no lock/write event (ignored). Returns undefined whenever the
   * general path (parseLine/JSON.parse, then toEvent) must decide; it must never give a
   * different answer than that path would.
   */
  readonly fastEvent?: (text: string, origin: RecordOrigin) => LockEvent | null | undefined;
  /**
   * Optional byte path, tried before fastEvent on the line's bytes [start, end) of `bytes`, for
   * lines of a plain file read by reference (origin.offset and origin.bytes are set): the event,
   * which holds no `text` (its line is read back when needed), or undefined under the same rule
   * as fastEvent. It must not keep `bytes`.
   */
  readonly fastBytes?: (bytes: Uint8Array, start: number, end: number, origin: RecordOrigin) => LockEvent | undefined;
  /**
   * Optional partition key reader (`--partition`, README "Scaling out"): the resource key, time
   * and source of the line at bytes [start, end), read without parsing the line, into `out`; false
   * when only the full parse can tell. When the line is an event, they must be the event's.
   */
  readonly partitionKey?: (bytes: Uint8Array, start: number, end: number, out: KeyLook) => boolean;
  /**
   * Optional: partitionKey over every line of a chunk at once (faster), with the same answers.
   * One per thread, one batch at a time: scan() a chunk's lines, then read() each. Used only while
   * its lineReader is this profile's partitionKey: a profile spread from another
   * (`{ ...canonical, partitionKey: mine }`) that replaces partitionKey is read line by line.
   */
  readonly partitionKeys?: KeyBatchReader;
  toEvent(record: Record<string, unknown>, origin: RecordOrigin): LockEvent | string | null;
  /**
   * It may give lease-scoped events (resource LEASE_SCOPED: a session or lease ended wherever it
   * is held): the engine then keeps an index of which resources each lease holds.
   */
  readonly leaseScoped?: boolean;
  /** For `auto`: the profile to use for an input, from its first non-blank line. */
  readonly detect?: (firstLine: string) => Profile;
  /**
   * How to build this profile again from plain data, in a parsing worker thread (profiles are
   * functions and cannot be sent). A profile without one is run on the main thread only.
   */
  readonly recipe?: ProfileRecipe;
}

/** Plain data from which rebuildProfile() makes an equal profile. */
export type ProfileRecipe =
  | { readonly kind: 'canonical' }
  | { readonly kind: 'auto'; readonly options: unknown }
  | { readonly kind: 'mapping'; readonly spec: unknown; readonly name: string; readonly options: unknown };
