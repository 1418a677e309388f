/**
 * What reading ZooKeeper needs: Java logging text lines (parse `log4j`), named regex groups as
 * fields, the zk-session normaliser, lease-scoped events (a session expiry that names no resource,
 * applied by the engine to every resource the session's lease holds), and the `zookeeper` profile
 * on each verbatim line it documents.
 */
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/run.js';
import { analyze } from '../src/analyze.js';
import { Engine } from '../src/engine.js';
import { rules } from '../src/rules/index.js';
import { isLeaseScoped, LEASE_SCOPED, type LockEvent } from '../src/model/event.js';
import { compileMapping, MappingError } from '../src/profiles/mapping.js';
import { detectProfile, getProfile } from '../src/profiles/index.js';
import { log4jParser } from '../src/profiles/parsers.js';
import { LeaseHolders } from '../src/timeline/lease-holders.js';

const origin = (file = '/logs/zk.log') => ({ file, line: 1, source: file });

describe('parse log4j: Java logging text lines', () => {
  const parse = log4jParser({ zone: '+02:00' });

  it('reads the usual layouts: timestamp, level, thread, logger, message', () => {
    // The layout the reproduction runs ZooKeeper with (a zone on every line).
    expect(parse('2026-12-01T10:28:53.468+0000 [SessionTracker] INFO  org.apache.zookeeper.server.ZooKeeperServer - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded')).toEqual({
      ts: '2026-12-01T10:28:53.468+00:00',
      thread: 'SessionTracker',
      logger: 'org.apache.zookeeper.server.ZooKeeperServer',
      level: 'INFO',
      msg: 'Expiring session 0x10000571c0c0000, timeout of 800ms exceeded',
    });
    // Debian's log4j.properties and upstream's logback.xml: %d{ISO8601}, no zone (the option's).
    expect(parse('2026-12-01 10:28:53,468 - INFO  [SessionTracker:ZooKeeperServer@398] - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded')).toMatchObject({
      ts: '2026-12-01T10:28:53.468+02:00',
      level: 'INFO',
      msg: 'Expiring session 0x10000571c0c0000, timeout of 800ms exceeded',
    });
    expect(parse('2026-12-01 10:28:53,468 [myid:3] - WARN  [QuorumPeer[myid=3](plain=0.0.0.0:2181)(secure=disabled):o.a.z.s.q.Follower@131] - Exception when following the leader')).toMatchObject({
      level: 'WARN',
      msg: 'Exception when following the leader',
    });
    // Spring Boot: LEVEL pid --- [thread] logger : message.
    expect(parse('2026-12-01T10:28:53.468Z  INFO 1234 --- [main] o.a.c.f.state.ConnectionStateManager     : State change: SUSPENDED')).toMatchObject({
      ts: '2026-12-01T10:28:53.468Z',
      thread: 'main',
      logger: 'o.a.c.f.state.ConnectionStateManager',
      msg: 'State change: SUSPENDED',
    });
    // A header of another shape: msg is all after the level, and the phrase is still in it.
    const odd = parse('2024-10-14 11:40:05,955 WARN [Curator-ConnectionStateManager-0] [org.apache.curator.framework.state.ConnectionStateManager] JWECdKFLShu8reZ0CX48NQ - Session timeout has elapsed while SUSPENDED. Injecting a session expiration. Elapsed ms: 60444. Adjusted session timeout ms: 60000') as Record<string, string>;
    expect(odd.level).toBe('WARN');
    expect(odd.msg).toContain('Session timeout has elapsed while SUSPENDED. Injecting a session expiration.');
    expect(parse('[2026-12-01 10:28:53,468] INFO [ZooKeeperClient Kafka server] Connected. (kafka.zookeeper.ZooKeeperClient)')).toMatchObject({ ts: '2026-12-01T10:28:53.468+02:00', level: 'INFO' });
  });

  it('ignores lines without a timestamp first, parses JSON lines, and reads key=value pairs in the message', () => {
    expect(parse('\tat org.apache.zookeeper.ClientCnxn$SendThread.run(ClientCnxn.java:1242)')).toEqual({});
    expect(parse('[2026-12-01 10:28:53,468 INFO unclosed bracket')).toEqual({});
    expect(parse('{"@timestamp":"2026-12-01T10:28:53.468Z","message":"State change: LOST"}')).toEqual({ '@timestamp': '2026-12-01T10:28:53.468Z', message: 'State change: LOST' });
    expect(parse('{"truncated":')).toMatch(/^not valid JSON/);
    expect(parse('2026-12-01 10:28:53,468 INFO  com.example.Job - lock acquired resource=invoices/7 session=0x10a czxid=4, note="two words" level=x')).toMatchObject({
      resource: 'invoices/7',
      session: '0x10a',
      czxid: '4',
      note: 'two words',
      level: 'INFO', // the parser's own keys are never overwritten by the message
    });
    expect(parse('2026-12-01 10:28:53,468 INFO  com.example.Job - lock acquired resource=a resource=b')).toMatch(/resource= twice with different values/);
    expect(parse('2026-12-01 10:28:53,468 INFO  com.example.Job - lock acquired resource=a resource=a')).toMatchObject({ resource: 'a' });
  });
});

describe('mapping language: named groups, zk-session, scope', () => {
  const spec = (extra: object = {}) => ({
    parse: 'log4j',
    match: [{ when: { '@message': { regex: 'Expiring session (?<leaseId>0x[0-9a-f]{1,16})\\b, timeout of (?<ttlMs>\\d+)' } }, type: 'expire', scope: 'lease' }],
    normalize: { leaseId: 'zk-session' },
    ...extra,
  });

  it('a named group gives its canonical field; a lease-scoped rule names no resource', () => {
    const p = compileMapping(spec(), 'm.json');
    expect(p.leaseScoped).toBe(true);
    expect(p.fastEvent).toBeUndefined();
    const e = p.toEvent(p.parseLine!('2026-12-01T10:28:53.468+0000 [SessionTracker] INFO  org.apache.zookeeper.server.ZooKeeperServer - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded') as Record<string, unknown>, origin()) as LockEvent;
    expect(e).toMatchObject({ type: 'expire', resource: LEASE_SCOPED, leaseId: '0x10000571c0c0000', ttlMs: 800 });
    expect(isLeaseScoped(e)).toBe(true);
  });

  it('zk-session gives the server\'s spelling to every form of a session id', () => {
    const p = compileMapping({ match: [{ when: { step: 'acquire' }, type: 'acquire' }], normalize: { leaseId: 'zk-session' } }, 'm.json');
    const lease = (leaseId: unknown) => p.toEvent({ ts: '2026-12-01T10:00:00Z', step: 'acquire', resource: 'r', leaseId }, origin());
    for (const form of ['010000571c0c0000', '0x10000571c0c0000', '10000571C0C0000', ' 0x010000571c0c0000 ']) expect((lease(form) as LockEvent).leaseId, form).toBe('0x10000571c0c0000');
    expect(lease('session-7')).toMatch(/leaseId "session-7" is not a valid zk-session id/);
  });

  it('refuses a group that names no field a group can give, a field named twice, and a lease scope on an event about one resource', () => {
    expect(() => compileMapping({ match: [{ when: { msg: { regex: 'session (?<session>\\w+)' } }, type: 'expire' }] }, 'm.json')).toThrow(/named group "session" is not a field a group can give/);
    expect(() => compileMapping({ match: [{ when: { msg: { regex: 'a (?<leaseId>\\w+)' }, text: { regex: 'b (?<leaseId>\\w+)' } }, type: 'expire' }] }, 'm.json')).toThrow(/"leaseId" appears twice/);
    expect(() => compileMapping({ match: [{ when: { msg: 'x' }, type: 'write', scope: 'lease' }] }, 'm.json')).toThrow(MappingError);
    expect(() => compileMapping({ match: [{ when: { msg: 'x' }, type: 'acquire', scope: 'lease' }] }, 'm.json')).toThrow(/\/match\/0\/scope: a acquire is about one resource/);
    expect(() => compileMapping({ match: [{ when: { msg: 'x' }, type: 'expire', scope: 'session' }] }, 'm.json')).toThrow(MappingError);
  });

  it('a group beats the record\'s field; a lease-scoped rule without a lease id reads as an ordinary event', () => {
    const p = compileMapping({ match: [{ when: { msg: { regex: 'lost (?<leaseId>L\\d+)' } }, type: 'expire', scope: 'lease' }, { when: { msg: 'gone' }, type: 'expire', scope: 'lease' }] }, 'm.json');
    expect(p.toEvent({ ts: '2026-12-01T10:00:00Z', msg: 'lost L7', leaseId: 'L9', resource: 'r' }, origin())).toMatchObject({ leaseId: 'L7', resource: LEASE_SCOPED });
    expect(p.toEvent({ ts: '2026-12-01T10:00:00Z', msg: 'gone', resource: 'r' }, origin())).toMatchObject({ resource: 'r', leaseId: undefined });
    expect(p.toEvent({ ts: '2026-12-01T10:00:00Z', msg: 'gone' }, origin())).toMatch(/no resource/);
  });

  it('carry: leaseId too (it was accepted before, and ignored)', () => {
    const p = compileMapping({ match: [{ when: { msg: 'acquired' }, type: 'acquire' }, { when: { msg: 'lost' }, type: 'expire' }], carry: ['resource', 'leaseId'] }, 'm.json');
    p.toEvent({ ts: '2026-12-01T10:00:00Z', msg: 'acquired', resource: 'r', leaseId: 'L1' }, origin());
    expect(p.toEvent({ ts: '2026-12-01T10:00:01Z', msg: 'lost' }, origin())).toMatchObject({ resource: 'r', leaseId: 'L1' });
    expect(p.toEvent({ ts: '2026-12-01T10:00:01Z', msg: 'lost' }, origin('/logs/other.log'))).toMatch(/no resource/);
  });
});

describe('the zookeeper profile, line by line', () => {
  const zk = getProfile('zookeeper', { log4j: { zone: 'Z' } });
  const read = (line: string, file = '/logs/zk.log') => {
    const rec = zk.parseLine!(line);
    return typeof rec === 'string' ? rec : zk.toEvent(rec, origin(file));
  };

  it("reads the server's expiry, in the reproduction's layout and Debian's, as the authority's lease-scoped expire", () => {
    for (const line of [
      '2026-12-01T10:28:53.468+0000 [SessionTracker] INFO  org.apache.zookeeper.server.ZooKeeperServer - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded',
      '2026-12-01 10:28:53,468 - INFO  [SessionTracker:ZooKeeperServer@398] - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded',
      '2026-12-01 10:28:53,468 [myid:1] - INFO  [SessionTracker:o.a.z.s.ZooKeeperServer@632] - Expiring session 0x10000571c0c0000, timeout of 800ms exceeded',
    ]) {
      expect(read(line), line).toMatchObject({ ts: Date.UTC(2026, 11, 1, 10, 28, 53, 468), type: 'expire', resource: LEASE_SCOPED, leaseId: '0x10000571c0c0000', observer: 'authority', result: 'expired', ownerId: undefined });
    }
    expect(read('2026-12-01 10:28:53,468 - INFO  [ProcessThread(sid:0 cport:2181)::PrepRequestProcessor@700] - forcibly expiring session 0x10000571c0c0000')).toMatchObject({ type: 'expire', leaseId: '0x10000571c0c0000', observer: 'authority' });
    // A late observation of the same expiry is no end of its own (it would move the end later).
    expect(read('2026-12-01T10:28:55.153+0000 [NIOWorkerThread-4] INFO  org.apache.zookeeper.server.ZooKeeperServer - Invalid session 0x10000571c0c0000 for client /127.0.0.1:55870, probably expired')).toBeNull();
    expect(read('2026-12-01T10:28:50.446+0000 [main] INFO  org.apache.zookeeper.server.ZooKeeperServer - Created server with tickTime 200 ms minSessionTimeout 400 ms maxSessionTimeout 4000 ms')).toBeNull();
  });

  it("reads the Java client's and Curator's lines, placing those that name no session or lock on the ones last named in the file", () => {
    const file = '/logs/billing-a.log';
    expect(read('2026-03-01 10:00:01.002 [main] INFO  com.example.billing.InvoiceJob - lock acquired resource=invoices/7 session=0x100000a2b3c0000 czxid=4294967310 ttlMs=10000', file)).toMatchObject({
      type: 'acquire', resource: 'invoices/7', leaseId: '0x100000a2b3c0000', fenceToken: 4294967310n, ttlMs: 10000, ownerId: 'billing-a.log', observer: 'worker',
    });
    const cases: [string, Partial<LockEvent>][] = [
      ['2026-03-01 10:00:03.500 [main-SendThread(zk-1:2181)] WARN  org.apache.zookeeper.ClientCnxn - Client session timed out, have not heard from server in 6671ms for session id 0x100000a2b3c0000', { type: 'keepalive', result: 'failed', resource: 'invoices/7', leaseId: '0x100000a2b3c0000' }],
      ['2026-03-01 10:00:03.501 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: SUSPENDED', { type: 'keepalive', result: 'failed', resource: 'invoices/7', leaseId: '0x100000a2b3c0000' }],
      ['2026-03-01 10:00:04.100 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: RECONNECTED', { type: 'keepalive', result: 'ok', resource: 'invoices/7' }],
      ['2026-03-01 10:00:13.510 [Curator-ConnectionStateManager-0] WARN  org.apache.curator.framework.state.ConnectionStateManager - Session timeout has elapsed while SUSPENDED. Injecting a session expiration. Elapsed ms: 10009. Adjusted session timeout ms: 10000', { type: 'expire', resource: LEASE_SCOPED, leaseId: '0x100000a2b3c0000' }],
      ['2026-03-01 10:00:13.514 [main-EventThread] WARN  org.apache.curator.ConnectionState - Session expired event received', { type: 'expire', resource: LEASE_SCOPED, leaseId: '0x100000a2b3c0000' }],
      ['2026-03-01 10:00:13.520 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: LOST', { type: 'expire', resource: LEASE_SCOPED, leaseId: '0x100000a2b3c0000' }],
      ['2026-03-01 10:00:21.044 [main-SendThread(zk-2:2181)] WARN  org.apache.zookeeper.ClientCnxn - Unable to reconnect to ZooKeeper service, session 0x100000a2b3c0000 has expired', { type: 'expire', resource: LEASE_SCOPED, leaseId: '0x100000a2b3c0000' }],
    ];
    for (const [line, want] of cases) expect(read(line, file), line).toMatchObject({ ...want, observer: 'worker' });
    expect(read('2026-03-01 10:00:00.480 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: CONNECTED', file)).toBeNull();
    // Nothing named yet in this file: Curator's line cannot be placed, and says so.
    expect(read('2026-03-01 10:00:03.501 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: SUSPENDED', '/logs/fresh.log')).toMatch(/no resource/);
  });

  it('reads JSON worker lines with the app-json fields, the session as the lease and czxid as the token', () => {
    const rec = zk.parseLine!('{"level":30,"time":1796140989655,"pid":1,"hostname":"worker-a","worker":"worker-a","resource":"invoices/7","session":"01000116ad2c0000","event":"acquire","czxid":"5","ttlMs":800,"msg":"lock acquired"}') as Record<string, unknown>;
    expect(zk.toEvent(rec, origin('/logs/worker-a.log'))).toMatchObject({ type: 'acquire', leaseId: '0x1000116ad2c0000', fenceToken: 5n, ownerId: 'worker-a', source: 'worker-a', ttlMs: 800 });
  });

  it('auto picks it for a Java logging line', () => {
    expect(detectProfile('2026-12-01T10:28:50.189+0000 [main] INFO  org.apache.zookeeper.jmx.ManagedUtil - Log4j 1.2 jmx support found and enabled.')).toBe('zookeeper');
    expect(detectProfile('2026-12-01 10:28:50,189 - INFO  [main:QuorumPeerConfig@174] - Reading configuration from: /etc/zookeeper/conf/zoo.cfg')).toBe('zookeeper');
    expect(detectProfile('[2026-12-01 10:28:53,468] INFO starting (kafka.server.KafkaServer)')).toBe('zookeeper');
    expect(detectProfile('time=2024-01-15T10:30:46Z level=info msg="lock acquired"')).toBe('logfmt');
  });
});

describe('lease-scoped events in the engine', () => {
  const T0 = Date.UTC(2026, 2, 1, 10);
  const ev = (i: number, type: LockEvent['type'], extra: Partial<LockEvent>): LockEvent => ({
    ts: T0 + i * 1000, type, resource: 'r1', result: type === 'acquire' ? 'granted' : type === 'write' ? 'accepted' : type === 'expire' ? 'expired' : 'released', observer: 'worker', source: 'w', file: 'w.log', line: i, ...extra,
  });
  const story = (): LockEvent[] => [
    ev(1, 'acquire', { resource: 'r1', leaseId: 'S1', fenceToken: 5n }),
    ev(2, 'acquire', { resource: 'r2', leaseId: 'S1', fenceToken: 6n }),
    ev(3, 'acquire', { resource: 'r3', leaseId: 'S1', fenceToken: 7n }),
    ev(4, 'release', { resource: 'r3', leaseId: 'S1' }), // r3's lock released before the session ends
    ev(5, 'acquire', { resource: 'r4', leaseId: 'S2', fenceToken: 8n }),
    { ...ev(6, 'expire', { resource: LEASE_SCOPED, leaseId: 'S1', observer: 'authority' }), file: 'zk.log', source: 'zk.log', line: 9 },
    ev(7, 'write', { resource: 'r1', leaseId: 'S1', fenceToken: 5n }),
    ev(8, 'write', { resource: 'r2', leaseId: 'S1', fenceToken: 6n }),
    ev(9, 'write', { resource: 'r4', leaseId: 'S2', fenceToken: 8n }),
    { ...ev(10, 'expire', { resource: LEASE_SCOPED, leaseId: 'S9', observer: 'authority' }), file: 'zk.log', source: 'zk.log', line: 10 },
  ];

  for (const leaseScoped of [true, false]) {
    it(`ends the session's lease on each resource it still holds, and nowhere else (${leaseScoped ? 'with' : 'without'} the lease index)`, () => {
      const engine = new Engine({ rules, leaseScoped });
      for (const e of story()) engine.push(e);
      engine.finish();
      const after = engine.findings.filter((f) => f.rule === 'write-after-lease-end');
      expect(after.map((f) => f.resource).sort()).toEqual(['r1', 'r2']);
      for (const f of after) expect(f.evidence.find((e) => e.role.startsWith('lease ended'))).toMatchObject({ file: 'zk.log', line: 9, type: 'expire', observer: 'authority' });
      expect(engine.timeline('r3')!.findLease({ leaseId: 'S1' } as LockEvent)!.endKind).toBe('release');
      expect(engine.timeline('r4')!.findLease({ leaseId: 'S2' } as LockEvent)!.end).toBeUndefined();
      expect(engine.timeline('')).toBeUndefined(); // no resource of its own
      expect([engine.leaseScopedEvents, engine.leaseScopedApplied]).toEqual([2, 1]);
      expect(engine.resourceCount).toBe(4);
    });
  }

  it('parsing worker threads hand lease-scoped events over as the main thread reads them', async () => {
    const dir = join(ROOT, 'fixtures', 'profiles', 'zookeeper', 'reproduction');
    const files = ['worker-a.log', 'worker-b.log', 'zookeeper.log'].map((f) => join(dir, f));
    const shape = (r: Awaited<ReturnType<typeof analyze>>) => r.findings.map((f) => [f.rule, f.certainty, f.evidence.map((e) => `${basename(e.file)}:${e.line}:${e.type}`).join(' ')]);
    const [off, on] = await Promise.all(['off', 'on'].map((workers) => analyze({ files, profile: getProfile('zookeeper'), workers: workers as 'on' | 'off' })));
    expect(shape(on)).toEqual(shape(off));
    expect(shape(off).find((f) => f[0] === 'accepted-stale-write')![2]).toContain('zookeeper.log:95:expire');
  });

  it('says so when no lease-scoped event found a lease, and not otherwise', async () => {
    const recs = (session: string) => [
      { ts: '2026-03-01T10:00:01Z', type: 'acquire', resource: 'r', leaseId: 'S1', fenceToken: 1 },
      { ts: '2026-03-01T10:00:02Z', type: 'expire', lease: session },
      { ts: '2026-03-01T10:00:03Z', type: 'write', resource: 'r', leaseId: 'S1', fenceToken: 1, result: 'accepted' },
    ];
    const profile = compileMapping({ match: [{ when: { type: 'acquire' }, type: 'acquire' }, { when: { type: 'write' }, type: 'write' }, { when: { type: 'expire' }, type: 'expire', scope: 'lease' }], fields: { leaseId: ['leaseId', 'lease'] } }, 'm.json');
    const miss = await analyze({ events: recs('0x1'), profile });
    expect(miss.summary.reasons.map((r) => r.id)).toContain('unmatched-lease-ends');
    expect(miss.summary.reasons.find((r) => r.id === 'unmatched-lease-ends')!.message).toMatch(/^none of 1 lease-scoped event .*found a live lease/);
    expect(miss.findings).toEqual([]);
    const hit = await analyze({ events: recs('S1'), profile });
    expect(hit.summary.reasons.map((r) => r.id)).not.toContain('unmatched-lease-ends');
    expect(hit.findings.map((f) => f.rule)).toEqual(['write-after-lease-end']);
    expect(hit.resources.map((r) => r.resource)).toEqual(['r']);
  });

  it('the lease index is bounded: past its size the leases granted longest ago are forgotten, and counted', () => {
    const h = new LeaseHolders(3);
    h.add('S1', 'a');
    h.add('S1', 'b');
    h.add('S1', 'b');
    h.add('S2', 'c');
    expect(h.size).toBe(3);
    expect(h.resources('S1')).toEqual(['a', 'b']);
    h.add('S3', 'd'); // S1 (two pairs) goes
    expect(h.resources('S1')).toEqual([]);
    expect([h.size, h.forgotten]).toEqual([2, 2]);
    h.add('S2', 'e');
    h.delete('S2', 'c');
    expect(h.resources('S2')).toEqual(['e']);
    h.delete('S2', 'e');
    h.delete('S2', 'e');
    expect(h.size).toBe(1);
    expect(() => new Engine({ rules, maxLeaseHolders: 0 })).toThrow(/maxLeaseHolders must be a whole number ≥ 1/);
  });
});
