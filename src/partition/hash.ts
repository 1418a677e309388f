/**
 * The partition hash (README "Scaling out"): FNV-1a 64 over the UTF-8 bytes of the resource key,
 * taken modulo the number of partitions. The same on every machine and in every version: a
 * resource is analysed in partition `fnv1a64(utf8(key)) mod N`. (A lone surrogate, which UTF-8
 * cannot encode, is hashed as U+FFFD, as Buffer.from(key, 'utf8') gives it.)
 *
 * The 64-bit state is kept as two 32-bit halves (exact in doubles): FNV's prime is 2^40 + 0x1b3,
 * so h * prime = h * 0x1b3 + (h << 40).
 */

/** Partitions at most (a run's --partition I/N, --jobs N). */
export const MAX_PARTITIONS = 4096;

const OFFSET_HI = 0xcbf29ce4;
const OFFSET_LO = 0x84222325;
const TWO_32 = 4294967296;

/** FNV-1a 64 of bytes [start, end) of `b`, as [high 32 bits, low 32 bits]. */
export function fnv1a64Parts(b: Uint8Array, start = 0, end = b.length): [number, number] {
  let hi = OFFSET_HI;
  let lo = OFFSET_LO;
  for (let i = start; i < end; i++) {
    lo ^= b[i]!;
    const l = (lo >>> 0) * 0x1b3;
    const h = hi * 0x1b3 + ((lo << 8) >>> 0) + Math.floor(l / TWO_32);
    lo = l >>> 0;
    hi = h >>> 0;
  }
  return [hi >>> 0, lo >>> 0];
}

/** FNV-1a 64 of a string's UTF-8 bytes, as 16 lowercase hex digits (test vectors: README). */
export function fnv1a64Hex(text: string): string {
  const [hi, lo] = fnv1a64Parts(Buffer.from(text, 'utf8'));
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** (hi * 2^32 + lo) mod n, exactly (n ≤ MAX_PARTITIONS). */
function mod64(hi: number, lo: number, n: number): number {
  return ((hi % n) * (TWO_32 % n) + (lo % n)) % n;
}

/** The partition of the resource key whose UTF-8 bytes are [start, end) of `b`. */
export function partitionOfBytes(b: Uint8Array, start: number, end: number, n: number): number {
  if (n === 1) return 0;
  const [hi, lo] = fnv1a64Parts(b, start, end);
  return mod64(hi, lo, n);
}

const encoder = new TextEncoder();

/** The partition of a resource key. */
export function partitionOf(key: string, n: number): number {
  if (n === 1) return 0;
  // ASCII keys (the common case) hash their characters as they are, without encoding.
  let ascii = true;
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (!ascii) {
    const bytes = encoder.encode(key);
    return partitionOfBytes(bytes, 0, bytes.length, n);
  }
  let hi = OFFSET_HI;
  let lo = OFFSET_LO;
  for (let i = 0; i < key.length; i++) {
    lo ^= key.charCodeAt(i);
    const l = (lo >>> 0) * 0x1b3;
    const h = hi * 0x1b3 + ((lo << 8) >>> 0) + Math.floor(l / TWO_32);
    lo = l >>> 0;
    hi = h >>> 0;
  }
  return mod64(hi >>> 0, lo >>> 0, n);
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
