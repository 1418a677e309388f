/** Shared by the streamed reporters: output in pieces of bounded size, never one string. */

/** About how much text a chunk gathers before it is handed on. */
export const CHUNK = 64 * 1024;

/**
 * Small pieces gathered into chunks of about CHUNK characters. A chunk passes CHUNK by at most
 * one piece, and a piece is one line, row or element: its size does not grow with the report.
 */
export function* gather(pieces: Iterable<string>): Generator<string> {
  let buf = '';
  for (const piece of pieces) {
    buf += piece;
    if (buf.length >= CHUNK) {
      yield buf;
      buf = '';
    }
  }
  if (buf !== '') yield buf;
}

/** The pieces of `lines.join('\n')`. */
export function* joinLines(lines: Iterable<string>): Generator<string> {
  let first = true;
  for (const line of lines) {
    if (!first) yield '\n';
    first = false;
    yield line;
  }
}

/**
 * A report's value as a list written element by element: an array, or its `resources` (which may
 * be made as they are walked, ResourceSummaries); undefined for any other value.
 */
export function listOf(key: string, value: unknown): (Iterable<unknown> & { readonly length: number }) | undefined {
  if (Array.isArray(value)) return value;
  if (key === 'resources' && value !== null && typeof value === 'object' && Symbol.iterator in value) return value as Iterable<unknown> & { readonly length: number };
  return undefined;
}
