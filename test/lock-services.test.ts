/**
 * The README's "Lock services" section cannot drift: its table has a row per service, each row
 * with a reproduction links to it, its links resolve, every log line it cites (ZooKeeper's
 * session expiry, Curator's state changes, client-go's lease lines in both styles, the Redis
 * lines, Consul's session expiry) is a line of a fixture and reads as the section says, and the
 * Consul mapping example gives the findings its expectation names.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analysisOptions, findCases, readExpectation, runCase } from '../src/check/cases.js';
import { section } from '../src/cli/explain.js';
import { LEASE_SCOPED, type LockEvent } from '../src/model/event.js';
import { getProfile, loadMapping } from '../src/profiles/index.js';
import { klogParser } from '../src/profiles/parsers.js';
import type { Profile } from '../src/profiles/types.js';
import { FIXTURES, ROOT } from './helpers/run.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const lockServices = section(readme, 'Lock services') ?? '';
/** The part of the section from `#### from` up to the next `####` heading. */
const part = (from: string) => {
  const start = lockServices.indexOf(`#### ${from}`);
  expect(start, from).toBeGreaterThan(-1);
  const end = lockServices.indexOf('\n#### ', start + 1);
  return lockServices.slice(start, end === -1 ? undefined : end);
};

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));

interface ReadLine {
  file: string;
  text: string;
  /** What the case's profile made of the line, read in its file's order (carried fields and all). */
  read: LockEvent | string | null;
}

/**
 * Every non-blank line of the fixture cases under `dir`, each read by its case's profile (with the
 * case's options: klog year and zone, log4j zone) in file order, as an analysis reads it.
 */
function readCases(dir: string, skip: RegExp = /$^/): ReadLine[] {
  const out: ReadLine[] = [];
  for (const c of findCases([dir])) {
    if (skip.test(c.name)) continue;
    const chosen = analysisOptions(c, readExpectation(c.expectPath)).profile!;
    for (const file of c.files) {
      const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
      const profile: Profile = chosen.detect === undefined ? chosen : chosen.detect(lines[0]!);
      lines.forEach((text, i) => {
        const rec = profile.parseLine === undefined ? (JSON.parse(text) as Record<string, unknown>) : profile.parseLine(text);
        const read = typeof rec === 'string' ? rec : profile.toEvent(rec, { file, line: i + 1, source: basename(file), text });
        out.push({ file, text, read });
      });
    }
  }
  return out;
}

/** The fixture lines that `match` finds, read; at least one. */
function linesFor(lines: readonly ReadLine[], match: (text: string) => boolean, what: string): ReadLine[] {
  const found = lines.filter((l) => match(l.text));
  expect(found.length, `no fixture line for ${what}`).toBeGreaterThan(0);
  return found;
}

type Want = { type: LockEvent['type']; result?: string; observer?: string; leaseScoped?: boolean } | 'no event';

function expectRead(l: ReadLine, want: Want, what: string): void {
  const where = `${what} (${l.file}: ${l.text})`;
  if (want === 'no event') {
    expect(l.read, where).toBeNull();
    return;
  }
  expect(typeof l.read, `${where}: ${String(l.read)}`).toBe('object');
  const ev = l.read as LockEvent;
  expect(ev.type, where).toBe(want.type);
  if (want.result !== undefined) expect(ev.result, where).toBe(want.result);
  if (want.observer !== undefined) expect(ev.observer, where).toBe(want.observer);
  if (want.leaseScoped !== undefined) expect(ev.resource === LEASE_SCOPED, where).toBe(want.leaseScoped);
}

const tableRows = (md: string, header: string) => {
  const lines = md.split('\n');
  const at = lines.findIndex((l) => l.startsWith(header));
  expect(at, header).toBeGreaterThan(-1);
  const rows: string[][] = [];
  for (let i = at + 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!.slice(1, -1).split(' | ').map((c) => c.trim()));
  return rows;
};
const backticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

describe('README: Lock services', () => {
  const rows = lockServices.split('\n').filter((l) => l.startsWith('| **'));

  it('has a row for etcd, ZooKeeper/Curator, Redis/Redlock, Consul and Kubernetes Leases, with five columns', () => {
    expect(rows.map((r) => /^\| \*\*([^*]+)\*\*/.exec(r)![1])).toEqual(['etcd v3', 'ZooKeeper / Curator', 'Redis / Redlock', 'Consul sessions', 'Kubernetes Lease']);
    for (const r of rows) expect(r.split(' | ').length, r.slice(0, 40)).toBe(5);
    const header = lockServices.split('\n').find((l) => l.startsWith('| service'))!;
    expect(header).toBe('| service | logs by itself | fencing token | the application must log | read by |');
  });

  it('links each row to its reproduction, or to what reads its lines, and names the service its profile or mapping declares', () => {
    // The three reproductions, first thing in their rows.
    expect(rows[0]).toMatch(/^\| \*\*etcd v3\*\* \(\[reproduction\]\(examples\/etcd-postgres\/\)\)/);
    expect(rows[1]).toMatch(/^\| \*\*ZooKeeper \/ Curator\*\* \(\[reproduction\]\(examples\/zookeeper-postgres\/\)\)/);
    expect(rows[2]).toMatch(/^\| \*\*Redis \/ Redlock\*\* \(\[reproduction\]\(examples\/redis-postgres\/\)\)/);
    // What reads each service's lines.
    expect(rows[0]).toContain('(examples/etcd-postgres/mapping.json)');
    expect(rows[1]).toContain('`--profile zookeeper` ([fixtures](fixtures/profiles/zookeeper/)');
    expect(rows[2]).toContain('(examples/redis-postgres/mapping.json)');
    expect(rows[3]).toContain('(examples/mapping/consul.json)');
    expect(rows[3]).toContain('(examples/mapping/consul/)');
    expect(rows[4]).toContain('`--profile k8s-leaderelection` ([fixtures](fixtures/profiles/k8s/)');
    // The services they declare, as the table says.
    const declared: [string, string | undefined][] = [
      [rows[1]!, getProfile('zookeeper').service],
      [rows[2]!, loadMapping(join(ROOT, 'examples/redis-postgres/mapping.json')).service],
      [rows[3]!, loadMapping(join(ROOT, 'examples/mapping/consul.json')).service],
      [rows[4]!, getProfile('k8s-leaderelection').service],
    ];
    expect(declared.map(([, s]) => s)).toEqual(['zookeeper', 'redis', 'consul', 'kubernetes']);
    for (const [row, service] of declared) expect(row).toContain(`"service": "${service}"`);
  });

  it('links only to files that exist', () => {
    const links = [...lockServices.matchAll(/\]\(((?:examples|fixtures)\/[^)#]*)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(10);
    for (const l of links) expect(existsSync(join(ROOT, l)), l).toBe(true);
    expect(links).toEqual(expect.arrayContaining(['examples/zookeeper-postgres/', 'fixtures/profiles/zookeeper/', 'fixtures/profiles/zookeeper/curator/']));
  });

  describe('every line it cites is a line of a fixture, and reads as it says', () => {
    const zk = readCases(join(FIXTURES, 'profiles', 'zookeeper'));

    it("ZooKeeper: the server's session expiry, verbatim from a real run, is the authority's lease-scoped expire of the session the worker logged in its own spelling", () => {
      const text = part('ZooKeeper server and Curator');
      const quoted = backticked(text).filter((q) => / - Expiring session 0x/.test(q));
      expect(quoted).toHaveLength(1);
      const [line] = linesFor(zk, (t) => t === quoted[0], quoted[0]!);
      expectRead(line!, { type: 'expire', result: 'expired', observer: 'authority', leaseScoped: true }, quoted[0]!);
      const session = (line!.read as LockEvent).leaseId!;
      expect(quoted[0]).toContain(`Expiring session ${session},`);
      // The client's spelling the section quotes is the worker's, in the same run, normalised alike.
      const client = /printed the same session as `([0-9a-f]{16})`/.exec(text)![1]!;
      const worker = linesFor(zk, (t) => t.includes(`"session":"${client}"`), client);
      for (const w of worker) expect((w.read as LockEvent).leaseId).toBe(session);
    });

    it("Curator: SUSPENDED, RECONNECTED and LOST read as the section says; CONNECTED and READ_ONLY are no events", () => {
      const text = part('ZooKeeper server and Curator');
      const says: [string, Want][] = [
        ['SUSPENDED', { type: 'keepalive', result: 'failed', observer: 'worker' }],
        ['RECONNECTED', { type: 'keepalive', result: 'ok', observer: 'worker' }],
        ['LOST', { type: 'expire', observer: 'worker', leaseScoped: true }],
        ['CONNECTED', 'no event'],
      ];
      for (const [state, want] of says) {
        expect(text).toContain(want === 'no event' ? `\`${state}\`` : `\`State change: ${state}\``);
        for (const l of linesFor(zk, (t) => t.endsWith(`ConnectionStateManager - State change: ${state}`), state)) expectRead(l, want, state);
      }
      // READ_ONLY is in no fixture: a line of it is no event either.
      expect(text).toContain('`READ_ONLY` are no events');
      const p = getProfile('zookeeper', { log4j: { zone: 'Z' } });
      const ro = '2026-03-01 10:00:04.100 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: READ_ONLY';
      expect(p.toEvent(p.parseLine!(ro) as Record<string, unknown>, { file: 'a.log', line: 1, source: 'a.log', text: ro })).toBeNull();
    });

    it('the zookeeper profile section: every line of its table is in a fixture and reads as that table says', () => {
      const zkSection = readme.slice(readme.indexOf('### ZooKeeper and Curator'), readme.indexOf('**app-json aliases**'));
      const table = tableRows(zkSection, '| line | source | event |');
      expect(table.length).toBe(9);
      let previous: Want | undefined;
      for (const [cell, , event] of table) {
        const line = backticked(cell!)[0]!;
        const e = event!;
        const want: Want =
          e === 'the same'
            ? previous!
            : /^`expire`, authority/.test(e)
              ? { type: 'expire', observer: 'authority', leaseScoped: true }
              : /^`expire`, worker/.test(e)
                ? { type: 'expire', observer: 'worker' }
                : /^`keepalive`, `failed`/.test(e)
                  ? { type: 'keepalive', result: 'failed', observer: 'worker' }
                  : /^`keepalive` \(`ok`/.test(e)
                    ? { type: 'keepalive', result: 'ok', observer: 'worker' }
                    : (() => {
                        throw new Error(`unknown event column: ${e}`);
                      })();
        previous = want;
        for (const l of linesFor(zk, (t) => t.includes(line), line)) expectRead(l, want, line);
      }
    });

    it('client-go, printf style (up to v0.34) and structured (from v0.35): every message of the table is in a fixture and reads as its row says', () => {
      const k8s = readCases(join(FIXTURES, 'profiles', 'k8s'), /docker-json-file/);
      const text = part('Kubernetes client-go leader election');
      const table = tableRows(text, '| `--profile k8s-leaderelection` reads it as |');
      expect(table.length).toBe(7);
      let printf = 0;
      let structured = 0;
      for (const [readsAs, v034, v035] of table) {
        const r = readsAs!;
        const want: Want = r.startsWith('not an event')
          ? 'no event'
          : r.startsWith('acquire, busy')
            ? { type: 'acquire', result: 'busy' }
            : r.startsWith('acquire')
              ? { type: 'acquire', result: 'granted' }
              : r.startsWith('keepalive')
                ? { type: 'keepalive', result: 'ok' }
                : { type: 'expire', result: 'expired' };
        for (const format of backticked(v034!)) {
          printf++;
          const re = new RegExp(`\\] ${format.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%v/g, '.+?')}$|"msg":"${format.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%v/g, '[^"]+?')}"`);
          for (const l of linesFor(k8s, (t) => re.test(t), format)) expectRead(l, want, format);
        }
        for (const msg of backticked(v035!).filter((m) => m.startsWith('"'))) {
          structured++;
          for (const l of linesFor(k8s, (t) => t.includes(`] ${msg}`) || t.includes(`"msg":${msg}`), msg)) expectRead(l, want, msg);
        }
      }
      expect([printf, structured]).toEqual([8, 8]);
    });

    it("client-go: the quoted klog text and JSON lines are fixture lines, in both styles, and each reads as an event", () => {
      const k8s = readCases(join(FIXTURES, 'profiles', 'k8s'), /docker-json-file/);
      const blocks = [...part('Kubernetes client-go leader election').matchAll(/```(text|json)\n([\s\S]*?)```/g)].map((m) => m[2]!.trim().split('\n'));
      expect(blocks.length).toBe(2);
      for (const block of blocks) {
        // Each block has a printf-style line and a structured one.
        expect(block.some((l) => /\] [a-z]|"msg":"[a-z]/.test(l)), block[0]).toBe(true);
        expect(block.some((l) => /\] "[A-Z]|"msg":"[A-Z]/.test(l)), block[0]).toBe(true);
        for (const line of block) {
          const [l] = linesFor(k8s, (t) => t === line, line);
          expect(typeof l!.read, line).toBe('object');
          expect(l!.read).not.toBeNull();
        }
      }
      // As klogParser reads a quoted line on its own, too.
      const profile = getProfile('k8s-leaderelection', { klog: { year: 2026 } });
      const parse = klogParser({ year: 2026 });
      for (const line of blocks.flat()) expect(profile.toEvent(parse(line) as Record<string, unknown>, { file: 'kcm.log', line: 1, source: 'kcm.log', text: line }), line).toBeTypeOf('object');
    });

    it("Redis: the keyspace expiry as the subscriber logs it, and node-redlock's refusal, read by the reproduction's mapping", () => {
      const redis = part('Redis');
      const quoted = [...redis.matchAll(/`(\{"level".*?\})`/g)].map((m) => m[1]!);
      expect(quoted).toHaveLength(2);
      const fixtureLines = new Set(filesUnder(join(FIXTURES, 'profiles', 'redis')).filter((f) => f.endsWith('.log')).flatMap((f) => readFileSync(f, 'utf8').split('\n')));
      const mapping = loadMapping(join(ROOT, 'examples/redis-postgres/mapping.json'));
      const read = quoted.map((l) => {
        expect(fixtureLines.has(l), l).toBe(true);
        return mapping.toEvent(JSON.parse(l) as Record<string, unknown>, { file: 'x.log', line: 1, source: 'x.log', text: l }) as { type: string; result: string; observer: string; leaseId?: string };
      });
      expect(read.map((e) => [e.type, e.result, e.observer])).toEqual([
        ['expire', 'expired', 'authority'],
        ['release', 'rejected', 'worker'],
      ]);
      expect(read[0]!.leaseId).toBeUndefined(); // the notification names the key only
      expect(redis).toContain('`Unable to fully release the lock on resource "invoices/7".`');
    });

    it("Consul: the leader's Session TTL expired, as hclog JSON writes it, is the example's server log and the authority's lease-scoped expire of that session", () => {
      const consul = part('Consul');
      const server = readFileSync(join(ROOT, 'examples/mapping/consul/consul-server.log'), 'utf8').trim().split('\n');
      const quoted = /`(\{"@level":"debug","@message":"Session TTL expired"[^`]*\})`/.exec(consul)![1]!;
      expect(server).toContain(quoted);
      // hclog's JSON format: keys sorted, the logger named agent.server, the session only. Its text form is quoted too.
      for (const l of server) expect(Object.keys(JSON.parse(l) as object)).toEqual(['@level', '@message', '@module', '@timestamp', 'session']);
      expect(consul).toContain('`2026-03-01T10:30:25.009Z [DEBUG] agent.server: Session TTL expired: session=5d3f9c1e-7a2b-4e60-9c4d-2b8e1f0a6c37`');
      expect(consul).toContain('`s.logger.Debug("Session TTL expired", "session", id)`');
      const mapping = loadMapping(join(ROOT, 'examples/mapping/consul.json'));
      for (const l of server) {
        const ev = mapping.toEvent(JSON.parse(l) as Record<string, unknown>, { file: 'consul-server.log', line: 1, source: 'consul-server.log', text: l }) as LockEvent;
        expect(ev).toMatchObject({ type: 'expire', result: 'expired', observer: 'authority', resource: LEASE_SCOPED, leaseId: (JSON.parse(l) as { session: string }).session });
        expect(ev.ownerId).toBeUndefined();
      }
    });
  });

  it("the Consul example: LockIndex fences one key (verified) and the plain UPDATE on the other is a stale write, with the late writer's lease ended by the server's own line", async () => {
    const [c] = findCases([join(ROOT, 'examples', 'mapping', 'consul')]);
    expect(c).toBeDefined();
    const result = await runCase(c!);
    expect(result.diffs).toEqual([]);
    const byResource = Object.fromEntries(result.report.resources.map((r) => [r.resource, r.readiness]));
    expect(byResource).toEqual({ 'locks/invoices/export': 'verified', 'locks/reports/daily': 'violated' });
    expect(result.report.findings.map((f) => `${f.rule} ${f.resource}`).sort()).toEqual([
      'accepted-stale-write locks/reports/daily',
      'keepalive-gap locks/invoices/export',
      'keepalive-gap locks/reports/daily',
    ]);
    const stale = result.report.findings.find((f) => f.rule === 'accepted-stale-write')!;
    const end = stale.evidence.find((e) => e.role.startsWith("late writer's lease ended"))!;
    expect(end).toMatchObject({ line: 2, observer: 'authority', type: 'expire', leaseId: 'b07e2a91-3c5d-4f18-a6e2-9d41c7f30b58' });
    expect(basename(end.file)).toBe('consul-server.log');
    expect(end.inferred).toBeUndefined();
    expect(result.report.summary.reasons.map((r) => r.id)).not.toContain('unmatched-lease-ends');
    // The README names the command that reproduces it.
    expect(lockServices).toContain('stalewrite analyze --mapping examples/mapping/consul.json examples/mapping/consul/*.log');
  });
});
