/**
 * The README's "Lock services" section cannot drift: its table has a row per service, its links
 * resolve, the log lines it quotes are lines of the fixtures and read as it says, and the Consul
 * mapping example gives the findings its expectation names.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCases, runCase } from '../src/check/cases.js';
import { section } from '../src/cli/explain.js';
import { getProfile, loadMapping } from '../src/profiles/index.js';
import { klogParser } from '../src/profiles/parsers.js';
import { FIXTURES, ROOT } from './helpers/run.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const lockServices = section(readme, 'Lock services') ?? '';

/** Reproductions built in parallel branches (issue 15): linked before they land. */
const BEING_BUILT = ['examples/zookeeper-postgres/'];

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));

describe('README: Lock services', () => {
  it('has a row for etcd, ZooKeeper/Curator, Redis/Redlock, Consul and Kubernetes Leases, with five columns', () => {
    const rows = lockServices.split('\n').filter((l) => l.startsWith('| **'));
    expect(rows.map((r) => /^\| \*\*([^*]+)\*\*/.exec(r)![1])).toEqual(['etcd v3', 'ZooKeeper / Curator', 'Redis / Redlock', 'Consul sessions', 'Kubernetes Lease']);
    for (const r of rows) expect(r.split(' | ').length, r.slice(0, 40)).toBe(5);
    const header = lockServices.split('\n').find((l) => l.startsWith('| service'))!;
    expect(header).toBe('| service | logs by itself | fencing token | the application must log | read by |');
    // The rows with a reproduction link to it.
    expect(rows[0]).toContain('(examples/etcd-postgres/)');
    expect(rows[1]).toContain('(examples/zookeeper-postgres/)');
    expect(rows[2]).toContain('(examples/redis-postgres/)');
    expect(rows[3]).toContain('(examples/mapping/consul.json)');
    expect(rows[4]).toContain('`--profile k8s-leaderelection`');
  });

  it('links only to files that exist (or to the reproductions being built beside it)', () => {
    const links = [...lockServices.matchAll(/\]\(((?:examples|fixtures)\/[^)#]*)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(8);
    for (const l of links) if (!BEING_BUILT.includes(l) || existsSync(join(ROOT, l))) expect(existsSync(join(ROOT, l)), l).toBe(true);
  });

  it('quotes client-go lines that are lines of the k8s fixtures, and the profile reads each as an event', () => {
    const blocks = [...lockServices.matchAll(/```(text|json)\n([\s\S]*?)```/g)].map((m) => m[2]!.trim().split('\n'));
    expect(blocks.length).toBe(2);
    const fixtureLines = new Set(
      filesUnder(join(FIXTURES, 'profiles', 'k8s'))
        .filter((f) => f.endsWith('.log'))
        .flatMap((f) => readFileSync(f, 'utf8').split('\n')),
    );
    const profile = getProfile('k8s-leaderelection', { klog: { year: 2026 } });
    const parse = klogParser({ year: 2026 });
    for (const line of blocks.flat()) {
      expect(fixtureLines.has(line), line).toBe(true);
      const ev = profile.toEvent(parse(line) as Record<string, unknown>, { file: 'kcm.log', line: 1, source: 'kcm.log', text: line });
      expect(typeof ev, line).toBe('object');
      expect(ev).not.toBeNull();
    }
  });

  it('quotes the Redis lines (keyspace expiry, node-redlock\'s refusal) that the Redis fixtures hold, and the mapping reads them as it says', () => {
    const redis = lockServices.slice(lockServices.indexOf('#### Redis'), lockServices.indexOf('#### Consul'));
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

  it('quotes the Consul server line that the example log holds, and the mapping leaves it ignored', () => {
    const server = readFileSync(join(ROOT, 'examples/mapping/consul/consul-server.log'), 'utf8').trim().split('\n');
    const quoted = /`(\{"@level":"debug","@message":"Session TTL expired"[^`]*\})`/.exec(lockServices)![1]!;
    expect(server).toContain(quoted);
    // As hclog's JSON format writes it: keys sorted, the logger named agent.server, the session only.
    for (const l of server) expect(Object.keys(JSON.parse(l) as object)).toEqual(['@level', '@message', '@module', '@timestamp', 'session']);
    const mapping = loadMapping(join(ROOT, 'examples/mapping/consul.json'));
    for (const l of server) expect(mapping.toEvent(JSON.parse(l) as Record<string, unknown>, { file: 'consul-server.log', line: 1, source: 'consul-server.log', text: l })).toBeNull();
  });

  it('the Consul example: LockIndex fences one key (verified) and the plain UPDATE on the other is a stale write', async () => {
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
    // The README names the command that reproduces it.
    expect(lockServices).toContain('stalewrite analyze --mapping examples/mapping/consul.json examples/mapping/consul/*.log');
  });
});
