/**
 * The canonical fast path (src/profiles/fast-canonical.ts) must never change a result: for any
 * line it either declines (undefined) or gives exactly the event the general path gives
 * (JSON.parse, the schema, the exact checks). Checked on every fixture line, on hand-picked
 * edge cases, and on many generated lines, valid and not.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonical } from '../src/profiles/canonical.js';
import { fastCanonicalEvent } from '../src/profiles/fast-canonical.js';
import type { LockEvent } from '../src/model/event.js';
import { analyze } from '../src/analyze.js';
import type { Profile } from '../src/profiles/types.js';
import { filesUnder, generalEvent } from './helpers/paths.js';

const isNdjson = (p: string) => p.endsWith('.ndjson');

const origin = { file: 'f.ndjson', line: 7, source: 'f.ndjson' };

/** What both paths must agree on: every field but how the record is held. */
function comparable(ev: LockEvent): Record<string, unknown> {
  const { record: _r, text: _t, fields: _f, ...rest } = ev;
  return rest;
}

/** Checks one line; returns whether the fast path took it. */
function check(text: string): boolean {
  const fast = fastCanonicalEvent(text, origin);
  if (fast === undefined) return false;
  const slow = generalEvent(canonical, text, origin);
  expect(typeof slow === 'object' && slow !== null, `general path rejected a line the fast path took: ${text} → ${String(slow)}`).toBe(true);
  expect(comparable(fast)).toEqual(comparable(slow as LockEvent));
  // Display fields come from the line, as they would from the record.
  expect(JSON.parse(fast.text!)).toEqual((slow as LockEvent).record);
  return true;
}

describe('canonical fast path', () => {
  it('agrees with the general path on every fixture line, and takes the plain ones', () => {
    let taken = 0;
    let lines = 0;
    for (const file of filesUnder(join(__dirname, '..', 'fixtures'), isNdjson)) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        lines++;
        if (check(line)) taken++;
      }
    }
    expect(lines).toBeGreaterThan(500);
    // Most fixture lines are plain canonical lines; the fast path must actually be used.
    expect(taken / lines).toBeGreaterThan(0.5);
  });

  it('declines escaped and repeated keys, which the general path then judges', () => {
    const w = '"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r","fenceToken":"1","result":"accepted"';
    for (const [extra, want] of [
      [',"res\\u0075lt":"rejected-stale-fence"', /key "result" appears more than once/],
      [',"fenceT\\u006fken":"2"', /key "fenceToken" appears more than once/],
      [',"\\u0072esource":"q"', /key "resource" appears more than once/],
      [',"type":"acquire"', /key "type" appears more than once/],
      [',"res\\u0075lt":"accepted"', 'accepted'],
      [',"result":"accepted"', 'accepted'],
    ] as const) {
      const text = `{${w}${extra}}`;
      expect(fastCanonicalEvent(text, origin), text).toBeUndefined();
      const slow = generalEvent(canonical, text, origin);
      if (typeof want === 'string') expect((slow as LockEvent).result, text).toBe(want);
      else expect(slow, text).toMatch(want);
    }
  });

  it('declines what only the general path can judge, and takes plain variants', () => {
    const base = '"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r","result":"accepted"';
    const declined = [
      `{${base},"fenceToken":"1","fenceToken":"2"}`, // duplicate verdict key
      `{${base},"ts":"2026-03-01T10:00:01.000Z"}`, // duplicate canonical key (JSON keeps the last)
      `{${base},"fenceToken":12345678901234567}`, // above 2^53 as a number
      `{${base},"fenceToken":-1}`,
      `{${base},"fenceToken":1.0}`,
      `{${base},"fenceToken":"0x1"}`,
      `{${base},"msg":"say \\"hi\\""}`, // an escape
      `{${base},"msg":"tab\there"}`, // a raw control character: not JSON
      `{${base},"meta":{"a":1}}`, // nested
      `{${base},"leaseId":-0}`,
      `{${base},"ttlMs":-5}`,
      `{${base},"ttlMs":1e400}`,
      `{${base},"observer":"nobody"}`,
      `{${base},"source":""}`,
      `{${base},"ownerId":7}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"write","resource":"r"}`, // write without result
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r","result":"accepted"}`,
      `{"ts":"2026-13-01T10:00:00.000Z","type":"acquire","resource":"r"}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":""}`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"} x`,
      `{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r",}`,
      `{"ts":01,"type":"acquire","resource":"r"}`,
      '\ufeff{"ts":"2026-03-01T10:00:00.000Z","type":"acquire","resource":"r"}',
      '{}',
      '[]',
      `{${base},"hostname":"a","hostname":"b"}`, // the clock domain written twice
      `{${base},"hostname":7}`,
      `{${base},"hostname":""}`,
    ];
    for (const line of declined) {
      expect(fastCanonicalEvent(line, origin), line).toBeUndefined();
      check(line);
    }
    const taken = [
      `{${base}}`,
      ` { ${base.replace(/,/g, ' , ')} , "fenceToken" : 5 } `,
      `{${base},"fenceToken":"123456789012345678901234567890","leaseId":694d77aa}`.replace('694d77aa', '"694d77aa"'),
      `{${base},"fenceToken":999999999999999,"leaseId":-42,"ttlMs":1.5e3,"x":null,"y":true,"z":false,"n":-0.5e-3}`,
      `{"ts":1772359200000,"type":"keepalive","resource":"r","result":"failed","observer":"worker","source":"host-1"}`,
      `{"ts":"2026-03-01T11:00:00.5+01:00","type":"expire","resource":"ключ ✓"}`,
      `{${base},"fenceToken":"007","ownerId":""}`,
      `{${base},"hostname":"app-1","pid":7}`, // pino: the host is the clock domain
      `{${base},"hostname":"app-1","source":"db"}`, // source wins
      `{${base},"host.name":"node-9"}`, // OpenTelemetry's host attribute, flat
    ];
    for (const line of taken) expect(check(line), line).toBe(true);
    expect(fastCanonicalEvent(taken[7]!, origin)!.source).toBe('app-1');
    expect(fastCanonicalEvent(taken[8]!, origin)!.source).toBe('db');
    expect(fastCanonicalEvent(taken[9]!, origin)!.source).toBe('node-9');
    expect(fastCanonicalEvent(`{${base},"hostname":"a","host.name":"b"}`, origin)).toBeUndefined(); // both: the general path picks hostname
    expect((canonical.toEvent({ ...JSON.parse(`{${base}}`), hostname: 'a', 'host.name': 'b' }, { ...origin, text: undefined }) as LockEvent).source).toBe('a');
  });

  it('agrees with the general path on generated lines', () => {
    const key = fc.constantFrom('ts', 'type', 'resource', 'ownerId', 'leaseId', 'operationId', 'fenceToken', 'ttlMs', 'result', 'observer', 'source', 'hostname', 'msg', 'value', 'latencyMs', 'x');
    const str = fc.oneof(
      fc.constantFrom('acquire', 'write', 'release', 'keepalive', 'expire', 'revoke', 'granted', 'busy', 'accepted', 'rejected-stale-fence', 'ok', 'worker', 'resource', 'authority', '', '12', '007', '2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00Z', '1970-01-01T00:00:00Z'),
      fc.string({ maxLength: 6 }),
    );
    const rawValue = fc.oneof(
      str.map((s) => JSON.stringify(s)),
      fc.constantFrom('0', '1', '-1', '1.5', '1e3', '-0', '9007199254740993', '123456789012345', '1772359200000', 'true', 'false', 'null', '{}', '[1]', '"a\\u0041"', '01', '1.', '"\\"'),
    );
    const line = fc
      .tuple(
        fc.array(fc.tuple(key, rawValue), { minLength: 0, maxLength: 10 }),
        fc.constantFrom('', ' '),
        fc.boolean(),
      )
      .map(([pairs, sp, required]) => {
        const all = required ? [['ts', '"2026-03-01T10:00:00.000Z"'] as [string, string], ['type', '"write"'] as [string, string], ['resource', '"r"'] as [string, string], ['result', '"accepted"'] as [string, string], ...pairs] : pairs;
        return `{${all.map(([k, v]) => `${sp}"${k}"${sp}:${sp}${v}`).join(',')}${sp}}`;
      });
    let taken = 0;
    fc.assert(
      fc.property(line, (text) => {
        if (check(text)) taken++;
      }),
      { numRuns: 5000, seed: 20261130 },
    );
    expect(taken).toBeGreaterThan(100);
  });

  it('gives the same report as the general path alone', async () => {
    const general: Profile = { ...canonical, fastEvent: undefined };
    for (const name of ['mixed-incidents.ndjson', 'article-unsafe.ndjson', 'big-token.ndjson', 'invalid-lines.ndjson', 'views.ndjson']) {
      const file = join(__dirname, '..', 'fixtures', name);
      const a = await analyze({ files: [file] });
      const b = await analyze({ files: [file], profile: general });
      expect(JSON.stringify(a), name).toBe(JSON.stringify(b));
    }
  });
});
