import { describe, expect, it } from 'vitest';
import { canonical, numberLiteral } from '../src/profiles/canonical.js';
import { scanTopLevelKey } from '../src/profiles/scan.js';
import type { LockEvent } from '../src/model/event.js';

function map(text: string): LockEvent | string | null {
  return canonical.toEvent(JSON.parse(text) as Record<string, unknown>, { file: 'f.ndjson', line: 3, source: 'f.ndjson', text });
}

const base = '"ts":"2026-03-01T10:00:00Z","resource":"r"';

describe('canonical profile', () => {
  it('builds an event with defaults for result, observer and source', () => {
    const ev = map(`{${base},"type":"acquire","ownerId":"a","leaseId":"l1","fenceToken":"5","ttlMs":1000,"msg":"hi"}`) as LockEvent;
    expect(ev).toMatchObject({ type: 'acquire', result: 'granted', observer: 'authority', source: 'f.ndjson', file: 'f.ndjson', line: 3, fenceToken: 5n, leaseId: 'l1', ttlMs: 1000 });
    const w = map(`{${base},"type":"write","result":"accepted","source":"db-1"}`) as LockEvent;
    expect(w).toMatchObject({ observer: 'resource', source: 'db-1' });
    expect((map(`{${base},"type":"keepalive"}`) as LockEvent).result).toBe('ok');
    expect((map(`{${base},"type":"release"}`) as LockEvent).result).toBe('released');
  });

  it.each([
    [`{"type":"write","resource":"r","result":"accepted"}`, /missing required field "ts"/],
    [`{"ts":"2026-03-01T10:00:00Z","resource":"r"}`, /missing required field "type"/],
    [`{"ts":"2026-03-01T10:00:00Z","type":"write","result":"accepted"}`, /missing required field "resource"/],
    [`{${base},"type":"write"}`, /missing required field "result"/],
    [`{${base},"type":"write","result":"ok"}`, /result "ok" is not allowed for write \(accepted, rejected-stale-fence/],
    [`{${base},"type":"acquire","result":"accepted"}`, /not allowed for acquire \(granted, busy\)/],
    [`{${base},"type":"lock"}`, /type "lock" is not one of/],
    [`{${base},"type":"write","result":"accepted","fenceToken":-1}`, /negative/],
    [`{${base},"type":"write","result":"accepted","fenceToken":1.5}`, /not an integer/],
    [`{${base},"type":"write","result":"accepted","fenceToken":"12a"}`, /not a non-negative decimal integer/],
    [`{${base},"type":"write","result":"accepted","observer":"db"}`, /observer "db" is not one of/],
    [`{"ts":"2026-03-01 10:00:00","type":"write","resource":"r","result":"accepted"}`, /not RFC 3339 with a zone/],
    [`{"ts":true,"type":"write","resource":"r","result":"accepted"}`, /^ts must be/],
    [`{${base},"type":"write","result":"accepted","ownerId":7}`, /ownerId must be string/],
  ])('explains an invalid record: %s', (line, reason) => {
    const r = map(line);
    expect(typeof r).toBe('string');
    expect(r as string).toMatch(reason);
  });

  it('reads a fenceToken above 2^53 written as a JSON number exactly', () => {
    const ev = map(`{${base},"type":"write","result":"accepted","fenceToken":9007199254740993}`) as LockEvent;
    expect(ev.fenceToken).toBe(9007199254740993n);
  });

  it('reads a leaseId above 2^53 written as a JSON number exactly', () => {
    const ev = map(`{${base},"type":"acquire","leaseId":7587869104436101437}`) as LockEvent;
    expect(ev.leaseId).toBe('7587869104436101437');
  });

  it('reads the top-level token exactly even when a nested object has the same key', () => {
    const text = `{${base},"type":"write","result":"accepted","nested":{"fenceToken":9007199254740993,"type":"x"},"fenceToken":9007199254740993}`;
    const ev = canonical.toEvent(JSON.parse(text) as Record<string, unknown>, { file: 'f', line: 1, source: 'f', text }) as LockEvent;
    expect(ev.fenceToken).toBe(9007199254740993n);
  });

  it('refuses a top-level key written twice, and never guesses digits it cannot read', () => {
    const twice = `{${base},"type":"write","result":"accepted","fenceToken":1,"fenceToken":9}`;
    expect(canonical.toEvent(JSON.parse(twice) as Record<string, unknown>, { file: 'f', line: 1, source: 'f', text: twice })).toMatch(/key "fenceToken" appears more than once/);
    const exp = `{${base},"type":"write","result":"accepted","fenceToken":9.007199254740993e15}`;
    expect(canonical.toEvent(JSON.parse(exp) as Record<string, unknown>, { file: 'f', line: 1, source: 'f', text: exp })).toMatch(/log it as a decimal string/);
    // Without the raw text, it is invalid with the hint too.
    const big = `{${base},"type":"write","result":"accepted","fenceToken":9007199254740993}`;
    expect(canonical.toEvent(JSON.parse(big) as Record<string, unknown>, { file: 'f', line: 1, source: 'f' })).toMatch(/log it as a decimal string/);
  });

  describe('a key repeated with an escape or another value', () => {
    const write = `${base},"type":"write","resource":"r","fenceToken":"1","result":"accepted"`;
    const ev = (text: string) => canonical.toEvent(JSON.parse(text) as Record<string, unknown>, { file: 'f', line: 1, source: 'f', text });
    it.each([
      ['res\\u0075lt', 'result', '"rejected-stale-fence"'],
      ['fenceT\\u006fken', 'fenceToken', '"2"'],
      ['\\u0072esource', 'resource', '"other"'],
      ['result', 'result', '"rejected-stale-fence"'],
      ['type', 'type', '"acquire"'],
      ['ts', 'ts', '"2026-03-01T10:00:09Z"'],
      ['observer', 'observer', '"worker"'],
      ['leaseId', 'leaseId', '"L2"'],
      ['ownerId', 'ownerId', '"w2"'],
      ['operationId', 'operationId', '"op2"'],
      ['source', 'source', '"s2"'],
      ['ttlMs', 'ttlMs', '5'],
      ['host\\u006eame', 'hostname', '"h2"'],
      ['fenceToken', 'fenceToken', '9007199254740992'],
    ])('"%s" with another value makes the line invalid, naming %s', (spelled, key, value) => {
      const extra = key === 'ttlMs' || key === 'hostname' || key === 'leaseId' || key === 'ownerId' || key === 'operationId' || key === 'source' || key === 'observer' ? `,"${key}":${key === 'ttlMs' ? '4' : key === 'observer' ? '"resource"' : '"x"'}` : '';
      const text = `{${write}${extra},"${spelled}":${value}}`;
      expect(ev(text)).toMatch(new RegExp(`^key "${key}" appears more than once in the line with different values`));
      if (spelled.includes('\\')) expect(ev(text)).toContain(`(once written "${spelled}")`);
    });
    it('two copies with the same value are accepted, escaped or not (pino repeats keys)', () => {
      for (const copy of [',"result":"accepted"', ',"res\\u0075lt":"accepted"', ',"fenceToken":"\\u0031"', ',"hostname":"h","hostname":"h"', ',"ttlMs":5,"ttlMs":5.0']) {
        const r = ev(`{${write}${copy}}`);
        expect(typeof r, copy).toBe('object');
        expect((r as LockEvent).result).toBe('accepted');
      }
      // A number above 2^53 repeated alike is still read exactly.
      expect((ev(`{${base},"type":"write","resource":"r","result":"accepted","fenceToken":9007199254740993,"fenceToken":9007199254740993}`) as LockEvent).fenceToken).toBe(9007199254740993n);
      // Other keys may repeat freely, and escapes elsewhere change nothing.
      expect(typeof ev(`{${write},"msg":"a","msg":"b"}`)).toBe('object');
      expect(typeof ev(`{${write},"msg":"say \\"result\\"","n":{"result":"x"}}`)).toBe('object');
    });
  });

  it('scans only the top level of the object for keys', () => {
    expect(scanTopLevelKey('{"a":{"ts":1},"ts":2}', 'ts')).toEqual({ count: 1, number: '2', same: true });
    expect(scanTopLevelKey('{"ts":1, "b":[{"ts":3}], "ts" : 2 }', 'ts')).toEqual({ count: 2, number: '2', same: false });
    expect(scanTopLevelKey('{"x\\"ts":1,"s":"\\"ts\\":"}', 'ts')).toEqual({ count: 0, same: true });
    expect(scanTopLevelKey('{"t\\u0073":5}', 'ts')).toEqual({ count: 1, number: '5', same: true });
    expect(scanTopLevelKey('[1]', 'ts')).toBeUndefined();
  });

  it('numberLiteral only returns digits that parse to the same double', () => {
    expect(numberLiteral('{"fenceToken": 12345678901234567890}', 'fenceToken', 12345678901234567890)).toBe('12345678901234567890');
    expect(numberLiteral('{"fenceToken":1e30}', 'fenceToken', 1e30)).toBeUndefined();
    expect(numberLiteral('{"fenceToken":5}', 'fenceToken', 6)).toBeUndefined();
  });

  it('keeps prototype-named keys as plain data', () => {
    const ev = map(`{${base},"type":"write","result":"accepted","fenceToken":1,"__proto__":{"polluted":true},"constructor":"x"}`) as LockEvent;
    expect(typeof ev).toBe('object');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
