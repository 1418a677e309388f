/**
 * Evidence by reference: a kept write from a plain file holds where its line is (byte offset and
 * length), not the line, and the line is read back (`pread`) when a finding shows the event, for
 * live output and the final report alike. Memory then does not grow with line length.
 *
 * A file that changed between reading and reading back is detected, and the evidence says so
 * instead of showing another line: the file is smaller than it was (truncated or replaced), or
 * its modification time changed while its size did not (rewritten in place), or the bytes at the
 * offset are not a whole line. A file that only grew (appended to) is still read back.
 *
 * Only plain files are read back: stdin, pipes and gzip are not (a gzip offset would mean
 * decompressing again from the start), and neither are container logs, whose lines are unwrapped.
 * Their kept writes keep copies of their lines, at most MAX_KEPT_LINE characters each (model/event.ts);
 * a long canonical line of stdin, a pipe or gzip is a shortened copy already (records.ts, `longLines`).
 */
import { closeSync, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import type { LineReader } from '../model/event.js';
import { gzipMagic } from './open.js';

interface Known {
  readonly path: string;
  readonly size: number;
  readonly mtimeMs: number;
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
    if (!st.isFile() || isGzip(name)) return false;
    this.files.set(name, { path: name, size: st.size, mtimeMs: st.mtimeMs });
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
      if (st.size < k.size) return this.fail(k, `${file} is smaller than when it was read (${st.size} bytes, was ${k.size}): it was truncated or replaced, so its lines are not shown`);
      if (st.mtimeMs !== k.mtimeMs && st.size === k.size) return this.fail(k, `${file} was modified after it was read (same size, new modification time), so its lines are not shown`);
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

function isGzip(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const b = Buffer.alloc(2);
    return gzipMagic(b, readSync(fd, b, 0, 2, 0));
  } catch {
    return true; // unreadable now: not read back (the reader reports the error itself)
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
