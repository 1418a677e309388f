/**
 * The lock-service declaration: a mapping's (or a profile's) `service` is a fact about each input
 * it reads. Findings of rules that know the service's own case say it (missing-token: a Redis lock
 * value is no fencing token; stale-release: what a Redis or etcd release must compare); without
 * the declaration, no message names a service. The events themselves never carry it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze, canonical, SERVICE_IDS, SERVICES } from '../src/index.js';
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
