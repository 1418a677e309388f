import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { parseTimeValue } from '../src/model/time.js';
import { compileMapping, hasNestedQuantifier, MappingError, pathGetter } from '../src/profiles/mapping.js';
import { compileRegex } from '../src/profiles/regex.js';
import { APP_RULES, K8S_LEADERELECTION } from '../src/profiles/builtin.js';
import { detectProfile, getProfile } from '../src/profiles/index.js';
import { klogParser, parseLogfmt } from '../src/profiles/parsers.js';
import { expandOtlp } from '../src/profiles/otlp.js';
import type { LockEvent } from '../src/model/event.js';
import { ROOT, runCli } from './helpers/run.js';

const origin = (text?: string) => ({ file: '/logs/w1.log', line: 1, source: '/logs/w1.log', text });
const ev = (profile: ReturnType<typeof getProfile>, rec: Record<string, unknown>) => profile.toEvent(rec, origin(JSON.stringify(rec)));

describe('timestamps in application logs', () => {
  const at = Date.UTC(2024, 0, 15, 10, 30, 46, 456);
  it.each([
    ['2024-01-15T10:30:46.456Z', at],
    ['2024-01-15 10:30:46.456 UTC', at],
    ['2024-01-15 10:30:46.456+0000', at],
    [1705314646.456, at], // zap float seconds
    [1705314646456, at], // pino ms
    ['1705314646456', at],
    [1705314646456000, at], // µs
    ['1705314646456000000', at], // OTLP ns as a string
  ])('%s', (value, ms) => {
    const r = parseTimeValue(value);
    expect(r.ok).toBe(true);
    if (r.ok) expect(Math.abs(r.ms - ms)).toBeLessThan(0.01);
  });

  it('honours an explicit format', () => {
    expect(parseTimeValue(1705314646, 'epoch-s')).toEqual({ ok: true, ms: 1705314646000 });
    expect(parseTimeValue('2024-01-15T10:30:46Z', 'epoch-ms').ok).toBe(false);
    expect(parseTimeValue('soon').ok).toBe(false);
  });
});

describe('mapping files', () => {
  const base = { match: [{ when: { step: 'got' }, type: 'acquire' }] };
  it.each([
    [{}, /\/: must have required property 'match'/],
    [{ ...base, bogus: 1 }, /unknown key "bogus"/],
    [{ match: [{ when: { m: { regex: '(' } }, type: 'acquire' }] }, /\/match\/0\/when\/m: bad regular expression/],
    [{ match: [{ when: { m: { regex: '^(?=a)b' } }, type: 'acquire' }] }, /\/match\/0\/when\/m: regular expression "\^\(\?=a\)b" uses a lookahead, which cannot be matched in linear time/],
    [{ match: [{ when: { m: { regex: '(?<!a)b' } }, type: 'acquire' }] }, /\/match\/0\/when\/m: .* uses a lookbehind/],
    [{ match: [{ when: { m: { regex: '(a)x\\1' } }, type: 'acquire' }] }, /\/match\/0\/when\/m: .* uses a backreference/],
    [{ match: [{ when: { m: { regex: '(?<n>a)\\k<n>' } }, type: 'acquire' }] }, /uses a backreference/],
    [{ match: [{ when: { m: { regex: 'a'.repeat(1001) } }, type: 'acquire' }] }, /^mapping m\.json: \/match\/0\/when\/m: regular expression is 1001 characters long; at most 1000 are allowed$/],
    [{ match: [{ when: {}, type: 'acquire' }, { when: { a: 1 }, type: 'write' }] }, /\/match\/1 can never match: \/match\/0 before it matches every record/],
    [{ match: [{ when: { a: 1 }, type: 'acquire' }, { when: { a: 1 }, type: 'write' }] }, /\/match\/1 can never match/],
    [{ match: [{ when: { step: 'put' }, type: 'write', set: { result: 'accepted' } }, { when: { step: 'put', '@rowCount': 0 }, type: 'write', set: { result: 'rejected-stale-fence' } }] }, /\/match\/1 can never match: \/match\/0 before it matches every record it would; put the more specific rule first/],
    [{ match: [{ when: { phase: { in: ['renewed', 'lock-key-created'] } }, type: 'keepalive' }, { when: { phase: 'lock-key-created' }, type: 'acquire' }] }, /\/match\/1 can never match/],
    [{ match: [{ when: { msg: { regex: 'lock' } }, type: 'acquire' }, { when: { msg: 'lock acquired' }, type: 'acquire' }] }, /\/match\/1 can never match/],
    [{ match: [{ when: { a: { exists: true } }, type: 'acquire' }, { when: { a: 'x', b: 2 }, type: 'write', set: { result: 'accepted' } }] }, /\/match\/1 can never match/],
    [{ match: [{ when: { a: 1 }, type: 'write', set: { result: 'ok' } }] }, /set\/result: "ok" is not a result of write/],
    [{ match: [{ when: { '@nope': 1 }, type: 'write' }] }, /"@nope" is not a canonical field/],
    [{ ...base, fields: { tokenn: 'x' } }, /\/fields: "tokenn" is not allowed here \(one of ts, type, message/],
    [{ ...base, values: { observer: { db: 'database' } } }, /values\/observer\/db: "database" is not one of/],
    [{ ...base, defaults: { ownerId: '{$host}' } }, /unknown placeholder \{\$host\}/],
    [JSON.parse('{"match":[{"when":{"a":1},"type":"acquire"}],"__proto__":{"polluted":true}}'), /unknown key "__proto__"/],
  ])('rejects %j when loaded', (spec, message) => {
    expect(() => compileMapping(spec, 'm.json')).toThrow(message);
    expect(() => compileMapping(spec, 'm.json')).toThrow(MappingError);
  });

  it('accepts a more specific rule before a general one', () => {
    expect(() =>
      compileMapping({ match: [{ when: { step: 'put', '@rowCount': 0 }, type: 'write', set: { result: 'rejected-stale-fence' } }, { when: { step: 'put' }, type: 'write', set: { result: 'accepted' } }, { when: { msg: { regex: 'lock' } }, type: 'acquire' }, { when: { msg: 'released' }, type: 'release' }] }, 'm'),
    ).not.toThrow();
  });

  it('prototype keys in the file are plain data', () => {
    const spec = JSON.parse('{"match":[{"when":{"__proto__":{"exists":true}},"type":"acquire"}]}');
    const p = compileMapping(spec, 'm.json');
    expect(p.toEvent(JSON.parse('{"ts":1705314646456,"resource":"r"}'), origin())).toBeNull();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('finds nested and dotted paths through own properties only', () => {
    expect(pathGetter('lock.key')({ lock: { key: 'k' } })).toBe('k');
    expect(pathGetter('service.instance.id')({ 'service.instance.id': 'i-1' })).toBe('i-1');
    expect(pathGetter('constructor.name')({})).toBeUndefined();
    expect(pathGetter('__proto__')({})).toBeUndefined();
  });

  it('applies rules in order, value maps, normalisation, defaults and exact big tokens', () => {
    const p = compileMapping(
      {
        fields: { resource: ['lock.key', 'key'], ownerId: 'who', leaseId: 'lease', fenceToken: 'rev', rowCount: 'rows', observer: 'role' },
        match: [
          { when: { step: 'lock-key-created' }, type: 'acquire' },
          { when: { step: 'put', '@rowCount': 0 }, type: 'write', set: { result: 'rejected-stale-fence' } },
          { when: { step: 'put' }, type: 'write', set: { result: 'accepted' } },
          { when: { msg: { regex: 'lease (lost|gone)', flags: 'i' } }, type: 'expire' },
        ],
        values: { observer: { 'payments-worker': 'worker' } },
        normalize: { leaseId: 'etcd-lease' },
        defaults: { ownerId: '{host}/{pid}', source: '{$file}' },
      },
      'm.json',
    );
    const a = p.toEvent({ time: 1, ts: 1705314646456, step: 'lock-key-created', lock: { key: 'k1' }, lease: '0x694d7a1b2c3d4e5f', rev: '41', role: 'payments-worker', host: 'h', pid: 7 }, origin()) as LockEvent;
    expect(a).toMatchObject({ type: 'acquire', resource: 'k1', leaseId: BigInt('0x694d7a1b2c3d4e5f').toString(), fenceToken: 41n, observer: 'worker', ownerId: 'h/7', source: 'w1.log', result: 'granted' });
    const b = p.toEvent({ ts: 1705314646456, step: 'put', key: 'k1', lease: '694d7a1b2c3d4e5f', rev: 42, rows: '0', who: 'w' }, origin()) as LockEvent;
    expect(b).toMatchObject({ type: 'write', result: 'rejected-stale-fence', leaseId: a.leaseId, ownerId: 'w' });
    const c = p.toEvent({ ts: 1705314646456, step: 'put', key: 'k1', rows: 1 }, origin()) as LockEvent;
    expect(c.result).toBe('accepted');
    expect(p.toEvent({ ts: 1705314646456, msg: 'Lease LOST', key: 'k1' }, origin())).toMatchObject({ type: 'expire' });
    expect(p.toEvent({ ts: 1705314646456, msg: 'GET /health 200' }, origin())).toBeNull();
    expect(p.toEvent({ step: 'put', key: 'k1', rows: 1 }, origin())).toMatch(/no timestamp \(looked in ts\)/);
    expect(p.toEvent({ ts: 1705314646456, step: 'put', rows: 1 }, origin())).toMatch(/no resource \(looked in lock\.key, key\)/);
    const text = '{"ts":1705314646456,"step":"put","key":"k1","rows":1,"rev":18446744073709551615}';
    expect((p.toEvent(JSON.parse(text), origin(text)) as LockEvent).fenceToken).toBe(18446744073709551615n);
  });

  it('flags nested quantifiers, not ordinary patterns', () => {
    for (const bad of ['(a+)+', '(a*)*b', '(a|aa)+', '((ab)+c)*', '(x+y)+']) expect(hasNestedQuantifier(bad), bad).toBe(true);
    for (const ok of ['a+b*', '(ab)+', '(a|b)?', '[(a+)+]', '\\(a+\\)+', 'lock (acquired|busy)', '^(lock[._ -]?)?(acquire|granted)$']) expect(hasNestedQuantifier(ok), ok).toBe(false);
  });

  it('runs on V8 only the patterns it proves linear, the rest on the linear-time engine', () => {
    const where = '/match/0/when/msg';
    const v8 = ['token (\\d+)', 'user=(\\w+)', '^\\w+$', '^.*lock', 'a{0,100}b', '\\block (is )?busy\\b|\\balready (locked|held)\\b', '^(lock[._ -]?)?(acquire|granted)$', '[a-z]{2,3}'];
    const re2 = ['\\w*\\w*\\w*!', '.*lock.*acquired', 'lock .* acquired', '(a+)+$', '(a|aa)+', 'a*b', '\\w+!', 'x\\w+x\\w+', '"id":\\s*(\\d+)', '^.*lock.*acquired'];
    for (const p of v8) expect(compileRegex(p, 'i', where).engine, p).toBe('v8');
    for (const p of re2) expect(compileRegex(p, 'i', where).engine, p).toBe('re2');
    // Every built-in profile stays on V8 (the fastest engine for ordinary text).
    const builtins = [...APP_RULES, ...K8S_LEADERELECTION.match].flatMap((r) => Object.values(r.when)).filter((c): c is { regex: string; flags: string } => typeof c === 'object' && c !== null && 'regex' in c);
    expect(builtins.length).toBeGreaterThan(20);
    expect(builtins.filter((c) => compileRegex(c.regex, c.flags, where).engine === 're2').map((c) => c.regex)).toEqual([]);
  });

  it('gives the same answers on either engine, and finishes fast on hostile text', () => {
    const texts = ['lock acquired', 'LOCK   acquired!', 'token 42', 'aaaa!', 'user=bob', 'xx', '', 'lock'.repeat(3) + ' acquired'];
    for (const p of ['.*lock.*acquired', '\\w*\\w*!', 'lock .* acquired', '(a+)+!', 'a*b|token (\\d+)']) {
      const safe = compileRegex(p, 'i', '/x');
      expect(safe.engine, p).toBe('re2');
      const v8 = new RegExp(p, 'i');
      for (const t of texts) expect(safe.test(t), `${p} on ${t}`).toBe(v8.test(t));
    }
    for (const [p, hostile] of [['\\w*\\w*\\w*!', 'a'.repeat(1 << 20)], ['.*lock.*acquired', 'lock '.repeat(200_000)], ['(a|aa)+!', 'a'.repeat(1 << 20)]] as const) {
      const m = compileMapping({ match: [{ when: { msg: { regex: p, flags: 'i' } }, type: 'acquire' }] }, 'm');
      expect(m.toEvent({ ts: 1705314646456, resource: 'r', msg: hostile }, origin())).toBeNull();
    }
  }, 10_000);

  it('bounds what a pattern sees', () => {
    const p = compileMapping({ match: [{ when: { msg: { regex: 'end$' } }, type: 'acquire' }] }, 'm');
    expect(p.toEvent({ ts: 1705314646456, resource: 'r', msg: 'x'.repeat(10000) + 'end' }, origin())).toBeNull();
  });
});

describe('app-json', () => {
  const app = getProfile('app-json');
  it('refuses a key it reads written twice with different values, escaped or not, and accepts equal copies', () => {
    const line = (extra: string) => `{"level":30,"time":1705314646456,"pid":1,"hostname":"h","msg":"write","resource":"r","fence":"1","rowCount":1${extra}}`;
    const read = (text: string) => app.toEvent(JSON.parse(text) as Record<string, unknown>, origin(text));
    for (const [extra, key] of [
      [',"rowC\\u006funt":0', 'rowCount'],
      [',"f\\u0065nce":"2"', 'fence'],
      [',"\\u0072esource":"q"', 'resource'],
      [',"resource":"q"', 'resource'],
      [',"m\\u0073g":"hello"', 'msg'],
      [',"outcome":"accepted","outcome":"error"', 'outcome'],
    ]) expect(read(line(extra)), extra).toMatch(new RegExp(`^key "${key}" appears more than once in the line with different values`));
    for (const extra of [',"resource":"r"', ',"res\\u006furce":"r"', ',"pid":1', ',"other":1,"other":2', ',"note":"say \\"hi\\""']) expect(read(line(extra)), extra).toMatchObject({ type: 'write', result: 'accepted', resource: 'r' });
    // A message repeated with another value could hide an event: invalid even when no rule matches.
    const hidden = '{"level":30,"time":1,"msg":"lock acquired","m\\u0073g":"request done","resource":"r"}';
    expect(read(hidden)).toMatch(/key "msg" appears more than once/);
    // A key the mapping does not read may repeat.
    const m = compileMapping({ fields: { resource: 'lock.key' }, match: [{ when: { step: 'got' }, type: 'acquire' }] }, 'm');
    const nested = '{"ts":1705314646456,"step":"got","lock":{"key":"a"},"l\\u006fck":{"key":"b"},"x":1,"x":2}';
    expect(m.toEvent(JSON.parse(nested) as Record<string, unknown>, origin(nested))).toMatch(/key "lock" appears more than once/);
    const fine = '{"ts":1705314646456,"step":"got","lock":{"key":"a"},"x":1,"x":2}';
    expect(m.toEvent(JSON.parse(fine) as Record<string, unknown>, origin(fine))).toMatchObject({ resource: 'a' });
  });

  it('reads logger envelopes and aliases', () => {
    expect(ev(app, { level: 30, time: 1705314646456, pid: 1, hostname: 'h', msg: 'lock acquired', resource: 'r', lease: 'L', fence: '7' })).toMatchObject({ type: 'acquire', result: 'granted', ownerId: 'h/1', fenceToken: 7n, observer: 'worker' });
    expect(ev(app, { ts: 1705314646.456, level: 'info', msg: 'write', key: 'r', token: 7, rowsAffected: 0 })).toMatchObject({ type: 'write', result: 'rejected-stale-fence' });
    expect(ev(app, { timestamp: '2024-01-15T10:30:46.456Z', message: 'Lock busy, retrying', resource: 'r' })).toMatchObject({ type: 'acquire', result: 'busy' });
    expect(ev(app, { '@timestamp': '2024-01-15T10:30:46.456Z', '@message': 'lease lost', lock_key: 'r' })).toMatchObject({ type: 'expire' });
    expect(ev(app, { timestamp: '2024-01-15T10:30:46.456Z', event: 'lock released', resource: 'r' })).toMatchObject({ type: 'release', result: 'released' }); // structlog
    expect(ev(app, { time: 1705314646456, event: 'lease.keepalive.failed', resource: 'r' })).toMatchObject({ type: 'keepalive', result: 'failed' });
    expect(ev(app, { time: 1705314646456, type: 'write', resource: 'r', result: 'timeout' })).toMatchObject({ type: 'write', result: 'timeout' });
    expect(ev(app, { time: 1705314646456, msg: 'GET /orders 200', resource: 'r' })).toBeNull();
    expect(ev(app, { time: 1705314646456, type: 'write', resource: 'r' })).toBeNull(); // a write with no outcome is no event
  });
});

describe('logfmt, klog and OTLP', () => {
  it('parses logfmt with quotes and escapes', () => {
    expect(parseLogfmt('time=2024-01-15T10:30:46Z msg="lock \\"acquired\\"" fence=42 debug')).toEqual({ time: '2024-01-15T10:30:46Z', msg: 'lock "acquired"', fence: '42', debug: true });
    expect(parseLogfmt('msg="unterminated')).toMatch(/unterminated/);
    expect(parseLogfmt('just words')).toEqual({ just: true, words: true });
  });

  it('parses klog text lines, structured and printf style', () => {
    const parse = klogParser({ year: 2024, zone: '+02:00' });
    expect(parse('I0115 10:30:46.456789       1 leaderelection.go:258] "Successfully acquired lease" lock="kube-system/kcm" identity="pod-a"')).toMatchObject({
      ts: '2024-01-15T10:30:46.456789+02:00',
      msg: 'Successfully acquired lease',
      lock: 'kube-system/kcm',
      identity: 'pod-a',
    });
    expect(parse('E0115 10:30:47.000000       1 leaderelection.go:330] failed to renew lease kube-system/kcm: timed out')).toMatchObject({ lock: 'kube-system/kcm', level: 'E' });
    expect(parse('not klog')).toEqual({});
  });

  it('expands OTLP batches with typed attributes, keeping big ints exact', () => {
    const batch = {
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.instance.id', value: { stringValue: 'w-1' } }] },
          scopeLogs: [{ logRecords: [
            { timeUnixNano: '1705314646456000000', body: { stringValue: 'lock acquired' }, attributes: [{ key: 'resource', value: { stringValue: 'r' } }, { key: 'fence', value: { intValue: '9007199254740993' } }], traceId: 'abc' },
            { timeUnixNano: 1705314647456000000, body: { stringValue: 'write' }, attributes: [{ key: 'resource', value: { stringValue: 'r' } }, { key: 'rowCount', value: { intValue: '1' } }, { key: 'fence', value: { intValue: '9007199254740993' } }] },
          ] }],
        },
      ],
    };
    const recs = expandOtlp(batch);
    expect(recs).toHaveLength(2);
    expect(recs[0]).toMatchObject({ 'service.instance.id': 'w-1', fence: '9007199254740993', body: 'lock acquired', traceId: 'abc' });
    const otlp = getProfile('otlp-json');
    const events = recs.map((r) => otlp.toEvent(r, origin()) as LockEvent);
    expect(events.map((e) => [e.type, e.result, e.fenceToken, e.ownerId, e.source])).toEqual([
      ['acquire', 'granted', 9007199254740993n, 'w-1', 'w-1'],
      ['write', 'accepted', 9007199254740993n, 'w-1', 'w-1'],
    ]);
  });

  it('counts every record of a batch line, and reconciles with `expanded`', async () => {
    const line = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [
      { timeUnixNano: '1705314646456000000', body: { stringValue: 'lock acquired' }, attributes: [{ key: 'resource', value: { stringValue: 'r' } }] },
      { timeUnixNano: '1705314646457000000', body: { stringValue: 'GET /health' } },
      { body: { stringValue: 'lock acquired' }, attributes: [{ key: 'resource', value: { stringValue: 'r' } }] },
    ] }] }] });
    const report = await analyze({ streams: [{ name: 'otlp.json', stream: Readable.from([Buffer.from(line + '\n')]) }], profile: getProfile('otlp-json') });
    expect(report.input).toMatchObject({ lines: 1, expanded: 2, events: 1, ignored: 1, invalid: 1 });
  });
});

describe('auto', () => {
  it('detects the profile of each input from its first line', () => {
    expect(detectProfile('{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r"}')).toBe('canonical');
    expect(detectProfile('{"level":30,"time":1,"msg":"lock acquired"}')).toBe('app-json');
    expect(detectProfile('{"resourceLogs":[]}')).toBe('otlp-json');
    expect(detectProfile('time=2024-01-15T10:30:46Z level=info msg="lock acquired"')).toBe('logfmt');
    expect(detectProfile('I0115 10:30:46.456789       1 leaderelection.go:258] "x"')).toBe('k8s-leaderelection');
  });
});

describe('README worked example', () => {
  it('is the tested example, and it finds the late update', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const at = readme.indexOf('**Worked example.**');
    const blocks = [...readme.slice(at).matchAll(/```(ndjson|json)\n([\s\S]*?)```/g)].slice(0, 2).map((m) => m[2]);
    expect(blocks[0]).toBe(readFileSync(join(ROOT, 'examples/mapping/billing.log'), 'utf8'));
    expect(blocks[1]).toBe(readFileSync(join(ROOT, 'examples/mapping/billing.json'), 'utf8'));
    const r = await runCli(['analyze', '--mapping', 'examples/mapping/billing.json', 'examples/mapping/billing.log']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.findings.map((f: { rule: string }) => f.rule)).toEqual(['accepted-stale-write']);
    expect(report.input).toMatchObject({ lines: 7, events: 6, ignored: 1, invalid: 0 });
  });

  it('a bad mapping exits 2 naming the path', async () => {
    const r = await runCli(['analyze', '--mapping', 'package.json', 'examples/mapping/billing.log']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^stalewrite: mapping package\.json: \/: (unknown key|must have required property)/);
  });
});
