import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { readLineBytes, readLines, type ByteLineBatch } from '../src/ingest/lines.js';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileSource, READ_CHUNK, streamSource } from '../src/ingest/open.js';

async function collect(chunks: Buffer[], maxLineBytes?: number): Promise<{ line: number; text: string | null }[]> {
  async function* gen() {
    for (const c of chunks) yield c;
  }
  const out: { line: number; text: string | null }[] = [];
  for await (const b of readLines(gen(), { maxLineBytes })) b.lines.forEach((text, i) => out.push({ line: b.firstLine + i, text }));
  return out;
}

/** Split a buffer into chunks of `size` bytes. */
function split(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

describe('line reader', () => {
  it('numbers lines, strips CRLF and keeps a last line without a newline', async () => {
    const lines = await collect([Buffer.from('a\r\nb\n\n  \nlast')]);
    expect(lines).toEqual([
      { line: 1, text: 'a' },
      { line: 2, text: 'b' },
      { line: 3, text: '' },
      { line: 4, text: '  ' },
      { line: 5, text: 'last' },
    ]);
  });

  it('a batch after a chunk of very many short lines holds columns of about its own size (a review note)', async () => {
    async function* chunks() {
      yield Buffer.alloc(200_000, 10); // 200 000 blank lines
      yield Buffer.from('{"a":1}\n'.repeat(100));
      yield Buffer.from('{"b":2}\n'.repeat(100));
    }
    const batches: ByteLineBatch[] = [];
    for await (const b of readLineBytes(chunks())) batches.push(b as ByteLineBatch);
    expect(batches.map((b) => b.lines.length)).toEqual([200_000, 100, 100]);
    for (const b of batches.slice(1)) {
      for (const col of [b.offsets, b.lengths, b.starts, b.ends] as (Float64Array | Int32Array)[]) {
        expect(col.length).toBe(100);
        expect(col.buffer.byteLength).toBeLessThanOrEqual(8 * (4 * 100 + 1024));
      }
      expect(Array.from(b.starts, (s, i) => b.chunk.toString('utf8', s, b.ends[i]))).toEqual(Array(100).fill(b === batches[1] ? '{"a":1}' : '{"b":2}'));
      expect(b.offsets[0]).toBe(b === batches[1] ? 200_000 : 200_800);
    }
  });

  it('does not invent a line after a trailing newline', async () => {
    expect(await collect([Buffer.from('a\nb\n')])).toHaveLength(2);
    expect(await collect([Buffer.from('')])).toHaveLength(0);
  });

  it('strips a BOM on line 1 only', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const lines = await collect([Buffer.concat([bom, Buffer.from('{"a":1}\n'), bom, Buffer.from('x\n')])]);
    expect(lines[0]!.text).toBe('{"a":1}');
    expect(lines[1]!.text).toBe('\ufeffx');
  });

  it('decodes multi-byte UTF-8 split across every possible chunk boundary', async () => {
    const text = 'ресурс-7 ✓ 🔒 naïve\nzweite Zeile – ok\n';
    const buf = Buffer.from(text);
    for (const size of [1, 2, 3, 5, 7]) {
      const lines = await collect(split(buf, size));
      expect(lines.map((l) => l.text)).toEqual(['ресурс-7 ✓ 🔒 naïve', 'zweite Zeile – ok']);
    }
  });

  it('joins a line split across chunks, including a CR before the split LF', async () => {
    const lines = await collect([Buffer.from('{"a":'), Buffer.from('1}\r'), Buffer.from('\nnext')]);
    expect(lines.map((l) => l.text)).toEqual(['{"a":1}', 'next']);
  });

  it('skips a line over the cap, keeps counting lines, and does not buffer it', async () => {
    const long = Buffer.alloc(5 * 1024 * 1024, 0x61);
    const chunks = [Buffer.from('first\n'), ...split(long, 64 * 1024), Buffer.from('\nafter\n')];
    const lines = await collect(chunks, 1024);
    expect(lines).toEqual([
      { line: 1, text: 'first' },
      { line: 2, text: null },
      { line: 3, text: 'after' },
    ]);
  });

  it('reports an over-long last line without a newline', async () => {
    const lines = await collect([Buffer.from('ok\n'), Buffer.alloc(3000, 0x62)], 1000);
    expect(lines).toEqual([
      { line: 1, text: 'ok' },
      { line: 2, text: null },
    ]);
  });

  it('a line exactly at the cap is kept', async () => {
    const lines = await collect([Buffer.from('x'.repeat(10) + '\n' + 'y'.repeat(11) + '\n')], 10);
    expect(lines.map((l) => l.text)).toEqual(['x'.repeat(10), null]);
  });
});

describe('input sources', () => {
  async function readAll(source: ReturnType<typeof streamSource>): Promise<string> {
    const parts: Buffer[] = [];
    for await (const c of source.open()) parts.push(c);
    return Buffer.concat(parts).toString('utf8');
  }

  it('detects gzip by its magic bytes, whatever the name', async () => {
    const gz = gzipSync(Buffer.from('{"a":1}\n{"b":2}\n'));
    async function* gen() {
      yield gz.subarray(0, 1); // the magic split across chunks
      yield gz.subarray(1);
    }
    expect(await readAll(streamSource('log.ndjson', gen()))).toBe('{"a":1}\n{"b":2}\n');
  });

  it('passes plain bytes through unchanged', async () => {
    async function* gen() {
      yield Buffer.from('{');
      yield Buffer.from('"a":1}\n');
    }
    expect(await readAll(streamSource('x', gen()))).toBe('{"a":1}\n');
  });

  it('reads concatenated gzip members', async () => {
    const gz = Buffer.concat([gzipSync(Buffer.from('one\n')), gzipSync(Buffer.from('two\n'))]);
    async function* gen() {
      yield gz;
    }
    expect(await readAll(streamSource('x', gen()))).toBe('one\ntwo\n');
  });

  it('turns a truncated gzip into an InputError', async () => {
    const gz = gzipSync(Buffer.from('{"a":1}\n'.repeat(1000)));
    async function* gen() {
      yield gz.subarray(0, gz.length - 20);
    }
    await expect(readAll(streamSource('cut.gz', gen()))).rejects.toThrow(/cut\.gz/);
  });
});

describe('a plain file', () => {
  const withDir = async (fn: (dir: string) => Promise<void>) => {
    const dir = mkdtempSync(join(tmpdir(), 'sw-plain-'));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => 97 + ((i * 7 + seed) % 26)));

  it('is read whole, in chunks of its size, at any length around them; each chunk as it was read while the reader has it', async () => {
    await withDir(async (dir) => {
      for (const size of [0, 1, 999, 1000, 1001, 4000, 4001, 10_500]) {
        const f = join(dir, `f${size}`);
        const text = bytes(size, size);
        writeFileSync(f, text);
        const parts: Buffer[] = [];
        for await (const c of fileSource(f, { chunkBytes: 1000 }).open()) {
          expect(c.length).toBeLessThanOrEqual(1000);
          // The chunk is the file's bytes at that offset (the buffers are reused in turn: a chunk is copied to be kept).
          const at = parts.reduce((n, p) => n + p.length, 0);
          expect(c.equals(text.subarray(at, at + c.length))).toBe(true);
          parts.push(Buffer.from(c));
        }
        expect(Buffer.concat(parts).equals(text), `${size} bytes`).toBe(true);
      }
    });
  });

  it('that grows while it is read is read on from where a short read ended (no gap, nothing twice)', async () => {
    await withDir(async (dir) => {
      const f = join(dir, 'growing');
      const first = bytes(2500, 1);
      const more = bytes(3000, 2);
      writeFileSync(f, first);
      const parts: Buffer[] = [];
      for await (const c of fileSource(f, { chunkBytes: 1000 }).open()) {
        parts.push(Buffer.from(c));
        // The reads of the next chunks are done (the third one short) when the file grows.
        if (parts.length === 1) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          appendFileSync(f, more);
        }
      }
      expect(Buffer.concat(parts).equals(Buffer.concat([first, more]))).toBe(true);
    });
  });

  it('closes its file at the end, when its reader stops, and when its reader throws (Linux: open descriptors counted)', async () => {
    if (!existsSync('/proc/self/fd')) return;
    const fds = () => readdirSync('/proc/self/fd').length;
    await withDir(async (dir) => {
      const f = join(dir, 'a');
      writeFileSync(f, bytes(50_000, 3));
      const before = fds();
      for await (const _ of fileSource(f, { chunkBytes: 1000 }).open());
      let n = 0;
      for await (const _ of fileSource(f, { chunkBytes: 1000 }).open()) if (++n === 3) break;
      const throwing = async () => {
        for await (const _ of fileSource(f, { chunkBytes: 1000 }).open()) throw new Error('stop');
      };
      await expect(throwing()).rejects.toThrow('stop');
      expect(fds()).toBe(before);
    });
  });

  it('that is cut short or deleted while it is read ends without an error (what was read, read)', async () => {
    await withDir(async (dir) => {
      const f = join(dir, 'a');
      writeFileSync(f, bytes(100_000, 1));
      let total = 0;
      let k = 0;
      for await (const c of fileSource(f, { chunkBytes: 1000 }).open()) {
        total += c.length;
        if (++k === 5) truncateSync(f, 2000);
      }
      expect(total).toBeGreaterThanOrEqual(5000);
      expect(total).toBeLessThan(100_000);
      writeFileSync(f, bytes(100_000, 1));
      total = 0;
      k = 0;
      // Deleted: the open file is read to its end.
      for await (const c of fileSource(f, { chunkBytes: 1000 }).open()) {
        total += c.length;
        if (++k === 5) unlinkSync(f);
      }
      expect(total).toBe(100_000);
    });
  });

  it('stops reading when its reader stops, and reads gzip, a directory and a missing file as before', async () => {
    await withDir(async (dir) => {
      const f = join(dir, 'big');
      writeFileSync(f, bytes(5 * READ_CHUNK, 3));
      let n = 0;
      for await (const c of fileSource(f).open()) {
        expect(c.length).toBe(READ_CHUNK);
        if (++n === 2) break;
      }
      const gz = join(dir, 'a.gz');
      writeFileSync(gz, gzipSync(Buffer.from('one\ntwo\n')));
      const all = async (p: string) => {
        const parts: Buffer[] = [];
        for await (const c of fileSource(p).open()) parts.push(Buffer.from(c));
        return Buffer.concat(parts).toString();
      };
      expect(await all(gz)).toBe('one\ntwo\n');
      await expect(all(dir)).rejects.toThrow(/is a directory/);
      await expect(all(join(dir, 'none'))).rejects.toThrow(/cannot read .*none: no such file/);
    });
  });
});
