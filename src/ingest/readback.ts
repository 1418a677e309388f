/**
 * Evidence by reference: a kept write from a plain file holds where its line is (byte offset and
 * length), not the line, and the line is read back (`pread`) when a finding shows the event, for
 * live output and the final report alike. Memory then does not grow with line length.
 *
 * A file that changed between reading and reading back is detected, and the evidence says so
 * instead of showing another line: another file is at its path now (another device or inode:
 * replaced, rotated), it is smaller than it was (truncated), its modification time changed while
 * its size did not (rewritten in place), it grew but its first or last WINDOW bytes as they were
 * are not there any more (truncated and written again, as logrotate's copytruncate does, then
 * grown past its old size), or the bytes at the offset are not a whole line. A file that only
 * grew (appended to) is still read back.
 *
 * Only plain files are read back: stdin, pipes and gzip are not (a gzip offset would mean
 * decompressing again from the start), and neither are container logs, whose lines are unwrapped.
 * Their kept writes keep copies of their lines, at most MAX_KEPT_LINE (1 024) characters each, else their clipped display fields (model/event.ts);
 * a long canonical line of stdin, a pipe or gzip is a shortened copy already (records.ts, `longLines`).
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import type { LineReader } from '../model/event.js';
import { gzipMagic } from './open.js';

/** Bytes at the start and at the end of a file (as it was registered) that must still be there when it grew. */
export const WINDOW = 4096;
/** A grown file's WINDOW bytes are checked again at most this often (ms). */
const RECHECK_MS = 1000;

/** Whether a file's lines can be read back by reference: a regular file that is not gzip (what register() would take, without its digest). */
export function canReadBack(name: string, st: Stats): boolean {
  return st.isFile() && withFile(name, (fd) => !isGzipAt(fd)) === true;
}

interface Known {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  /** Digest of the first and the last WINDOW bytes of [0, size) as registered. */
  readonly ends: string;
  /** When (wall clock, ms) the file, grown, was last found to hold those bytes still. */
  grownOkAt?: number;
  fd?: number;
  /** Why it cannot be read back, once known. */
  broken?: string;
}

export class LineStore {
  private readonly files = new Map<string, Known>();

  /**
   * Remember a plain file (its size and mtime before reading). Returns whether its lines can be
   * read back: a regular file that is not gzip.
   */
  register(name: string, st: Stats): boolean {
    if (!st.isFile()) return false;
    const ends = endsOf(name, st.size);
    if (ends === undefined) return false;
    this.files.set(name, { path: name, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ends });
    return true;
  }

  /** The line at `offset` of `bytes` bytes in `file`, or why it cannot be shown. */
  readonly read: LineReader = (file, offset, bytes) => {
    const k = this.files.get(file);
    if (k === undefined) return { unavailable: `${file} is not kept for reading back` };
    if (k.broken !== undefined) return { unavailable: k.broken };
    try {
      k.fd ??= openSync(k.path, 'r');
      const st = fstatSync(k.fd);
      if (st.dev !== k.dev || st.ino !== k.ino) return this.fail(k, `${file} is another file than the one read (it was replaced or rotated), so its lines are not shown`);
      if (st.size < k.size) return this.fail(k, `${file} is smaller than when it was read (${st.size} bytes, was ${k.size}): it was truncated or replaced, so its lines are not shown`);
      if (st.mtimeMs !== k.mtimeMs && st.size === k.size) return this.fail(k, `${file} was modified after it was read (same size, new modification time), so its lines are not shown`);
      if (st.mtimeMs !== k.mtimeMs && !(k.grownOkAt !== undefined && Date.now() - k.grownOkAt < RECHECK_MS)) {
        // It grew: appended to, or truncated and written again past its old size. Its first and
        // last bytes as they were tell the two apart (checked again at most every RECHECK_MS: a
        // log written to all the time has a new modification time at every read-back).
        if (digestEnds(k.fd, k.size) !== k.ends) return this.fail(k, `${file} was rewritten after it was read (it grew, but its first or last bytes as read are not there any more), so its lines are not shown`);
        k.grownOkAt = Date.now();
      }
      // The line, the newline after it, and the byte before it (a newline, unless at the start).
      const from = offset > 0 ? offset - 1 : 0;
      const want = offset - from + bytes + 1;
      const buf = Buffer.allocUnsafe(want);
      const got = readSync(k.fd, buf, 0, want, from);
      const before = offset > 0 ? buf[0] : 10;
      const endsAt = offset - from + bytes;
      const after = got > endsAt ? buf[endsAt] : 10; // the last line may have no newline
      if (got < endsAt || before !== 10 || after !== 10) return { unavailable: `the bytes of ${file} at byte ${offset} are no longer that line (the file changed after it was read)` };
      let start = offset - from;
      let end = endsAt;
      if (end > start && buf[end - 1] === 13) end--; // CRLF
      if (offset === 0 && end - start >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) start += 3; // BOM
      return buf.toString('utf8', start, end);
    } catch (err) {
      return this.fail(k, `${file} cannot be read again: ${(err as Error).message}`);
    }
  };

  private fail(k: Known, why: string): { unavailable: string } {
    k.broken = why;
    return { unavailable: why };
  }

  /** Close every file opened for reading back. */
  close(): void {
    for (const k of this.files.values()) {
      if (k.fd !== undefined) closeSync(k.fd);
      k.fd = undefined;
    }
  }
}

/**
 * The digest of a plain file's first and last WINDOW bytes of [0, size), or undefined when it is
 * gzip (not read back) or cannot be read now (the reader reports the error itself).
 */
function endsOf(path: string, size: number): string | undefined {
  return withFile(path, (fd) => (isGzipAt(fd) ? undefined : digestEnds(fd, size)));
}

/** `use` of the file opened for reading, closed after; undefined when it cannot be read now (the reader reports the error itself). */
function withFile<T>(path: string, use: (fd: number) => T): T | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    return use(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isGzipAt(fd: number): boolean {
  const b = Buffer.alloc(2);
  return gzipMagic(b, readSync(fd, b, 0, 2, 0));
}

/** SHA-256 of bytes [0, min(WINDOW, size)) and [max(0, size - WINDOW), size) of an open file (fewer when it is shorter now). */
function digestEnds(fd: number, size: number): string {
  const h = createHash('sha256');
  for (const from of [0, Math.max(0, size - WINDOW)]) {
    const want = Math.min(WINDOW, size - from);
    const buf = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const n = readSync(fd, buf, got, want - got, from + got);
      if (n <= 0) break;
      got += n;
    }
    h.update(buf.subarray(0, got));
  }
  return h.digest('hex');
}
