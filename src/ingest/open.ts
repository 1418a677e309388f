/** Inputs → byte chunks: files, stdin (`-`) and any readable stream, with gzip detected by magic bytes. */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

export interface InputSource {
  /** Name used in `file:line` (path as given, or `stdin`). */
  readonly name: string;
  open(): AsyncIterable<Buffer>;
}

const READ_CHUNK = 256 * 1024;

/** A user-facing input error: unreadable file, directory, bad gzip. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

export function fileSource(path: string): InputSource {
  if (path === '-') return streamSource('stdin', process.stdin);
  return {
    name: path,
    open: () => fileChunks(path),
  };
}

export function streamSource(name: string, stream: NodeJS.ReadableStream | AsyncIterable<Buffer | string>): InputSource {
  return { name, open: () => maybeGunzip(name, stream as AsyncIterable<Buffer | string>) };
}

async function* fileChunks(path: string): AsyncGenerator<Buffer> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
  }
  if (st.isDirectory()) throw new InputError(`cannot read ${path}: it is a directory`);
  yield* maybeGunzip(path, createReadStream(path, { highWaterMark: READ_CHUNK }));
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
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
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
    if (e.code === 'Z_BUF_ERROR') return 'unexpected end of gzip data (truncated file?)';
    if (typeof e.message === 'string') return e.message;
  }
  return String(err);
}
