/**
 * No silent pass (issue "Real logs, right verdict, first try"): empty input, input with no writes,
 * inconclusive and unconfirmed readiness, the verdict order, exit codes and their opt-outs, and
 * clock domains taken from the logger's host name.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, exitCodeFor, type Report } from '../src/index.js';
import { getProfile } from '../src/profiles/index.js';
import { renderJunit } from '../src/report/junit.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { renderTable } from '../src/report/table.js';
import { runCli } from './helpers/run.js';

const dir = mkdtempSync(join(tmpdir(), 'stalewrite-verdict-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, lines: object[] | string) => {
  const path = join(dir, name);
  writeFileSync(path, typeof lines === 'string' ? lines : lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
};

const T0 = Date.UTC(2026, 2, 1, 10);
const at = (ms: number) => new Date(T0 + ms).toISOString();
type Rec = Record<string, unknown>;

/**
 * The etcd shape in canonical fields written by a pino-like logger: each worker logs its
 * own lock steps and writes in its own file. A holds token 2, pauses past its lease, B takes
 * token 4 and writes, and A's late write comes `lateMs` after B's.
 */
function workers(lateMs: number, hostA: string, hostB: string, lateResult = 'accepted'): { a: Rec[]; b: Rec[] } {
  const base = { level: 30, pid: 1, resource: 'orders/7', observer: 'worker' };
  const ttl = { ttlMs: 2000 };
  const a = [
    { ...base, hostname: hostA, ts: at(0), type: 'acquire', ownerId: 'worker-a', leaseId: 'la', fenceToken: '2', ...ttl },
    { ...base, hostname: hostA, ts: at(5000 + lateMs), type: 'write', ownerId: 'worker-a', leaseId: 'la', fenceToken: '2', result: lateResult },
  ];
  const b = [
    { ...base, hostname: hostB, ts: at(3000), type: 'acquire', ownerId: 'worker-b', leaseId: 'lb', fenceToken: '4', ...ttl },
    { ...base, hostname: hostB, ts: at(5000), type: 'write', ownerId: 'worker-b', leaseId: 'lb', fenceToken: '4', result: 'accepted' },
  ];
  return { a, b };
}

const stale = (r: Report) => r.findings.filter((f) => f.rule === 'accepted-stale-write');

describe('clock domains', () => {
  it('two files written by one host: a stale write 100 ms after the newer one is definite', async () => {
    const { a, b } = workers(100, 'app-1', 'app-1');
    const files = [file('one-host-a.ndjson', a), file('one-host-b.ndjson', b)];
    const r = await analyze({ files });
    expect(stale(r).map((f) => f.certainty)).toEqual(['definite']);
    expect(stale(r)[0]!.uncertainty).toBeUndefined();
    expect(r.summary.verdict).toBe('violated');
    const cli = await runCli(['analyze', '-f', 'json', ...files]);
    expect(cli.code).toBe(1);
  });

  it('the same files from two hosts: possible, inconclusive, and what would decide it', async () => {
    const { a, b } = workers(100, 'app-1', 'app-2');
    const files = [file('two-hosts-a.ndjson', a), file('two-hosts-b.ndjson', b)];
    const r = await analyze({ files });
    const f = stale(r);
    expect(f.map((x) => x.certainty)).toEqual(['possible']);
    expect(f[0]!.uncertainty).toMatchObject({ kind: 'clock-skew', gapMs: 100, clockSkewMs: 250 });
    expect(f[0]!.uncertainty!.between!.map((e) => e.source)).toEqual(['app-2', 'app-1']);
    expect(f[0]!.uncertainty!.decide).toMatch(/100 ms apart in different clock domains \(app-2, app-1\).*clock-skew bound under 100 ms.*one clock domain/);
    expect(r.resources[0]).toMatchObject({ readiness: 'inconclusive' });
    expect(r.resources[0]!.reason).toMatch(/only possible: .*100 ms apart/);
    expect(r.summary.verdict).toBe('inconclusive');
    expect(r.summary.reasons.find((x) => x.id === 'uncertain')).toMatchObject({ resource: 'orders/7', finding: f[0]!.id });

    // CI does not go green on it; each opt-out says what it means.
    const cli = await runCli(['analyze', '-f', 'json', ...files]);
    expect(cli.code).toBe(3);
    expect(cli.stderr).toMatch(/verdict inconclusive: orders\/7 is inconclusive/);
    expect((await runCli(['analyze', '-f', 'json', '--allow-inconclusive', ...files])).code).toBe(0);
    expect((await runCli(['analyze', '-f', 'json', '--include-possible', ...files])).code).toBe(1);
    expect((await runCli(['analyze', '-f', 'json', '--clock-skew', '50ms', ...files])).code).toBe(1);
    expect((await runCli(['analyze', '-f', 'json', '--fail-on', 'none', ...files])).code).toBe(0);

    // Every format tells the same story.
    const table = renderTable(r, { color: false });
    expect(table).toMatch(/^stalewrite: INCONCLUSIVE/);
    expect(table).toMatch(/clock-skew bound under 100 ms/);
    expect(renderMarkdown(r)).toMatch(/# stalewrite report: INCONCLUSIVE[\s\S]*clock-skew bound under 100 ms/);
    const junit = renderJunit(r, { failOn: 'error', includePossible: false });
    expect(junit).toMatch(/<failure type="inconclusive" message="inconclusive: /);
    expect(renderJunit(r, { failOn: 'error', includePossible: false, allowInconclusive: true })).not.toMatch(/<failure/);
  });

  it('the hostname only fills in for a missing source; a bare `host` is not a clock domain', async () => {
    const { a, b } = workers(100, 'app-1', 'app-1');
    const withSource = await analyze({ files: [file('src-a.ndjson', a.map((x) => ({ ...x, source: 'a' }))), file('src-b.ndjson', b.map((x) => ({ ...x, source: 'b' })))] });
    expect(stale(withSource).map((f) => f.certainty)).toEqual(['possible']);
    const host = (x: Rec) => {
      const { hostname, ...rest } = x;
      return { ...rest, host: hostname };
    };
    const bare = await analyze({ files: [file('host-a.ndjson', a.map(host)), file('host-b.ndjson', b.map(host))] });
    expect(stale(bare).map((f) => f.certainty)).toEqual(['possible']);
    // OpenTelemetry's host.name, flat or nested as ECS writes it, is a host like hostname.
    const otel = (nested: boolean) => (x: Rec) => {
      const { hostname, ...rest } = x;
      return nested ? { ...rest, host: { name: hostname } } : { ...rest, 'host.name': hostname };
    };
    for (const nested of [false, true]) {
      const r = await analyze({ files: [file(`otel-${nested}-a.ndjson`, a.map(otel(nested))), file(`otel-${nested}-b.ndjson`, b.map(otel(nested)))] });
      expect(stale(r).map((f) => f.certainty), `nested ${nested}`).toEqual(['definite']);
    }
  });

  it('equal timestamps in two files of one clock domain are ordered only by the merge: not definite', async () => {
    const { a, b } = workers(0, 'app-1', 'app-1');
    const r = await analyze({ files: [file('tie-b.ndjson', b), file('tie-a.ndjson', a)] });
    const f = stale(r);
    expect(f.map((x) => x.certainty)).toEqual(['possible']);
    expect(f[0]!.uncertainty).toMatchObject({ kind: 'same-timestamp', gapMs: 0 });
    expect(f[0]!.uncertainty!.decide).toMatch(/same timestamp in different files .* of one clock domain \(app-1\)/);
    // In one file the order is the file's own: definite.
    const one = await analyze({ files: [file('tie-one.ndjson', [...b, ...a].sort((x, y) => String(x.ts).localeCompare(String(y.ts))))] });
    expect(stale(one).map((x) => x.certainty)).toEqual(['definite']);
  });

  it('app-json and mappings take `hostname` and `host.name` as the clock domain', async () => {
    const { getProfile } = await import('../src/profiles/index.js');
    const { a, b } = workers(100, 'app-1', 'app-1');
    const pino = (x: Rec) => ({ level: 30, time: Date.parse(String(x.ts)), hostname: x.hostname, pid: 7, msg: x.type === 'write' ? 'write' : 'lock acquired', event: x.type, lock: x.resource, worker: x.ownerId, lease: x.leaseId, token: x.fenceToken, ...(x.type === 'write' ? { outcome: x.result } : {}) });
    const files = [file('pino-a.log', a.map(pino)), file('pino-b.log', b.map(pino))];
    const r = await analyze({ files, profile: getProfile('app-json') });
    expect(stale(r).map((f) => f.certainty)).toEqual(['definite']);
    const otel = (x: Rec) => ({ ...pino(x), hostname: undefined, 'host.name': 'node-9' });
    const o = await analyze({ files: [file('otel-a.log', a.map(otel)), file('otel-b.log', b.map(otel))], profile: getProfile('app-json') });
    expect(stale(o).map((f) => f.certainty)).toEqual(['definite']);
  });
});

describe('no silent pass', () => {
  it('input that yields no event exits 2 with the counts, the commonest reasons and what to try', async () => {
    const bad = file('all-invalid.ndjson', Array.from({ length: 24 }, (_, i) => ({ time: at(i), step: 'acquire', lockKey: 'orders/7' })));
    const r = await runCli(['analyze', '-f', 'json', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no events in the input: 24 lines read \(0 blank, 0 ignored, 24 invalid\)/);
    expect(r.stderr).toMatch(/commonest reasons: 24× /);
    expect(r.stderr).toMatch(/--profile auto.*stalewrite map FILE.*mapping/);
    expect(JSON.parse(r.stdout).summary.reasons[0].id).toBe('no-events');
    expect((await runCli(['analyze', '-f', 'json', '--allow-empty', bad])).code).toBe(0);
    // Empty stdin too.
    expect((await runCli(['analyze', '-f', 'json', '-'], { stdin: '' })).code).toBe(2);
    expect((await runCli(['analyze', '-f', 'json', '--allow-empty', '-'], { stdin: '' })).code).toBe(0);
  });

  it('events but no write: the headline says so, and --require-tested fails the run', async () => {
    const locks = file('locks-only.ndjson', [
      { ts: at(0), type: 'acquire', resource: 'orders/7', leaseId: 'la', fenceToken: '2' },
      { ts: at(1000), type: 'release', resource: 'orders/7', leaseId: 'la' },
    ]);
    const r = await analyze({ files: [locks] });
    expect(r.summary.verdict).toBe('untested');
    expect(r.summary.reasons[0]).toMatchObject({ id: 'no-writes', message: expect.stringMatching(/^0 of 2 events are writes: does your profile or mapping map the writes\?/) });
    expect(renderTable(r, { color: false })).toMatch(/^stalewrite: UNTESTED.*\n {2}0 of 2 events are writes/);
    const plain = await runCli(['analyze', '-f', 'json', locks]);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/^stalewrite: warning: 0 of 2 events are writes.*--require-tested fails such a run$/m);
    const req = await runCli(['analyze', '-f', 'json', '--require-tested', locks]);
    expect(req.code).toBe(3);
    expect(req.stderr).toMatch(/verdict untested: 0 of 2 events are writes/);
  });

  it('"-" beside files is read too (the option parser used to drop a lone "-")', async () => {
    const { readFileSync } = await import('node:fs');
    const unsafe = readFileSync('fixtures/article-unsafe.ndjson');
    const r = await runCli(['analyze', '-f', 'json', 'fixtures/article-safe.ndjson', '-'], { stdin: unsafe });
    expect(JSON.parse(r.stdout).input.files.map((f: { file: string }) => f.file)).toEqual(['fixtures/article-safe.ndjson', 'stdin']);
    expect(r.code).toBe(1);
    const map = await runCli(['map', '-n', '1', '-'], { stdin: unsafe });
    expect(map.code).toBe(0);
    expect(map.stdout).toMatch(/"source":"stdin"/);
  });

  it('--rule that names no rule is a usage error, not a run of no rule', async () => {
    for (const rule of ['', ',', ' , ']) {
      const r = await runCli(['analyze', '-f', 'json', '--rule', rule, 'fixtures/article-unsafe.ndjson']);
      expect(r.code, JSON.stringify(rule)).toBe(2);
      expect(r.stderr).toMatch(/--rule names no rule/);
    }
  });

  it('most lines not read as events: said in the headline', async () => {
    const lines = [
      JSON.stringify({ ts: at(0), type: 'write', resource: 'r', fenceToken: '1', result: 'accepted' }),
      ...Array.from({ length: 5 }, () => '{"not":"an event"}'),
    ];
    const f = file('mostly-bad.ndjson', lines.join('\n') + '\n');
    const r = await analyze({ files: [f] });
    expect(r.summary.reasons.map((x) => x.id)).toContain('mostly-unread');
    expect(r.summary.reasons.find((x) => x.id === 'mostly-unread')!.message).toBe(`5 of 6 lines of ${f} were not read as events (0 ignored, 5 invalid): is the profile or mapping right for it? (\`stalewrite map ${f}\`)`);
  });
});

describe('mostly-unread, judged per input', () => {
  const ZK = join(import.meta.dirname, '..', 'fixtures', 'profiles', 'zookeeper', 'reproduction');
  const zkFiles = ['worker-a.log', 'worker-b.log', 'zookeeper.log'].map((f) => join(ZK, f));
  const unread = (r: Report) => r.summary.reasons.find((x) => x.id === 'mostly-unread')?.message;

  it('an input the profile mostly does not read is named, even when the other inputs make up for it in total', async () => {
    const good = file('good.ndjson', Array.from({ length: 10 }, (_, k) => ({ ts: at(k * 100), type: 'write', resource: 'r', fenceToken: String(k + 1), result: 'accepted' })));
    const bad = file('bad.ndjson', [{ ts: at(2000), type: 'write', resource: 'r', fenceToken: '11', result: 'accepted' }, ...Array.from({ length: 4 }, () => ({ msg: 'request finished' }))].map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = await analyze({ files: [good, bad], profile: getProfile('app-json') });
    // 4 of 15 in total: the old total would have said nothing.
    expect(r.input.ignored).toBe(4);
    expect(unread(r)).toBe(`4 of 5 lines of ${bad} were not read as events (4 ignored, 0 invalid): is the profile or mapping right for it? (\`stalewrite map ${bad}\`)`);
    const two = await analyze({ files: [bad, file('bad-2.ndjson', readFileSync(bad, 'utf8'))], profile: getProfile('app-json') });
    expect(unread(two)).toMatch(/^most lines of 2 inputs were not read as events: .*bad\.ndjson \(4 of 5: 4 ignored, 0 invalid\), .*bad-2\.ndjson \(4 of 5: 4 ignored, 0 invalid\): is the profile or mapping right for them\?/);
  });

  it("a ZooKeeper server's own log, mostly start-up chatter, is sparse: a real run's analysis gives no warning", async () => {
    const r = await analyze({ files: zkFiles, profile: getProfile('zookeeper') });
    expect(r.input).toMatchObject({ lines: 106, events: 10, ignored: 96 });
    expect(r.input.files.map((f) => f.sparse)).toEqual([undefined, undefined, true]);
    expect(unread(r)).toBeUndefined();
    // The same on parsing worker threads.
    const threaded = await analyze({ files: zkFiles, profile: getProfile('zookeeper'), workers: 'on' });
    expect(threaded.input.files.map((f) => f.sparse)).toEqual([undefined, undefined, true]);
    expect(unread(threaded)).toBeUndefined();
  });

  it('the warning still fires when the zookeeper profile reads almost nothing of a worker log it should read (the wrong profile that would pass for an all clear)', async () => {
    // The workers' JSON lines in field names the profile does not know: nothing of them is read.
    const renamed = file('worker-renamed.log', readFileSync(zkFiles[1]!, 'utf8').replaceAll('"event":', '"what":').replaceAll('"msg":', '"text":'));
    const r = await analyze({ files: [zkFiles[0]!, renamed, zkFiles[2]!], profile: getProfile('zookeeper') });
    expect(r.input.files[1]).toMatchObject({ events: 0, ignored: 4 });
    expect(r.input.files[1]!.sparse).toBeUndefined();
    expect(unread(r)).toBe(`4 of 4 lines of ${renamed} were not read as events (4 ignored, 0 invalid): is the profile or mapping right for it? (\`stalewrite map ${renamed}\`)`);
    // And on the command line, on a run that exits 0, it is a warning on stderr.
    const cli = await runCli(['analyze', '--profile', 'zookeeper', '--fail-on', 'none', '-f', 'json', zkFiles[0]!, renamed, zkFiles[2]!]);
    expect(cli.code).toBe(0);
    expect(cli.stderr).toContain(`stalewrite: warning: 4 of 4 lines of ${renamed} were not read as events`);
  });

  it('a sparse input is still judged by its invalid lines (lines its profile took for lock lines and could not read)', async () => {
    const curator = file('curator-fresh.log', Array.from({ length: 3 }, (_, k) => `2026-03-01 10:00:0${k}.501 [main-EventThread] INFO  org.apache.curator.framework.state.ConnectionStateManager - State change: SUSPENDED`).join('\n') + '\n');
    const r = await analyze({ files: [zkFiles[0]!, curator], profile: getProfile('zookeeper', { log4j: { zone: 'Z' } }) });
    expect(r.input.files[1]).toMatchObject({ sparse: true, invalid: 3 });
    expect(unread(r)).toBe(`3 of 3 lines of ${curator} were not read as events (3 invalid; 0 ignored lines not counted: an input of this kind is mostly other lines): is the profile or mapping right for it? (\`stalewrite map ${curator}\`)`);
  });
});

describe('readiness values', () => {
  it('a stale request answered with a timeout is unconfirmed, with what was seen', async () => {
    const { a, b } = workers(2000, 'app-1', 'app-1', 'timeout');
    const r = await analyze({ files: [file('timeout-a.ndjson', a), file('timeout-b.ndjson', b)] });
    expect(r.resources[0]).toMatchObject({ readiness: 'unconfirmed' });
    expect(r.resources[0]!.reason).toMatch(/1 stale write got a timeout \(token 2 after token 4\) instead of an explicit rejected-stale-fence/);
    expect(r.summary.verdict).toBe('unconfirmed');
    expect(exitCodeFor(r, { failOn: 'error', includePossible: false })).toBe(0);
    expect(exitCodeFor(r, { failOn: 'error', includePossible: false, requireTested: true })).toBe(3);
    expect(exitCodeFor(r, { failOn: 'warning', includePossible: false })).toBe(1); // stale-not-explicit is a warning
  });

  it('the reason describes the tokens actually seen (2 after 4 is not "an equal token")', async () => {
    const { a, b } = workers(2000, 'app-1', 'app-2');
    // No rule judges the write: the state still saw it, and says what it was.
    const r = await analyze({ files: [file('reason-a.ndjson', a), file('reason-b.ndjson', b)], rules: ['missing-token'] });
    expect(r.resources[0]!.readiness).toBe('inconclusive');
    expect(r.resources[0]!.reason).toMatch(/1 stale write accepted \(token 2 after token 4\)/);
    expect(r.resources[0]!.reason).not.toMatch(/equal/);
    expect(exitCodeFor(r, { failOn: 'error', includePossible: false })).toBe(3);
    // With the rule: likely (2 s apart across hosts), so violated, naming the definite-or-likely count.
    const all = await analyze({ files: [file('reason-a.ndjson', a), file('reason-b.ndjson', b)] });
    expect(all.resources[0]).toMatchObject({ readiness: 'violated', reason: '1 definite or likely error finding on this resource' });
  });

  it('an old-handle release that succeeded is never "verified", even when the rule judging it is not run', async () => {
    const rel = [
      { ts: at(0), type: 'acquire', resource: 'r', ownerId: 'a', leaseId: 'A', fenceToken: '1' },
      { ts: at(1000), type: 'expire', resource: 'r', leaseId: 'A' },
      { ts: at(2000), type: 'acquire', resource: 'r', ownerId: 'b', leaseId: 'B', fenceToken: '2' },
      { ts: at(3000), type: 'write', resource: 'r', ownerId: 'b', leaseId: 'B', fenceToken: '2', result: 'accepted' },
      { ts: at(4000), type: 'release', resource: 'r', ownerId: 'a', leaseId: 'A', fenceToken: '1', result: 'released' },
    ];
    const f = file('old-release.ndjson', rel);
    expect((await analyze({ files: [f] })).resources[0]!.readiness).toBe('violated');
    const subset = await analyze({ files: [f], rules: ['accepted-stale-write'] });
    expect(subset.resources[0]).toMatchObject({ readiness: 'inconclusive', reason: expect.stringMatching(/1 old-handle release succeeded while another lease held the resource, but judged by no rule/) });
    expect(exitCodeFor(subset, { failOn: 'error', includePossible: false })).toBe(3);
  });

  it('the verdict is the worst over resources: one verified resource never hides an inconclusive one', async () => {
    const { a, b } = workers(100, 'app-1', 'app-2');
    const safe = [
      { ts: at(0), type: 'write', resource: 'safe/1', fenceToken: '5', result: 'accepted' },
      { ts: at(10), type: 'write', resource: 'safe/1', fenceToken: '3', result: 'rejected-stale-fence' },
    ];
    const r = await analyze({ files: [file('mix-a.ndjson', a), file('mix-b.ndjson', b), file('mix-safe.ndjson', safe)] });
    expect(Object.fromEntries(r.resources.map((x) => [x.resource, x.readiness]))).toEqual({ 'orders/7': 'inconclusive', 'safe/1': 'verified' });
    expect(r.summary.verdict).toBe('inconclusive');
    expect(r.summary.byReadiness).toEqual({ violated: 0, inconclusive: 1, unconfirmed: 0, verified: 1, untested: 0 });
    expect(exitCodeFor(r, { failOn: 'error', includePossible: false })).toBe(3);
  });
});

describe('JUnit fails exactly when the exit code does', () => {
  const inputs: Record<string, string[]> = {
    'article-unsafe': ['fixtures/article-unsafe.ndjson'],
    'article-safe': ['fixtures/article-safe.ndjson'],
    'rule-overlapping-leases': ['fixtures/rule-overlapping-leases.ndjson'],
    'rule-stale-not-explicit': ['fixtures/rule-stale-not-explicit.ndjson'],
    'rule-stale-release': ['fixtures/rule-stale-release.ndjson'],
    'workers-only': ['fixtures/workers-only.ndjson'],
    'mixed-incidents': ['fixtures/mixed-incidents.ndjson'],
  };
  const variants: { name: string; analyze: Record<string, unknown>; policy: Record<string, unknown> }[] = [
    { name: 'defaults', analyze: {}, policy: {} },
    { name: '--max-findings 0', analyze: { maxFindings: 0 }, policy: {} },
    { name: '--rule keepalive-gap', analyze: { rules: ['keepalive-gap'] }, policy: {} },
    { name: '--rule accepted-stale-write', analyze: { rules: ['accepted-stale-write'] }, policy: {} },
    { name: '--include-possible', analyze: {}, policy: { includePossible: true } },
    { name: '--allow-inconclusive', analyze: {}, policy: { allowInconclusive: true } },
    { name: '--require-tested', analyze: {}, policy: { requireTested: true } },
    { name: '--fail-on warning', analyze: {}, policy: { failOn: 'warning' } },
    { name: '--fail-on warning --max-findings 0', analyze: { maxFindings: 0 }, policy: { failOn: 'warning' } },
    { name: '--fail-on none', analyze: {}, policy: { failOn: 'none' } },
  ];
  for (const [name, files] of Object.entries(inputs)) {
    it(name, async () => {
      for (const v of variants) {
        const report = await analyze({ files, ...v.analyze });
        const policy = { failOn: 'error' as const, includePossible: false, ...v.policy } as Parameters<typeof exitCodeFor>[1];
        const failures = Number(/<testsuites [^>]*failures="(\d+)"/.exec(renderJunit(report, policy))![1]);
        expect(failures > 0, `${name} ${v.name}: exit ${exitCodeFor(report, policy)}, ${failures} JUnit failures`).toBe(exitCodeFor(report, policy) !== 0);
      }
    });
  }
});
