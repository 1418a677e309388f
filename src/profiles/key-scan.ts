/**
 * The canonical key reader over a whole chunk at once (README "Scaling out"): readKey()'s
 * structural pass for every line of a batch in one call into WebAssembly (key-scan.c, 128-bit
 * SIMD), then readKey()'s own tail (finishLook) per line. About twice as fast as readKey line by
 * line; the same answers, which test/key-scan.test.ts checks on every fixture line, on hostile
 * lines and on random ones.
 *
 * One per thread (a worker thread of --jobs has its own), used by one batch at a time: scan() a
 * batch, then read() its lines, before the next scan(). Where WebAssembly cannot run (`--jitless`),
 * or for a chunk over MAX_CHUNK, scan() says no and the caller reads line by line with readKey.
 */
import { finishLook, readKey, type KeyLook } from './canonical-key.js';
import { KEY_SCAN_WASM } from './key-scan-wasm.js';
import type { KeyBatchReader } from './types.js';

/** Ints key-scan.c writes per line (its PER_LINE): the seen bits or -1, then 4 per slot. */
const PER_LINE = 25;
/** key-scan.c's TS_READ: a bit of the seen bits, set when it read the `ts` (then in the line's double). */
const TS_READ = 1 << 16;
/** Bytes past the chunk the vector loads may read (key-scan.c). */
const PAD = 16;
/** A larger chunk (a very long line) is read line by line: the module's memory stays small. */
export const MAX_CHUNK = 16 * 1024 * 1024;
const PAGE = 65536;

interface Wasm {
  memory: WebAssembly.Memory;
  scanLines: (b: number, len: number, starts: number, ends: number, count: number, out: number, ts: number) => void;
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

/** The batch reader: scan() a chunk's lines, then read() each. */
export class KeyScan implements KeyBatchReader {
  readonly lineReader = readKey;
  private bytes = new Uint8Array(0);
  private ints = new Int32Array(0);
  private doubles = new Float64Array(0);
  /** Where the output is in the module's memory, in ints, and the times, in doubles. */
  private outAt = 0;
  private tsAt = 0;
  private chunk: Uint8Array = this.bytes;
  private count = 0;

  /**
   * The structural pass over lines [0, count) of `chunk` (line k is [starts[k], ends[k])). False
   * when it cannot run here: read the lines with readKey instead.
   */
  scan(chunk: Uint8Array, starts: ArrayLike<number>, ends: ArrayLike<number>, count: number): boolean {
    if (chunk.length > MAX_CHUNK) return false;
    const w = (wasm ??= instantiate());
    if (w === null) return false;
    const chunkAt = align(w.heapBase, 16);
    const startsAt = align(chunkAt + chunk.length + PAD, 4);
    const endsAt = startsAt + 4 * count;
    const outAt = endsAt + 4 * count;
    const tsAt = align(outAt + 4 * PER_LINE * count, 8);
    const need = tsAt + 8 * count;
    if (need > w.memory.buffer.byteLength) {
      try {
        w.memory.grow(Math.ceil((need - w.memory.buffer.byteLength) / PAGE));
      } catch {
        return false;
      }
    }
    if (this.bytes.buffer !== w.memory.buffer) {
      this.bytes = new Uint8Array(w.memory.buffer);
      this.ints = new Int32Array(w.memory.buffer);
      this.doubles = new Float64Array(w.memory.buffer);
    }
    this.bytes.set(chunk, chunkAt);
    this.bytes.fill(0, chunkAt + chunk.length, chunkAt + chunk.length + PAD);
    put(this.ints, startsAt >> 2, starts, count);
    put(this.ints, endsAt >> 2, ends, count);
    w.scanLines(chunkAt, chunk.length, startsAt, endsAt, count, outAt, tsAt);
    this.outAt = outAt >> 2;
    this.tsAt = tsAt >> 3;
    this.chunk = chunk;
    this.count = count;
    return true;
  }

  /** readKey() of line k of the chunk scanned last, into `out`. */
  read(k: number, out: KeyLook): boolean {
    if (!(k >= 0 && k < this.count)) throw new RangeError(`line ${k} is not in the batch scanned (${this.count} lines)`);
    const o = this.outAt + PER_LINE * k;
    const seen = this.ints[o]!;
    return seen !== -1 && finishLook(this.chunk, seen, this.ints, o + 1, out, (seen & TS_READ) !== 0 ? this.doubles[this.tsAt + k]! : Number.NaN);
  }
}

/** The first `count` values of `a` into `ints` from `at`. */
function put(ints: Int32Array, at: number, a: ArrayLike<number>, count: number): void {
  if (a.length === count) ints.set(a, at);
  else if (ArrayBuffer.isView(a)) ints.set((a as Int32Array).subarray(0, count), at);
  else for (let k = 0; k < count; k++) ints[at + k] = a[k]!;
}

/** This thread's batch reader. */
export const keyScan = new KeyScan();
