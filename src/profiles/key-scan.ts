/**
 * The canonical key reader over a whole chunk at once (README "Scaling out"): readKey()'s
 * structural pass, and the reading of a plain UTC `ts`, for the lines of a batch in a few calls
 * into WebAssembly (key-scan.c, 128-bit SIMD), then readKey()'s own tail (finishLook) per line.
 * Two to three times as fast as readKey line by line (README "Performance"), with the same answers,
 * which test/key-scan.test.ts checks on every fixture line, on hostile lines and on random ones.
 *
 * One per thread (a worker thread of --jobs has its own), used by one batch at a time: scan() a
 * batch, then read() its lines, before the next scan() of any KeyScan of the thread (they share the
 * module's memory: a read after another's scan throws). Where WebAssembly cannot run (`--jitless`),
 * or for a chunk over MAX_CHUNK, scan() says no and the caller reads line by line with readKey.
 */
import { finishLook, readKey, type KeyLook } from './canonical-key.js';
import { KEY_SCAN_WASM } from './key-scan-wasm.js';
import type { KeyBatchReader } from './types.js';
import { MAX_PARTITIONS } from '../partition/hash.js';

/** Ints key-scan.c writes per line (its PER_LINE): the seen bits or -1, then 4 per slot. */
const PER_LINE = 25;
/** key-scan.c's TS_READ: a bit of the seen bits, set when it read the `ts` (then in the line's double). */
const TS_READ = 1 << 16;
/** The seen bits of `source`, `hostname` and `host.name` (canonical-key.ts's slots 3 to 5): a line with any of them names its source. */
const NAMES_SOURCE = (1 << 3) | (1 << 4) | (1 << 5);
/** Bytes past the chunk the vector loads may read (key-scan.c). */
const PAD = 16;
/** A larger chunk (a very long line) is read line by line: the module's memory is made for this much and never grown. */
export const MAX_CHUNK = 16 * 1024 * 1024;

interface Wasm {
  memory: WebAssembly.Memory;
  scanLines: (b: number, len: number, starts: number, ends: number, count: number, out: number, ts: number, parts: number, n: number) => void;
  heapBase: number;
}

/** The module's instance: undefined before the first scan, null where WebAssembly cannot run. */
let wasm: Wasm | null | undefined;

function instantiate(): Wasm | null {
  try {
    const module = new WebAssembly.Module(Buffer.from(KEY_SCAN_WASM, 'base64'));
    const e = new WebAssembly.Instance(module, {}).exports as { memory: WebAssembly.Memory; scan_lines: Wasm['scanLines']; __heap_base: WebAssembly.Global };
    return { memory: e.memory, scanLines: e.scan_lines, heapBase: Number(e.__heap_base.value) };
  } catch {
    return null;
  }
}

const align = (n: number, to: number) => Math.ceil(n / to) * to;

/**
 * Lines scanned per call into the module: its memory holds the chunk and one block's columns
 * (116 bytes a line), so a chunk of a million blank lines costs 0.5 MB there, not 117.
 */
export const BLOCK = 4096;

/** Scans so far, of every KeyScan of this thread: they share the module's memory. */
let generation = 0;

/** The batch reader: scan() a chunk's lines, then read() each. */
export class KeyScan implements KeyBatchReader {
  readonly lineReader = readKey;
  private bytes = new Uint8Array(0);
  private ints = new Int32Array(0);
  private doubles = new Float64Array(0);
  private chunk: Uint8Array = this.bytes;
  private starts: ArrayLike<number> = this.ints;
  private ends: ArrayLike<number> = this.ints;
  private count = 0;
  /** This reader's scan (generation), and the first line of the block in the module's memory (-1: none yet). */
  private gen = -1;
  private blockStart = -1;
  /** Where the chunk, the block's bounds and its output are in the module's memory, in bytes. */
  private chunkAt = 0;
  private startsAt = 0;
  private endsAt = 0;
  private outAt = 0;
  private tsAt = 0;
  private partsAt = 0;
  /** The partitions of the last scan (0: none asked for). */
  private partitions = 0;

  /**
   * Take lines [0, count) of `chunk` (line k is [starts[k], ends[k]), integer offsets, as the line
   * splitter gives them); they are read block by block as read() asks for them. False when it
   * cannot run here: read the lines with readKey instead.
   */
  scan(chunk: Uint8Array, starts: ArrayLike<number>, ends: ArrayLike<number>, count: number, partitions = 0): boolean {
    if (chunk.length > MAX_CHUNK) return false;
    const w = (wasm ??= instantiate());
    if (w === null) return false;
    const block = Math.min(count, BLOCK);
    const chunkAt = align(w.heapBase, 16);
    const startsAt = align(chunkAt + chunk.length + PAD, 4);
    const endsAt = startsAt + 4 * block;
    const outAt = endsAt + 4 * block;
    const tsAt = align(outAt + 4 * PER_LINE * block, 8);
    const partsAt = tsAt + 8 * block;
    // The module's memory is never grown: growing detaches its old ArrayBuffer, and after one
    // detach V8 checks for detached buffers on every typed-array access of the thread, for the rest
    // of its life (a byte loop became 75% slower, the partition run's parse 22%). It is made big
    // enough for a MAX_CHUNK chunk (scripts/wasm.mjs --initial-memory; pages are only committed
    // when touched), which test/key-scan.test.ts checks.
    if (partsAt + 4 * block > w.memory.buffer.byteLength) return false;
    if (this.bytes.buffer !== w.memory.buffer) {
      this.bytes = new Uint8Array(w.memory.buffer);
      this.ints = new Int32Array(w.memory.buffer);
      this.doubles = new Float64Array(w.memory.buffer);
    }
    this.bytes.set(chunk, chunkAt);
    this.bytes.fill(0, chunkAt + chunk.length, chunkAt + chunk.length + PAD);
    this.chunk = chunk;
    this.starts = starts;
    this.ends = ends;
    this.count = count;
    this.chunkAt = chunkAt;
    this.startsAt = startsAt;
    this.endsAt = endsAt;
    this.outAt = outAt;
    this.tsAt = tsAt;
    this.partsAt = partsAt;
    this.partitions = partitions > 0 && partitions <= MAX_PARTITIONS ? partitions : 0;
    this.gen = ++generation;
    this.blockStart = -1;
    return true;
  }

  /** readKey() of line k of the chunk scanned last, into `out`. */
  read(k: number, out: KeyLook): boolean {
    const j = this.slot(k);
    const o = (this.outAt >> 2) + PER_LINE * j;
    const seen = this.ints[o]!;
    return seen !== -1 && finishLook(this.chunk, seen, this.ints, o + 1, out, (seen & TS_READ) !== 0 ? this.doubles[(this.tsAt >> 3) + j]! : Number.NaN);
  }

  /**
   * For a scan with partitions: the partition of line k when the module read all of its look (a
   * plain key, a plain UTC `ts`, no source named), with its time into `out` as read() gives it and
   * no source; else -1 (read() then reads the line).
   */
  quick(k: number, out: KeyLook): number {
    if (this.partitions === 0) return -1;
    const j = this.slot(k);
    const o = (this.outAt >> 2) + PER_LINE * j;
    const seen = this.ints[o]!;
    if (seen === -1 || (seen & TS_READ) === 0 || (seen & NAMES_SOURCE) !== 0) return -1;
    const p = this.ints[(this.partsAt >> 2) + j]!;
    if (p < 0) return -1;
    out.keyStart = this.ints[o + 1]!;
    out.keyEnd = this.ints[o + 2]!;
    out.key = undefined;
    out.ts = this.doubles[(this.tsAt >> 3) + j]!;
    out.source = undefined;
    return p;
  }

  /** Whether the module read line k's `ts` itself (for tests: the TypeScript reads every other). */
  timeRead(k: number): boolean {
    const seen = this.ints[(this.outAt >> 2) + PER_LINE * this.slot(k)]!;
    return seen !== -1 && (seen & TS_READ) !== 0;
  }

  /** Line k's place in the block in the module's memory, its block scanned first when it is not there. */
  private slot(k: number): number {
    if (!(k >= 0 && k < this.count)) throw new RangeError(`line ${k} is not in the batch scanned (${this.count} lines)`);
    if (this.gen !== generation) throw new Error('another KeyScan of this thread scanned since this one: one batch at a time');
    let j = k - this.blockStart;
    if (this.blockStart === -1 || j < 0 || j >= BLOCK) {
      const first = k - (k % BLOCK);
      const n = Math.min(BLOCK, this.count - first);
      put(this.ints, this.startsAt >> 2, this.starts, first, n);
      put(this.ints, this.endsAt >> 2, this.ends, first, n);
      wasm!.scanLines(this.chunkAt, this.chunk.length, this.startsAt, this.endsAt, n, this.outAt, this.tsAt, this.partsAt, this.partitions);
      this.blockStart = first;
      j = k - first;
    }
    return j;
  }
}

/** Values [from, from + n) of `a` into `ints` from `at`. */
function put(ints: Int32Array, at: number, a: ArrayLike<number>, from: number, n: number): void {
  if (ArrayBuffer.isView(a)) ints.set((a as Int32Array).subarray(from, from + n), at);
  else for (let k = 0; k < n; k++) ints[at + k] = a[from + k]!;
}

/** This thread's batch reader. */
export const keyScan = new KeyScan();
