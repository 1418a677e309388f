/**
 * The lock-service declaration: a mapping's (or a profile's) `service` is a fact about each input
 * it reads. Findings of rules that know the service's own case say it (missing-token: a Redis lock
 * value is no fencing token; stale-release: what a Redis or etcd release must compare); without
 * the declaration, no message names a service. The events themselves never carry it.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, canonical, SERVICE_IDS, SERVICES } from '../src/index.js';
import { getProfile } from '../src/profiles/index.js';
import { compileMapping, MappingError } from '../src/profiles/mapping.js';
import { rules } from '../src/rules/index.js';
import { renderExplain } from '../src/cli/explain.js';
import type { Report } from '../src/model/report.js';
import { FIXTURES, ROOT, runCli } from './helpers/run.js';

const NAMES = new RegExp(Object.values(SERVICES).map((s) => s.name).join('|'), 'i');
const REDIS_CASE = 'a Redis lock value is random and can only be compared for equality; it is not a fencing token';
const MAPPING = JSON.parse(readFileSync(join(ROOT, 'examples', 'redis-postgres', 'mapping.json'), 'utf8')) as Record<string, unknown>;
const RANDOM = join(FIXTURES, 'profiles', 'redis', 'random');
const UNSAFE = join(FIXTURES, 'profiles', 'redis', 'unsafe-release');
const logs = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.log')).sort().map((f) => join(dir, f));

function mapping(service: string | undefined) {
  const spec: Record<string, unknown> = { ...MAPPING };
  if (service === undefined) delete spec.service;
  else spec.service = service;
  return compileMapping(spec, 'redis-mapping');
}

const tmp = mkdtempSync(join(tmpdir(), 'stalewrite-services-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
/** Files of `name → lines` in a throwaway directory. */
function files(set: Record<string, string[]>): string[] {
  return Object.entries(set).map(([name, lines]) => {
    const f = join(tmp, name);
    writeFileSync(f, lines.join('\n') + '\n');
    return f;
  });
}

const messages = (r: Report, rule: string) => r.findings.filter((f) => f.rule === rule).map((f) => ({ id: f.messageId, message: f.message }));

describe('lock service declaration', () => {
  it('the schemas list exactly the known services', () => {
    for (const [file, at] of [['mapping.schema.json', (s: any) => s.properties.service.enum], ['report.schema.json', (s: any) => s.definitions.fileSummary?.properties.service.enum ?? findService(s)]] as const) {
      const schema = JSON.parse(readFileSync(join(ROOT, 'schema', file), 'utf8'));
      expect(at(schema), file).toEqual([...SERVICE_IDS]);
    }
  });

  it('no generic message template names a service; the service variants take the service from data', () => {
    for (const rule of rules) {
      for (const [id, template] of Object.entries(rule.messages)) expect(template, `${rule.meta.id}/${id}`).not.toMatch(NAMES);
    }
  });

  it('a mapping that declares "service": "redis" makes missing-token say the Redis lock value is no fencing token; without it the message is generic', async () => {
    const declared = await analyze({ files: logs(RANDOM), profile: mapping('redis'), workers: 'off' });
    expect(declared.input.files.map((f) => f.service)).toEqual(['redis', 'redis', 'redis']);
    const withService = messages(declared, 'missing-token');
    expect(withService).toHaveLength(2);
    for (const m of withService) {
      expect(m.id).toBe('missing-token/noTokenService');
      expect(m.message).toContain(REDIS_CASE);
    }
    const generic = await analyze({ files: logs(RANDOM), profile: mapping(undefined), workers: 'off' });
    expect(generic.input.files.every((f) => f.service === undefined)).toBe(true);
    expect(messages(generic, 'missing-token').map((m) => m.id)).toEqual(['missing-token/noToken', 'missing-token/noToken']);
    for (const f of generic.findings) expect(f.message).not.toMatch(NAMES);
    // The declaration changes words only: the same findings, the same verdict.
    expect(generic.findings.map((f) => [f.rule, f.certainty])).toEqual(declared.findings.map((f) => [f.rule, f.certainty]));
    expect(generic.summary.verdict).toBe(declared.summary.verdict);
    // Parsed on worker threads, the same report.
    const threaded = await analyze({ files: logs(RANDOM), profile: mapping('redis'), workers: 'on' });
    expect(JSON.stringify(threaded)).toBe(JSON.stringify(declared));
  });

  it('stale-release names what a Redis or etcd release must compare; a service with no case of its own keeps the generic message', async () => {
    const redis = await analyze({ files: logs(UNSAFE), profile: mapping('redis') });
    expect(messages(redis, 'stale-release').map((m) => m.id)).toEqual(['stale-release/oldHandleReleasedService']);
    expect(messages(redis, 'stale-release')[0]!.message).toContain(SERVICES.redis.release);
    const etcd = await analyze({ files: logs(UNSAFE), profile: mapping('etcd') });
    expect(messages(etcd, 'stale-release')[0]!.message).toContain(SERVICES.etcd.release);
    const zk = await analyze({ files: logs(UNSAFE), profile: mapping('zookeeper') });
    expect(messages(zk, 'stale-release').map((m) => m.id)).toEqual(['stale-release/oldHandleReleased']);
    expect(messages(zk, 'stale-release')[0]!.message).not.toMatch(NAMES);
  });

  it('a library profile may declare the service too, for canonical events (run on the main thread: its recipe does not carry it)', async () => {
    const events = [
      { ts: '2026-12-01T10:00:00Z', type: 'acquire', resource: 'r', ownerId: 'a', leaseId: 'v1', ttlMs: 1000 },
      { ts: '2026-12-01T10:00:00.5Z', type: 'write', resource: 'r', ownerId: 'a', leaseId: 'v1', result: 'accepted' },
    ];
    const r = await analyze({ events, profile: { ...canonical, service: 'redis' } });
    expect(r.input.files[0]!.service).toBe('redis');
    expect(messages(r, 'missing-token')[0]!.message).toBe(`a wrote without a fencing token and the resource accepted it: ${SERVICES.redis.token}`);
    const f = join(FIXTURES, 'rule-missing-token.ndjson');
    const onThreads = await analyze({ files: [f], profile: { ...canonical, service: 'redis' }, workers: 'on' });
    expect(onThreads.input.files[0]!.service).toBe('redis');
    expect(messages(onThreads, 'missing-token').every((m) => m.id === 'missing-token/noTokenService')).toBe(true);
  });

  it('the built-in zookeeper and k8s-leaderelection profiles declare their services (through auto too)', async () => {
    expect(getProfile('zookeeper').service).toBe('zookeeper');
    expect(getProfile('k8s-leaderelection').service).toBe('kubernetes');
    for (const p of ['app-json', 'logfmt', 'otlp-json', 'canonical'] as const) expect(getProfile(p).service, p).toBeUndefined();
    // A worker's JSON line read by the zookeeper profile: its unfenced write gets ZooKeeper's case.
    const zk = files({
      'zk-worker.log': [
        '{"time":1796140989000,"worker":"worker-a","resource":"invoices/7","session":"01000116ad2c0000","event":"acquire","msg":"lock acquired"}',
        '{"time":1796140989500,"worker":"worker-a","resource":"invoices/7","session":"01000116ad2c0000","rowCount":1,"msg":"write applied"}',
      ],
    });
    const z = await analyze({ files: zk, profile: getProfile('zookeeper') });
    expect(z.input.files.map((f) => f.service)).toEqual(['zookeeper']);
    expect(messages(z, 'missing-token')).toEqual([{ id: 'missing-token/noTokenService', message: `worker-a wrote without a fencing token and the resource accepted it: ${SERVICES.zookeeper.token}` }]);
  });

  it("a write whose own input declares no service takes the service of the input its lease was granted in (a client-go lease, the application's write)", async () => {
    const set = files({
      'runner-a.log': ['I0301 10:00:00.000000       1 leaderelection.go:271] successfully acquired lease kube-system/report-runner'],
      'app.log': ['{"time":"2026-03-01T10:00:01.000Z","msg":"write applied","resource":"kube-system/report-runner","owner":"runner-a.log","rowCount":1}'],
    });
    const r = await analyze({ files: set, profile: getProfile('auto', { klog: { year: 2026 } }) });
    expect(r.input.files.map((f) => [f.profile, f.service])).toEqual([['k8s-leaderelection', 'kubernetes'], ['app-json', undefined]]);
    expect(messages(r, 'missing-token')).toEqual([{ id: 'missing-token/noTokenService', message: `runner-a.log wrote without a fencing token and the resource accepted it: ${SERVICES.kubernetes.token}` }]);
    // A write under no lease of a declaring input stays generic.
    const alone = await analyze({ files: [set[1]!], profile: getProfile('app-json') });
    expect(messages(alone, 'missing-token').map((m) => m.id)).toEqual(['missing-token/noToken']);
    for (const f of alone.findings) expect(f.message).not.toMatch(NAMES);
  });

  it("stale-release too: a release from an input that declares no service takes the service of the input the old handle was granted in", async () => {
    const set = files({
      'grants.ndjson': [
        '{"ts":"2026-03-04T08:30:00.000Z","type":"acquire","resource":"orders/42","ownerId":"worker-a","leaseId":"lease-A","fenceToken":1,"ttlMs":2000}',
        '{"ts":"2026-03-04T08:30:02.000Z","type":"expire","resource":"orders/42","ownerId":"worker-a","leaseId":"lease-A"}',
      ],
      'later.ndjson': [
        '{"ts":"2026-03-04T08:30:02.100Z","type":"acquire","resource":"orders/42","ownerId":"worker-b","leaseId":"lease-B","fenceToken":2,"ttlMs":2000}',
        '{"ts":"2026-03-04T08:30:02.500Z","type":"release","resource":"orders/42","ownerId":"worker-a","leaseId":"lease-A","result":"released"}',
      ],
    });
    // The first input declares etcd, the second nothing.
    const etcd = { ...canonical, service: 'etcd' as const };
    const byFile = { name: 'by-file', detect: (first: string) => (first.includes('"worker-a"') ? etcd : canonical), toEvent: () => null };
    const r = await analyze({ files: set, profile: byFile });
    expect(r.input.files.map((f) => f.service)).toEqual(['etcd', undefined]);
    expect(messages(r, 'stale-release')).toEqual([{ id: 'stale-release/oldHandleReleasedService', message: expect.stringContaining(SERVICES.etcd.release!) as string }]);
    const plain = await analyze({ files: set, profile: canonical });
    expect(messages(plain, 'stale-release').map((m) => m.id)).toEqual(['stale-release/oldHandleReleased']);
  });

  it('an unknown service is refused when the mapping is loaded, naming the known ones', () => {
    expect(() => mapping('memcached')).toThrow(MappingError);
    expect(() => mapping('memcached')).toThrow(/\/service: must be one of "etcd", "zookeeper", "redis", "consul", "kubernetes"/);
  });

  it('explain lists each service\'s case, or one with --service', async () => {
    const all = renderExplain('missing-token');
    expect(all).toContain('noTokenService: {writer} wrote without a fencing token and the resource accepted it: {serviceToken}');
    for (const id of SERVICE_IDS) expect(all).toContain(`  ${id}: {serviceToken} = ${SERVICES[id].token}`);
    const cli = await runCli(['explain', 'missing-token', '--service', 'redis']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`  redis: {serviceToken} = ${SERVICES.redis.token}`);
    expect(cli.stdout).not.toContain('  etcd: {serviceToken}');
    expect(renderExplain('stale-release', 'zookeeper')).toContain('zookeeper: no case of its own for this rule; the generic message is used');
    expect(renderExplain('keepalive-gap')).not.toContain('Lock services');
    const bad = await runCli(['explain', 'missing-token', '--service', 'memcached']);
    expect(bad.code).toBe(2);
  });
});

/** The report schema's input file summary, wherever it is defined. */
function findService(schema: unknown): unknown {
  let found: unknown;
  const walk = (v: unknown): void => {
    if (found !== undefined || v === null || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    const props = o.properties as Record<string, { enum?: unknown }> | undefined;
    if (props?.service?.enum !== undefined && props.sameAs !== undefined) found = props.service.enum;
    for (const k of Object.keys(o)) walk(o[k]);
  };
  walk(schema);
  return found;
}
