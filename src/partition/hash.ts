/**
 * The partition hash (README "Scaling out"): FNV-1a 64 over the UTF-8 bytes of the resource key,
 * taken modulo the number of partitions. The same on every machine and in every version: a
 * resource is analysed in partition `fnv1a64(utf8(key)) mod N`. (A lone surrogate, which UTF-8
 * cannot encode, is hashed as U+FFFD, as Buffer.from(key, 'utf8') gives it.)
 *
 * The 64-bit state is kept as two 32-bit halves: FNV's prime is 2^40 + 0x1b3, so
 * h * prime = h * 0x1b3 + (h << 40) mod 2^64.
 */

/** Partitions at most (a run's --partition I/N, --jobs N). */
export const MAX_PARTITIONS = 4096;

const OFFSET_HI = 0xcbf29ce4;
const OFFSET_LO = 0x84222325;
const TWO_32 = 4294967296;

/** The low 32 bits of the last hash fnv() computed (it returns the high ones). */
let lastLo = 0;

/**
 * FNV-1a 64 of bytes [start, end) of `b`: h = (h ^ byte) * (2^40 + 0x1b3) mod 2^64 per byte, in
 * 32-bit integer steps (the low half times 0x1b3 in 16-bit pieces, so its carry into the high half
 * is exact). Returns the high 32 bits; the low ones are in lastLo. It runs once per line of a
 * partition run: locals only, no allocation.
 */
function fnv(b: Uint8Array, start: number, end: number): number {
  let hi = OFFSET_HI | 0;
  let lo = OFFSET_LO | 0;
  for (let i = start; i < end; i++) {
    lo ^= b[i]!;
    const c = (lo & 0xffff) * 0x1b3;
    const mid = (lo >>> 16) * 0x1b3 + (c >>> 16);
    hi = (Math.imul(hi, 0x1b3) + (lo << 8) + (mid >>> 16)) | 0;
    lo = ((mid & 0xffff) << 16) | (c & 0xffff);
  }
  lastLo = lo >>> 0;
  return hi >>> 0;
}

/** (hi * 2^32 + lo) mod n, exactly (n ≤ MAX_PARTITIONS). */
function mod64(hi: number, lo: number, n: number): number {
  return ((hi % n) * (TWO_32 % n) + (lo % n)) % n;
}

/** The partition of the resource key whose UTF-8 bytes are [start, end) of `b`. */
export function partitionOfBytes(b: Uint8Array, start: number, end: number, n: number): number {
  if (n === 1) return 0;
  const hi = fnv(b, start, end);
  return mod64(hi, lastLo, n);
}

const encoder = new TextEncoder();
/** A key's bytes, encoded into one buffer reused (grown when a key is longer). */
let scratch = new Uint8Array(256);

/** The partition of a resource key. */
export function partitionOf(key: string, n: number): number {
  if (n === 1) return 0;
  const len = utf8(key);
  return partitionOfBytes(scratch, 0, len, n);
}

/** Encode `key` as UTF-8 into `scratch`; its length in bytes. */
function utf8(key: string): number {
  if (key.length * 3 > scratch.length) scratch = new Uint8Array(key.length * 3 + 64);
  return encoder.encodeInto(key, scratch).written;
}

/** FNV-1a 64 of a string's UTF-8 bytes, as 16 lowercase hex digits (test vectors in the README). */
export function fnv1a64Hex(text: string): string {
  const hi = fnv(scratch, 0, utf8(text));
  return hi.toString(16).padStart(8, '0') + lastLo.toString(16).padStart(8, '0');
}

/**
 * A finding's id (README "JSON report"): `F` and the first 12 hex digits of FNV-1a 64 over
 * `<rule>\n<resource>\n<k>`, k being the finding's place (1, 2, …) among the findings made on its
 * resource, in the order made. So it depends on the finding's content and its place among its
 * resource's findings, never on the order findings of other resources came in: a single run, the
 * merge of partition runs and --jobs give every finding the same id.
 */
export function findingId(rule: string, resource: string, k: number): string {
  return `F${fnv1a64Hex(`${rule}\n${resource}\n${k}`).slice(0, 12)}`;
}
