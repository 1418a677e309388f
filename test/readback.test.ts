/**
 * Evidence by reference (issue "Core v2", item 3): a kept write from a plain file holds where its
 * line is, and the line is read back when a finding shows it. On every fixture the report from
 * the file equals the report from the same bytes on a stream (kept copies); a file that changed
 * between reading and reading back is detected and said so, never shown as another line; gzip and
 * stdin keep copies.
 */
import { appendFileSync, closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, renameSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { findCases } from '../src/check/cases.js';
import { fieldsOf, keep, MAX_KEPT_LINE, type LockEvent } from '../src/model/event.js';
import { FIXTURES } from './helpers/run.js';

const single = findCases([FIXTURES]).filter((c) => c.files.length === 1 && c.files[0]!.endsWith('.ndjson'));

describe('read back = kept copies, on every fixture', () => {
  it.each(single.map((c) => [c.name.slice(FIXTURES.length + 1), c.files[0]!] as const))('%s', async (_name, path) => {
    const fromFile = await analyze({ files: [path], timelines: { all: true } });
    const fromStream = await analyze({ streams: [{ name: path, stream: Readable.from([readFileSync(path)]) }], timelines: { all: true } });
    expect(JSON.stringify(fromFile.findings)).toBe(JSON.stringify(fromStream.findings));
    expect(JSON.stringify(fromFile.timelines)).toBe(JSON.stringify(fromStream.timelines));
    expect(JSON.stringify(fromFile.findings)).not.toContain('lineUnavailable');
  });
});

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const at = (ms: number) => new Date(T0 + ms).toISOString();
/** A's late write comes after enough other lines that the file is read in several chunks. */
function incident(): { text: string; newerLine: string } {
  const newerLine = JSON.stringify({ ts: at(300), type: 'write', resource: 'r', ownerId: 'b', leaseId: 'LB', fenceToken: 2, result: 'accepted', value: 'from-b' });
  const lines = [
    JSON.stringify({ ts: at(0), type: 'acquire', resource: 'r', ownerId: 'a', leaseId: 'LA', fenceToken: 1, ttlMs: 100 }),
    JSON.stringify({ ts: at(200), type: 'acquire', resource: 'r', ownerId: 'b', leaseId: 'LB', fenceToken: 2, ttlMs: 100000 }),
    newerLine,
  ];
  for (let i = 0; i < 6000; i++) lines.push(JSON.stringify({ ts: at(400 + i), type: 'acquire', resource: `other-${i}`, ownerId: 'c', leaseId: `L${i}`, fenceToken: 1, msg: 'x'.repeat(80) }));
  lines.push(JSON.stringify({ ts: at(7000), type: 'write', resource: 'r', ownerId: 'a', leaseId: 'LA', fenceToken: 1, result: 'accepted', value: 'from-a' }));
  return { text: lines.join('\n') + '\n', newerLine };
}

const newerWrite = (report: Awaited<ReturnType<typeof analyze>>) => report.findings.find((f) => f.rule === 'accepted-stale-write')!.evidence.find((e) => e.role.startsWith('newer accepted write'))!;

describe('a file that changed after it was read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stalewrite-readback-'));

  it('unchanged: the kept write shows its fields, read back', async () => {
    const path = join(dir, 'same.ndjson');
    writeFileSync(path, incident().text);
    const e = newerWrite(await analyze({ files: [path] }));
    expect(e.fields).toEqual({ value: 'from-b' });
    expect(e.lineUnavailable).toBeUndefined();
  });

  /** The analysis of `path` with `change` done once to the file after its first lines were read (the rest is read as it is then). */
  const changedWhileRead = (path: string, change: () => void) => {
    let done = false;
    return analyze({
      files: [path],
      onProgress: () => {
        if (done) return;
        done = true;
        change();
      },
    });
  };

  it('rewritten in place (same size): said so, no other line shown', async () => {
    const path = join(dir, 'rewritten.ndjson');
    const { text, newerLine } = incident();
    writeFileSync(path, text);
    const report = await changedWhileRead(path, () => {
      // B's value changes under the reader: from-b → from-X, same length.
      const fd = openSync(path, 'r+');
      writeSync(fd, Buffer.from(newerLine.replace('from-b', 'from-X')), 0, Buffer.byteLength(newerLine), text.indexOf(newerLine));
      closeSync(fd);
    });
    const e = newerWrite(report);
    expect(e.fields).toBeUndefined();
    expect(e.lineUnavailable).toMatch(/modified after it was read/);
    expect(JSON.stringify(report)).not.toContain('from-X');
  });

  it('truncated after reading, before the report drew it: said so', async () => {
    const path = join(dir, 'truncated.ndjson');
    const { text } = incident();
    writeFileSync(path, text);
    const total = text.split('\n').length - 1;
    let done = false;
    const report = await analyze({
      files: [path],
      timelines: { all: true },
      onProgress: (p) => {
        // Every line read: the timelines, drawn at the end, read B's write back from a shorter file.
        if (done || p.lines < total) return;
        done = true;
        truncateSync(path, 100);
      },
    });
    expect(done).toBe(true);
    const drawn = report.timelines!.find((t) => t.resource === 'r')!.events.find((e) => e.type === 'write' && e.ownerId === 'b')!;
    expect(drawn.fields).toBeUndefined();
    expect(drawn.lineUnavailable).toMatch(/smaller than when it was read/);
    // The last chunk's events reach the engine after its progress report: the finding was made
    // after the truncation too, and says so.
    expect(newerWrite(report).lineUnavailable).toMatch(/smaller than when it was read/);
  });

  it('appended to while read (grown, its first and last bytes as read still there): read back', async () => {
    const path = join(dir, 'appended.ndjson');
    const { text } = incident();
    writeFileSync(path, text);
    const more = Array.from({ length: 50 }, (_, i) => JSON.stringify({ ts: at(8000 + i), type: 'keepalive', resource: `late-${i}`, leaseId: 'L' })).join('\n') + '\n';
    const e = newerWrite(await changedWhileRead(path, () => appendFileSync(path, more)));
    expect(e.lineUnavailable).toBeUndefined();
    expect(e.fields).toEqual({ value: 'from-b' });
  });

  it('replaced by a larger file (another inode at its path, as a rotation leaves it): said so, no other line shown', async () => {
    const path = join(dir, 'replaced.ndjson');
    const { text, newerLine } = incident();
    writeFileSync(path, text);
    const e = newerWrite(
      await changedWhileRead(path, () => {
        const next = join(dir, 'replaced.next');
        writeFileSync(next, text.replace(newerLine, newerLine.replace('from-b', 'from-X')) + text);
        renameSync(next, path);
      }),
    );
    expect(e.fields).toBeUndefined();
    expect(e.lineUnavailable).toMatch(/is another file than the one read/);
  });

  it('truncated and written again past its old size (the same inode, as copytruncate leaves it): said so, no other line shown', async () => {
    const path = join(dir, 'copytruncate.ndjson');
    const { text, newerLine } = incident();
    writeFileSync(path, text);
    const e = newerWrite(
      await changedWhileRead(path, () => {
        // The same bytes but for B's value, and more after: only the first line (its time) tells.
        const first = text.slice(0, text.indexOf('\n'));
        const fd = openSync(path, 'r+');
        ftruncateSync(fd, 0);
        const again = text.replace(first, first.replace('10:00:00.000Z', '11:00:00.000Z')).replace(newerLine, newerLine.replace('from-b', 'from-X'));
        writeSync(fd, Buffer.from(again + again), 0, 2 * Buffer.byteLength(again), 0);
        closeSync(fd);
      }),
    );
    expect(e.fields).toBeUndefined();
    expect(e.lineUnavailable).toMatch(/rewritten after it was read \(it grew/);
  });

  it('gzip and stdin keep copies: fields shown', async () => {
    const { text } = incident();
    const gz = join(dir, 'incident.ndjson.gz');
    writeFileSync(gz, gzipSync(text));
    expect(newerWrite(await analyze({ files: [gz] })).fields).toEqual({ value: 'from-b' });
    expect(newerWrite(await analyze({ streams: [{ name: 'stdin', stream: Readable.from([Buffer.from(text)]) }] })).fields).toEqual({ value: 'from-b' });
  });

  it('a kept copy (stdin, gzip) of a line over MAX_KEPT_LINE (1 KiB) holds its clipped display fields, not the line: 100 000 operations of 3 KB lines held 300 MB', () => {
    expect(MAX_KEPT_LINE).toBe(1024);
    const line = JSON.stringify({ ts: at(0), type: 'write', resource: 'r', operationId: 'op-1', result: 'accepted', value: 'v'.repeat(2800) });
    const ev: LockEvent = { ts: T0, type: 'write', resource: 'r', operationId: 'op-1', result: 'accepted', observer: 'resource', source: 's', file: 'stdin', line: 1, text: line };
    const k = keep(ev);
    expect(k.text).toBeUndefined();
    expect(k.fields).toEqual({ value: 'v'.repeat(200) + '…' });
    // What a report shows of it is what it showed when the whole line was kept.
    expect(fieldsOf(k).fields).toEqual(fieldsOf(ev).fields);
    const short = { ...ev, text: JSON.stringify({ ts: at(0), type: 'write', resource: 'r', result: 'accepted', value: 'v'.repeat(900) }) };
    expect(keep(short).text).toBe(short.text);
  });

  it('a kept write holds two numbers, not its line', () => {
    const line = JSON.stringify({ ts: at(0), type: 'write', resource: 'r', result: 'accepted', msg: 'y'.repeat(3000) });
    const ev: LockEvent = { ts: T0, type: 'write', resource: 'r', result: 'accepted', observer: 'resource', source: 's', file: 'f', line: 1, text: line, offset: 100, bytes: line.length };
    const k = keep(ev);
    expect(k.text).toBeUndefined();
    expect([k.offset, k.bytes]).toEqual([100, line.length]);
    expect(ev.text).toBe(line); // the event itself is not changed
  });
});
