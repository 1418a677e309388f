/**
 * Events from a parsing worker thread to the main thread, as columns in transferred buffers
 * rather than structured-cloned objects (cloning an event costs the main thread about as much as
 * parsing its line). Numbers go in typed arrays, codes in bit fields, and each string once into a
 * byte buffer; a string equal to the previous event's (resource, owner, lease, source) is not sent
 * again. Decoding rebuilds exactly the events the worker had: strings are decoded fresh (never
 * slices of a big shared string, which would keep it alive), tokens above 2^53 travel as digits,
 * and a parsed record that is not its line's text (logfmt, OTLP) travels by structured clone.
 */
import { EVENT_TYPES, OBSERVERS, WRITE_RESULTS, type EventType, type LockEvent, type Observer } from '../model/event.js';

const TYPE_CODES: readonly EventType[] = EVENT_TYPES;
const RESULT_CODES: readonly string[] = ['granted', 'busy', 'ok', 'failed', 'released', 'rejected', 'expired', 'revoked', ...WRITE_RESULTS.filter((r) => r !== 'rejected')];
const OBSERVER_CODES: readonly Observer[] = OBSERVERS;

// String slots of an event, each with a start and an end offset in the byte buffer.
const S_RESOURCE = 0;
const S_OWNER = 1;
const S_LEASE = 2;
const S_OPERATION = 3;
const S_SOURCE = 4;
const S_TEXT = 5;
const S_TOKEN = 6;
const S_RESULT = 7;
const SLOTS = 8;

// flags: per slot, 2 bits: 0 absent, 1 same as the previous event's, 2 in the buffer; and 2 bits of encoding.
const ABSENT = 0;
const SAME = 1;
const SENT = 2;
const ENC_LATIN1 = 0;
const ENC_UTF8 = 1;
const ENC_UTF16 = 2;

/** One batch as sent: plain typed arrays and buffers, all transferable. */
export interface EncodedBatch {
  n: number;
  /** ts, ttlMs (NaN: none), token when exact as a double (NaN: none or sent as digits). */
  num: Float64Array;
  /** line, codes (type | result << 4 | observer << 9), slot states (2 bits each), slot encodings (2 bits each). */
  meta: Int32Array;
  /** Per event and slot: start and end in `bytes`. */
  offsets: Int32Array;
  bytes: Uint8Array;
  /** Records that are not their line's text, by event index. */
  records?: Record<number, unknown>;
}

/** The buffers to transfer along with the batch. */
export function transferList(b: EncodedBatch): ArrayBuffer[] {
  return [b.num.buffer as ArrayBuffer, b.meta.buffer as ArrayBuffer, b.offsets.buffer as ArrayBuffer, b.bytes.buffer as ArrayBuffer];
}

/** Worker side. `source` is the input's default source name: events with it send no string. */
export class BatchEncoder {
  private prev: (string | undefined)[] = new Array(SLOTS).fill(undefined);

  constructor(private readonly source: string) {}

  encode(events: readonly LockEvent[]): EncodedBatch {
    const n = events.length;
    const num = new Float64Array(n * 3);
    const meta = new Int32Array(n * 4);
    const offsets = new Int32Array(n * SLOTS * 2);
    let bytes = Buffer.allocUnsafe(Math.max(1024, n * 160));
    let at = 0;
    let records: Record<number, unknown> | undefined;
    const prev = this.prev;
    for (let i = 0; i < n; i++) {
      const e = events[i]!;
      num[i * 3] = e.ts;
      num[i * 3 + 1] = e.ttlMs === undefined ? NaN : e.ttlMs;
      const token = e.fenceToken;
      const exact = token !== undefined && token <= 9007199254740991n;
      num[i * 3 + 2] = exact ? Number(token) : NaN;
      let result = RESULT_CODES.indexOf(e.result);
      if (result === -1) result = 31;
      meta[i * 4] = e.line;
      meta[i * 4 + 1] = TYPE_CODES.indexOf(e.type) | (result << 4) | (OBSERVER_CODES.indexOf(e.observer) << 9);
      let states = 0;
      let encodings = 0;
      for (let slot = 0; slot < SLOTS; slot++) {
        let s: string | undefined;
        switch (slot) {
          case S_RESOURCE: s = e.resource; break;
          case S_OWNER: s = e.ownerId; break;
          case S_LEASE: s = e.leaseId; break;
          case S_OPERATION: s = e.operationId; break;
          case S_SOURCE: s = e.source === this.source ? undefined : e.source; break;
          case S_TEXT: s = e.text; break;
          case S_TOKEN: s = token !== undefined && !exact ? token.toString() : undefined; break;
          default: s = result === 31 ? e.result : undefined; break;
        }
        if (s === undefined) continue;
        if (slot <= S_SOURCE && s === prev[slot]) {
          states |= SAME << (slot * 2);
          continue;
        }
        if (slot <= S_SOURCE) prev[slot] = s;
        // Room for the worst case (3 bytes per UTF-16 unit).
        if (at + s.length * 3 > bytes.length) {
          const bigger = Buffer.allocUnsafe(Math.max(bytes.length * 2, at + s.length * 3 + 1024));
          bytes.copy(bigger, 0, 0, at);
          bytes = bigger;
        }
        const start = at;
        let enc = ENC_LATIN1;
        if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) {
          // Lone surrogates (from \ud800 escapes) do not survive UTF-8: send the code units as they are.
          enc = ENC_UTF16;
          at += bytes.write(s, at, 'utf16le');
        } else {
          const written = bytes.write(s, at, 'utf8');
          if (written !== s.length) enc = ENC_UTF8;
          at += written;
        }
        offsets[(i * SLOTS + slot) * 2] = start;
        offsets[(i * SLOTS + slot) * 2 + 1] = at;
        states |= SENT << (slot * 2);
        encodings |= enc << (slot * 2);
      }
      meta[i * 4 + 2] = states;
      meta[i * 4 + 3] = encodings;
      if (e.record !== undefined) (records ??= {})[i] = e.record;
    }
    // A copy of exactly the bytes used, in an ArrayBuffer of its own, to transfer.
    const out = new Uint8Array(at);
    out.set(bytes.subarray(0, at));
    return { n, num, meta, offsets, bytes: out, records };
  }
}

/** Main-thread side: the events of a batch, for input `file` whose default source is `source`. */
export class BatchDecoder {
  private prev: string[] = new Array<string>(SLOTS).fill('');

  constructor(
    private readonly file: string,
    private readonly source: string,
  ) {}

  decode(b: EncodedBatch): LockEvent[] {
    const { n, num, meta, records } = b;
    const bytes = Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength);
    const out = new Array<LockEvent>(n);
    for (let i = 0; i < n; i++) {
      const codes = meta[i * 4 + 1]!;
      const ttl = num[i * 3 + 1]!;
      const tokenNum = num[i * 3 + 2]!;
      const tokenDigits = this.str(b, bytes, i, S_TOKEN);
      const resultCode = (codes >>> 4) & 31;
      out[i] = {
        ts: num[i * 3]!,
        type: TYPE_CODES[codes & 15]!,
        resource: this.str(b, bytes, i, S_RESOURCE)!,
        ownerId: this.str(b, bytes, i, S_OWNER),
        leaseId: this.str(b, bytes, i, S_LEASE),
        operationId: this.str(b, bytes, i, S_OPERATION),
        fenceToken: tokenNum === tokenNum ? BigInt(tokenNum) : tokenDigits !== undefined ? BigInt(tokenDigits) : undefined,
        ttlMs: ttl === ttl ? ttl : undefined,
        result: resultCode === 31 ? this.str(b, bytes, i, S_RESULT)! : RESULT_CODES[resultCode]!,
        observer: OBSERVER_CODES[(codes >>> 9) & 3]!,
        source: this.str(b, bytes, i, S_SOURCE) ?? this.source,
        file: this.file,
        line: meta[i * 4]! >>> 0,
        record: records?.[i] as LockEvent['record'],
        text: this.str(b, bytes, i, S_TEXT),
        fields: undefined,
      };
    }
    return out;
  }

  /** The string in a slot of event i: absent, the previous event's, or decoded from the bytes. */
  private str(b: EncodedBatch, bytes: Buffer, i: number, slot: number): string | undefined {
    const state = (b.meta[i * 4 + 2]! >>> (slot * 2)) & 3;
    if (state === ABSENT) return undefined;
    if (state === SAME) return this.prev[slot];
    const start = b.offsets[(i * SLOTS + slot) * 2]!;
    const end = b.offsets[(i * SLOTS + slot) * 2 + 1]!;
    const enc = (b.meta[i * 4 + 3]! >>> (slot * 2)) & 3;
    const s = bytes.toString(enc === ENC_LATIN1 ? 'latin1' : enc === ENC_UTF8 ? 'utf8' : 'utf16le', start, end);
    if (slot <= S_SOURCE) this.prev[slot] = s;
    return s;
  }
}
