/**
 * The fast path of JSON mappings (src/profiles/fast-mapping.ts: app-json and mapping files) must
 * never change a result: for any line it either declines (undefined), or says "ignored" (null)
 * exactly when the general path does, or gives exactly the event the general path gives
 * (JSON.parse, the mapping's toEvent, the duplicate-key guard). Checked on every line of the
 * profile fixtures and of the mapping fixtures, on hand-picked edge cases, and on generated
 * pino / bunyan / winston-style lines, valid and not.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import type { LockEvent } from '../src/model/event.js';
import { getProfile, loadMapping } from '../src/profiles/index.js';
import { compileMapping } from '../src/profiles/mapping.js';
import type { Profile, RecordOrigin } from '../src/profiles/types.js';
import { filesUnder, parseObject } from './helpers/paths.js';

const origin: RecordOrigin = { file: '/logs/app-7.log', line: 7, source: 'app-7.log' };
const FIXTURES = join(__dirname, '..', 'fixtures');

/** The general path alone, as toEvents runs it: JSON.parse, toEvent, and the record kept as its line. */
function general(profile: Profile, text: string): LockEvent | string | null {
  const record = parseObject(text);
  if (typeof record === 'string') return record;
  const ev = profile.toEvent(record, { ...origin, text });
  if (ev === null || typeof ev === 'string') return ev;
  expect(ev.record).toBe(record);
  return { ...ev, record: undefined, text };
}

/** What both paths must agree on: every field but where the line is (the fast path names it, the general path's caller adds it). */
function comparable(ev: LockEvent): Record<string, unknown> {
  const { offset: _o, bytes: _b, ...rest } = ev;
  return rest;
}

/** Checks one line; returns what the fast path did. */
function check(profile: Profile, text: string): 'declined' | 'ignored' | 'event' {
  const fast = profile.fastEvent!(text, origin);
  if (fast === undefined) return 'declined';
  const slow = general(profile, text);
  if (fast === null) {
    expect(slow, `the fast path ignored a line the general path did not: ${text}`).toBeNull();
    return 'ignored';
  }
  expect(typeof slow === 'object' && slow !== null, `general path rejected a line the fast path took: ${text} → ${String(slow)}`).toBe(true);
  expect(comparable(fast), text).toEqual(comparable(slow as LockEvent));
  return 'event';
}

const logFile = (p: string) => /\.(log|jsonl|ndjson|json)$/.test(p) && !/(expect|mapping)\.json$|\.mapping\.json$/.test(p);

describe('mapping fast path', () => {
  const appJson = getProfile('app-json');

  it('is there for app-json, and not where the mapping needs the general path', () => {
    expect(appJson.fastEvent).toBeDefined();
    expect(getProfile('logfmt').fastEvent).toBeUndefined();
    expect(getProfile('otlp-json').fastEvent).toBeUndefined();
    expect(getProfile('k8s-leaderelection').fastEvent).toBeUndefined();
    const m = { fields: { resource: 'key' }, match: [{ when: { msg: 'x' }, type: 'acquire' }] };
    expect(compileMapping(m, 'm').fastEvent).toBeDefined();
    expect(compileMapping({ ...m, values: { resource: { a: 'b' } } }, 'm').fastEvent).toBeUndefined();
    expect(compileMapping({ ...m, normalize: { resource: 'lower' } }, 'm').fastEvent).toBeUndefined();
    expect(compileMapping({ ...m, carry: ['resource'] }, 'm').fastEvent).toBeUndefined();
    expect(compileMapping({ ...m, fields: { resource: 'constructor' } }, 'm').fastEvent).toBeUndefined();
  });

  it('agrees with the general path on every fixture line (app-json and each mapping file on its logs)', () => {
    const counts = { declined: 0, ignored: 0, event: 0 };
    for (const file of filesUnder(join(FIXTURES, 'profiles')).filter(logFile)) {
      for (const line of readFileSync(file, 'utf8').split('\n')) if (line.trim() !== '') counts[check(appJson, line)]++;
    }
    // Most app-json fixture lines are flat logger lines: the fast path must actually be used.
    expect(counts.event).toBeGreaterThan(100);
    expect(counts.ignored).toBeGreaterThan(10);
    let mappings = 0;
    for (const mapping of filesUnder(FIXTURES).filter((p) => /mapping\.json$/.test(p))) {
      const profile = loadMapping(mapping);
      if (profile.fastEvent === undefined) continue;
      mappings++;
      for (const file of filesUnder(dirname(mapping)).filter(logFile)) {
        for (const line of readFileSync(file, 'utf8').split('\n')) if (line.trim() !== '') check(profile, line);
      }
    }
    expect(mappings).toBeGreaterThan(2);
  });

  it('declines what only the general path can judge', () => {
    const base = '"level":30,"time":1772323200002,"pid":1007,"hostname":"host-7","msg":"lock acquired","resource":"res-6","owner":"w-7","lease":"l6-1"';
    expect(check(appJson, `{${base}}`)).toBe('event');
    const declined = [
      `{${base},"resource":"res-7"}`, // a key read twice (JSON keeps the last)
      `{${base},"resource":"res-6"}`, // twice, the same: harmless, but the general path says so
      `{${base},"res\\u006furce":"res-7"}`, // an escaped key
      `{${base},"msg":"lock released"}`, // the message twice
      `{${base},"host":"a","host":"b"}`, // the first key of a dot path (host.name) twice
      `{${base},"fence":12345678901234567}`, // above 2^53 as a number
      `{${base},"fence":"-1"}`,
      `{${base},"fence":1.5}`,
      `{${base},"lease":12345678901234567}`,
      `{${base},"ttlMs":-5}`,
      `{${base},"ttlMs":"soon"}`,
      `{${base},"observer":"nobody"}`,
      `{${base},"result":"accepted"}`, // not a result of acquire
      `{${base},"note":"tab\there"}`, // a raw control character: not JSON
      `{${base},"err":{"stack":"tab\there"}}`,
      `{${base},"note":"bad \\x escape"}`,
      `{${base},"note":"bad \\u12G4 escape"}`,
      `{${base},"err":{"a":1,}}`,
      `{${base},"err":{"a" 1}}`,
      `{${base},"err":{"a":1]}`,
      `{${base},"err":[1,2}`,
      `{${base},"err":{"a":01}}`,
      `{${base},"err":{"a":tru}}`,
      `{${base},"err":{"a":1}`,
      `{${base},"err":${'['.repeat(40)}${']'.repeat(40)}}`, // deeper than the fast path goes
      `{${base},"err":{\t"a":1}}`, // a tab between tokens
      `{${base},"msg":"lock \\u0061cquired"}`, // an escape in a value the mapping reads
      `{"time":1,"msg":"lock acquired","resource":{"id":"r"}}`, // a nested value the mapping reads
      `{${base},"host":{"name":"n1"}}`, // host.name, nested
      `{${base},"lea\\u0073e":"l2"}`, // an escaped key
      `{${base}} x`,
      `{${base},}`,
      `{${base},"x":01}`,
      '\ufeff{' + base + '}',
      '{"msg":"lock acquired","resource":"r"}', // no time
      '{"time":"yesterday","msg":"lock acquired","resource":"r"}',
      '{"time":1772323200,"msg":"lock acquired"}', // no resource
      '{}',
      '[]',
      '"x"',
    ];
    for (const line of declined) expect(check(appJson, line), line).toBe('declined');
    const ignored = ['{"time":1772323200,"msg":"write","resource":"r"}' /* a write of no known outcome */, '{"level":30,"time":1,"msg":"request handled","req":"GET /"}', '{"msg":"x"}', '{"a":null,"b":true,"c":false,"d":-0.5e-3}'];
    for (const line of ignored) expect(check(appJson, line), line).toBe('ignored');
  });

  it('reads values as JSON.parse does, and rules, defaults and candidates as the general path', () => {
    const taken = [
      '{"time":"2026-03-01T10:00:00.000Z","msg":"lock acquired","resource":"r","pid":7,"hostname":"h"}', // ownerId from {hostname}/{pid}
      '{"time":"2026-03-01T10:00:00.000Z","msg":"lock acquired","resource":"r","pid":7}', // no hostname: no owner
      '{"time":"2026-03-01T10:00:00.000Z","msg":"lock acquired","resource":"r","owner":"","worker":"w2"}', // "" is absent: the next candidate
      '{"time":"2026-03-01T10:00:00.000Z","msg":"lock acquired","resource":"r","worker":"w2","owner":"w1"}', // the first candidate wins, in any order
      '{"ts":1772323200.5,"msg":"keepalive ok","resource":7,"lease":12345,"fence":42,"ttl_ms":"2s"}',
      '{"timestamp":"2026-03-01T10:00:00Z","event":"lock.acquired","lockKey":"k","token":"007","ttlMs":1.5e3}',
      '{"@timestamp":"2026-03-01T10:00:00Z","type":"write","resource":"r","rowCount":0,"fence":"9"}',
      '{"t":1772323200000,"message":"write accepted","key":"r","opId":"op-1","rows":1,"outcome":"accepted"}',
      '{"time":1772323200000,"msg":"write","resource":"r","rowCount":"0"}',
      '{"time":1772323200000,"msg":"Lock Released","resource":"r","role":"authority","host.name":"n1"}',
      '{"time":1772323200000,"msg":"lease expired","resource":"r","hostname":"a","host.name":"b"}',
      '{"time":1772323200000,"msg":"lock busy","resource":"r","source":"db","x":null,"y":true}',
      ' { "time" : 1772323200000 , "msg" : "lock acquired" , "resource" : "ключ ✓" } ',
      '{"time":1772323200000,"msg":"lock acquired","resource":true,"owner":false,"lease":-3}',
      // Keys the mapping does not read may hold anything JSON.
      '{"time":1772323200000,"msg":"lock acquired","resource":"r","err":{"type":"E","stack":"at x\\n\\tat \\"y\\" \\u00e9\\/","list":[1,-2.5e3,true,null,{"resource":"other"},[]],"o":{}},"tags":[ ],"note":"say \\"hi\\""}',
      `{"time":1772323200000,"msg":"lock acquired","resource":"r","deep":${'['.repeat(30)}${']'.repeat(30)}}`,
    ];
    for (const line of taken) expect(check(appJson, line), line).toBe('event');
    const ev = appJson.fastEvent!(taken[0]!, origin) as LockEvent;
    expect([ev.ownerId, ev.source, ev.observer, ev.text]).toEqual(['h/7', 'h', 'worker', taken[0]]);
  });

  it('agrees with the general path on generated pino, bunyan and winston lines', () => {
    const message = fc.constantFrom('lock acquired', 'keepalive ok', 'lock released', 'write', 'write accepted', 'write rejected', 'stale token', 'lease expired', 'lease revoked', 'lock is busy', 'release rejected', 'keepalive failed', 'write timed out', 'update', 'request handled', 'Lock Acquired!', '', 'acquired the lock');
    const key = fc.constantFrom('time', 'timestamp', 'ts', '@timestamp', 't', 'msg', 'message', 'event', 'type', 'kind', 'level', 'pid', 'hostname', 'host', 'host.name', 'name', 'v', 'resource', 'key', 'lock', 'owner', 'worker', 'ownerId', 'lease', 'leaseId', 'fence', 'token', 'fenceToken', 'opId', 'rowCount', 'rows', 'ttlMs', 'ttl_ms', 'result', 'outcome', 'observer', 'role', 'source', 'x', '1', '');
    const str = fc.oneof(message, fc.constantFrom('acquire', 'write', 'lock.acquired', 'renew', 'granted', 'busy', 'accepted', 'rejected-stale-fence', 'error', 'worker', 'resource', 'authority', '007', '12', ' 5', '2s', '2026-03-01T10:00:00.000Z', '1772323200000', 'info', 'ключ'), fc.string({ maxLength: 5 }));
    const raw = fc.oneof(
      { weight: 4, arbitrary: str.map((s) => JSON.stringify(s)) },
      { weight: 2, arbitrary: fc.constantFrom('0', '1', '-1', '30', '1.5', '1e3', '-0', '1772323200002', '1772323200.5', '9007199254740993', '123456789012345', 'true', 'false', 'null') },
      { weight: 1, arbitrary: fc.constantFrom('{}', '{"a":1}', '[1]', '"a\\u0041"', '"\\n"', '01', '1.', '"x', 'nul', '{"a":[1,{"b":"\\"c\\""}]}', '[1,]', '{"a":1', '"\\x"', '{"resource":"other","msg":"lock released"}') },
      { weight: 1, arbitrary: fc.json({ maxDepth: 3 }) },
      { weight: 1, arbitrary: fc.json({ maxDepth: 2 }).map((j) => j.slice(0, Math.max(1, j.length - 1))) }, // cut short: mostly not JSON
    );
    const time = fc.oneof(fc.integer({ min: 1772323200000, max: 1772323300000 }).map(String), fc.constantFrom('"2026-03-01T10:00:00.123Z"', '"2026-03-01 10:00:00"', '1772323200'));
    const styles = fc.constantFrom('pino', 'bunyan', 'winston', 'free');
    const line = fc
      .tuple(styles, time, message, fc.array(fc.tuple(key, raw), { maxLength: 8 }), fc.constantFrom('', ' '), fc.constantFrom('', '', '', ' x', ','))
      .map(([style, ts, msg, pairs, sp, tail]) => {
        const m = JSON.stringify(msg);
        const head: [string, string][] =
          style === 'pino'
            ? [['level', '30'], ['time', ts], ['pid', '1007'], ['hostname', '"host-7"'], ['msg', m]]
            : style === 'bunyan'
              ? [['name', '"app"'], ['hostname', '"h"'], ['pid', '1'], ['level', '30'], ['msg', m], ['time', ts], ['v', '0']]
              : style === 'winston'
                ? [['level', '"info"'], ['message', m], ['timestamp', ts]]
                : [];
        const all = [...head, ['resource', '"res-1"'] as [string, string], ...pairs];
        return `{${all.map(([k, v]) => `${sp}${JSON.stringify(k)}${sp}:${sp}${v}`).join(',')}${sp}}${tail}`;
      });
    const counts = { declined: 0, ignored: 0, event: 0 };
    fc.assert(
      fc.property(line, (text) => {
        counts[check(appJson, text)]++;
      }),
      { numRuns: 5000, seed: 20261201 },
    );
    expect(counts.event).toBeGreaterThan(300);
    expect(counts.ignored).toBeGreaterThan(100);
    expect(counts.declined).toBeGreaterThan(100);
  });

  it('gives the same report as the general path alone', async () => {
    const slow: Profile = { ...appJson, fastEvent: undefined, recipe: undefined };
    const dirs = filesUnder(join(FIXTURES, 'profiles', 'app-json-loggers')).filter(logFile);
    dirs.push(...filesUnder(join(FIXTURES, 'profiles', 'same-incident', 'app-json')).filter(logFile));
    expect(dirs.length).toBeGreaterThan(5);
    for (const file of dirs) {
      const a = await analyze({ files: [file], profile: appJson, workers: 'off' });
      const b = await analyze({ files: [file], profile: slow, workers: 'off' });
      expect(JSON.stringify(a), file).toBe(JSON.stringify(b));
    }
    const mapping = join(FIXTURES, 'mapping-readme', 'mapping.json');
    if (existsSync(mapping)) {
      const fast = loadMapping(mapping);
      const inputs = filesUnder(dirname(mapping)).filter(logFile);
      const a = await analyze({ files: inputs, profile: fast, workers: 'off' });
      const b = await analyze({ files: inputs, profile: { ...fast, fastEvent: undefined, recipe: undefined }, workers: 'off' });
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    }
  });
});
