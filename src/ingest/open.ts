/**
 * Inputs → byte chunks: files, stdin (`-`) and any readable stream, with gzip detected by magic bytes.
 *
 * Many files: the merge needs every input's head at once, so a file kept open for its whole read
 * costs one descriptor per input (and `ulimit -n` is often 1024). With `reopen`, a plain file is
 * instead read chunk by chunk, each chunk by opening the file, reading at the offset reached and
 * closing it again, at most MAX_OPEN_READS at a time: any number of plain files is read with a
 * few descriptors. A gzip input cannot be resumed at an offset without decompressing it again
 * from the start, so it stays open for its whole read: one descriptor per gzip input.
 */
import { createReadStream } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

export interface InputSource {
  /** Name used in `file:line` (path as given, or `stdin`). */
  readonly name: string;
  open(): AsyncIterable<Buffer>;
}

/** Bytes per chunk a plain file is read in (by a run, and by a job reading an input itself). */
export const READ_CHUNK = 256 * 1024;

/** A user-facing input error: unreadable file, directory, bad gzip. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

export interface FileSourceOptions {
  /** Read a plain file by reopening it at an offset for each chunk, rather than keeping it open. */
  reopen?: boolean;
  /** Bytes per chunk (default 64 KiB when reopening, else 256 KiB). */
  chunkBytes?: number;
  /**
   * Read a plain file's chunks each into memory of its own that threads can share
   * (SharedArrayBuffer), never written once read: the reader of --jobs hands them to the jobs
   * without copying them (partition/feed.ts). Not with `reopen`.
   */
  shared?: boolean;
}

export function fileSource(path: string, options: FileSourceOptions = {}): InputSource {
  if (path === '-') return streamSource('stdin', process.stdin);
  return {
    name: path,
    open: () => (options.reopen ? reopenedChunks(path, options.chunkBytes ?? REOPEN_CHUNK) : options.shared === true ? sharedChunks(path, options.chunkBytes ?? READ_CHUNK) : fileChunks(path, options.chunkBytes ?? READ_CHUNK)),
  };
}

const REOPEN_CHUNK = 64 * 1024;
/** Files open at once for reading a chunk, in reopen mode (all inputs together). */
export const MAX_OPEN_READS = 16;
let openReads = 0;
const waiting: (() => void)[] = [];

async function withDescriptorSlot<T>(fn: () => Promise<T>): Promise<T> {
  while (openReads >= MAX_OPEN_READS) await new Promise<void>((resolve) => waiting.push(resolve));
  openReads++;
  try {
    return await fn();
  } finally {
    openReads--;
    waiting.shift()?.();
  }
}

/** A plain file read chunk by chunk, reopened at the offset reached each time; gzip is read whole through one open file. */
async function* reopenedChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  // A pipe, FIFO or device (`<(cat f)`) cannot be read at an offset: it stays open, like gzip.
  let special = false;
  try {
    special = !(await stat(path)).isFile();
  } catch {
    /* reported by the first read below */
  }
  if (special) {
    yield* fileChunks(path);
    return;
  }
  let identity: { dev: number; ino: number } | undefined;
  let pos = 0;
  const readAt = (): Promise<Buffer> =>
    withDescriptorSlot(async () => {
      let fh;
      try {
        fh = await open(path, 'r');
        const st = await fh.stat();
        if (st.isDirectory()) throw new InputError(`cannot read ${path}: it is a directory`);
        if (identity === undefined) identity = { dev: st.dev, ino: st.ino };
        else if (st.dev !== identity.dev || st.ino !== identity.ino) throw new InputError(`cannot read ${path}: it was replaced by another file while being read (rotated?); lines read before it were analysed`);
        const buf = Buffer.allocUnsafe(chunkBytes);
        const { bytesRead } = await fh.read(buf, 0, chunkBytes, pos);
        pos += bytesRead;
        return bytesRead === chunkBytes ? buf : Buffer.from(buf.subarray(0, bytesRead));
      } catch (err) {
        if (err instanceof InputError) throw err;
        throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
      } finally {
        await fh?.close().catch(() => undefined);
      }
    });
  const first = await readAt();
  if (gzipMagic(first, first.length)) {
    yield* fileChunks(path);
    return;
  }
  for (let chunk = first; chunk.length > 0; chunk = await readAt()) yield chunk;
}

export function streamSource(name: string, stream: NodeJS.ReadableStream | AsyncIterable<Buffer | string>): InputSource {
  return { name, open: () => maybeGunzip(name, stream as AsyncIterable<Buffer | string>) };
}

async function* fileChunks(path: string, chunkBytes = READ_CHUNK): AsyncGenerator<Buffer> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
  }
  if (st.isDirectory()) throw new InputError(`cannot read ${path}: it is a directory`);
  if (st.isFile()) yield* plainChunks(path, chunkBytes);
  else yield* streamChunks(path, chunkBytes);
}

/** A file as a stream (a pipe, a FIFO, a device; gzip, decompressed). */
function streamChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  return maybeGunzip(path, createReadStream(path, { highWaterMark: chunkBytes }));
}

/** Reads of a plain file under way at once, ahead of the chunk its reader has (plainChunks). */
const AHEAD = 2;
/**
 * Buffers a plain file is read into, in turn (plainChunks): the chunk its reader is given, the
 * ones being read meanwhile, and one more.
 */
const RING = AHEAD + 2;

/**
 * A plain file's chunks, each read while the ones before are parsed, into a few buffers used in
 * turn: a chunk is valid only until the next one is asked for (the line reader's contract, which
 * its batches pass on: lines.ts). A read stream reads into new memory for every chunk, which took
 * about twice as long here, and the parse waited for its reads. A gzip file is read as a stream.
 */
async function* plainChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
  }
  const ring: Buffer[] = [];
  if (yield* readAhead(fh, path, chunkBytes, AHEAD, (n) => (ring[n % RING] ??= Buffer.allocUnsafeSlow(chunkBytes)))) yield* streamChunks(path, chunkBytes);
}

/** fileChunks, each chunk read into a SharedArrayBuffer of its own (FileSourceOptions.shared); anything but a plain file as fileChunks reads it. */
async function* sharedChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  let fh: FileHandle | undefined;
  let plain = false;
  try {
    fh = await open(path, 'r');
    plain = (await fh.stat()).isFile();
  } catch {
    /* said by fileChunks below */
  }
  if (!plain) await fh?.close().catch(() => undefined);
  // Each chunk is read while the one before is handed on; gzip is read as fileChunks reads it (decompressed).
  else if (!(yield* readAhead(fh!, path, chunkBytes, 1, () => Buffer.from(new SharedArrayBuffer(chunkBytes))))) return;
  yield* fileChunks(path, chunkBytes);
}

/**
 * The chunks of the plain file open as `fh`, each read into bufferFor(n) (n: the read's number,
 * from 0), with `ahead` reads under way after a whole chunk; after a short one (the end, or a
 * file still being written) the file is read on from where it ended, when the next chunk is asked
 * for. Closes `fh`. Returns true, having given nothing, when the file is to be read as a stream
 * instead: gzip, or a first read too short to tell.
 */
async function* readAhead(fh: FileHandle, path: string, chunkBytes: number, ahead: number, bufferFor: (n: number) => Buffer): AsyncGenerator<Buffer, boolean> {
  /** The reads under way, oldest first: into buf, at offset at. */
  const reads: { buf: Buffer; at: number; read: Promise<{ bytesRead: number }> }[] = [];
  let issued = 0;
  let nextAt = 0;
  const issue = (): void => {
    const buf = bufferFor(issued++);
    const read = fh.read(buf, 0, chunkBytes, nextAt);
    // Awaited below, unless the reader is closed first.
    read.catch(() => undefined);
    reads.push({ buf, at: nextAt, read });
    nextAt += chunkBytes;
  };
  try {
    for (;;) {
      if (reads.length === 0) issue();
      const { buf, at, read } = reads.shift()!;
      let bytesRead: number;
      try {
        ({ bytesRead } = await read);
      } catch (err) {
        throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
      }
      if (bytesRead === 0) return false;
      if (at === 0 && (bytesRead < 2 || gzipMagic(buf, bytesRead))) return true;
      if (bytesRead === chunkBytes) while (reads.length < ahead) issue();
      else {
        // The reads after it were at the offsets of whole chunks.
        for (const o of reads) await o.read.catch(() => undefined);
        reads.length = 0;
        nextAt = at + bytesRead;
      }
      yield bytesRead === chunkBytes ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    // Reads under way when the reader stops (the consumer returned) end before the file is closed.
    for (const o of reads) await o.read.catch(() => undefined);
    await fh.close().catch(() => undefined);
  }
}

/** Whether the first `length` bytes of `b` start with gzip's magic (1f 8b). */
export function gzipMagic(b: Uint8Array, length: number): boolean {
  return length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

/** Peek at the first bytes; if they are gzip's magic, decompress transparently. */
async function* maybeGunzip(name: string, input: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
  const it = input[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  let done = false;
  try {
    while (head.length < 2) {
      const r = await it.next();
      if (r.done) {
        done = true;
        break;
      }
      head = Buffer.concat([head, toBuffer(r.value)]);
    }
  } catch (err) {
    throw new InputError(`cannot read ${name}: ${reasonOf(err)}`);
  }
  if (gzipMagic(head, head.length)) {
    const raw = Readable.from(rest(head, it, done));
    const gunzip = createGunzip();
    raw.on('error', (err) => gunzip.destroy(err));
    raw.pipe(gunzip);
    let produced = 0;
    try {
      for await (const chunk of gunzip) {
        produced += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      const why =
        code === 'Z_DATA_ERROR' && produced > 0
          ? `corrupt gzip data or bytes that are not gzip after it (trailing garbage?): ${reasonOf(err)}; lines read before it were analysed`
          : reasonOf(err);
      throw new InputError(`cannot decompress ${name}: ${why}`);
    }
    return;
  }
  try {
    for await (const chunk of rest(head, it, done)) yield chunk;
  } catch (err) {
    throw new InputError(`cannot read ${name}: ${reasonOf(err)}`);
  }
}

async function* rest(head: Buffer, it: AsyncIterator<Buffer | string>, done: boolean): AsyncGenerator<Buffer> {
  if (head.length > 0) yield head;
  if (done) return;
  for (;;) {
    const r = await it.next();
    if (r.done) return;
    yield toBuffer(r.value);
  }
}

function toBuffer(v: Buffer | string | Uint8Array): Buffer {
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function reasonOf(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const e = err as { code?: string; message?: string };
    if (e.code === 'ENOENT') return 'no such file';
    if (e.code === 'EACCES' || e.code === 'EPERM') return 'permission denied';
    if (e.code === 'EISDIR') return 'it is a directory';
    if (e.code === 'EMFILE' || e.code === 'ENFILE') return 'too many open files (EMFILE): more inputs are open than the limit allows (a gzip input stays open while it is read, and so do all inputs when there are at most 32); raise it (ulimit -n) or decompress some inputs first';
    if (e.code === 'Z_BUF_ERROR') return 'unexpected end of gzip data (truncated file?)';
    if (typeof e.message === 'string') return e.message;
  }
  return String(err);
}
