import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { renderGithub } from '../src/report/github.js';
import { renderJsonChunks } from '../src/report/json.js';
import { renderStory } from '../src/report/story.js';
import { renderJunit } from '../src/report/junit.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { BIN, FIXTURES, ROOT, runCli } from './helpers/run.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'stalewrite-rep-'));
const fixture = (name: string) => join(FIXTURES, name);

/** A log whose every field carries hostile content. */
function hostileLog(): string {
  const evil = 'x|y`z<script>alert(1)</script>"><img src=x onerror=alert(2)>](javascript:alert(3))\u001b[31m\u202e::error::pwn%0A]]>\u0001\r\nend';
  const base = { resource: `res ${evil}`, ownerId: `own ${evil}`, leaseId: `lease ${evil}`, operationId: `op ${evil}`, value: `val ${evil}` };
  const lines = [
    { ts: '2026-03-01T10:00:00Z', type: 'acquire', ...base, fenceToken: 1 },
    { ts: '2026-03-01T10:00:01Z', type: 'write', ...base, ownerId: 'B', leaseId: 'L2', fenceToken: 2, result: 'accepted' },
    { ts: '2026-03-01T10:00:02Z', type: 'write', ...base, fenceToken: 1, result: 'accepted' },
  ];
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

async function hostileReport() {
  const dir = tmp();
  const f = join(dir, 'evil|`<b>.ndjson');
  writeFileSync(f, hostileLog());
  return analyze({ files: [f], timelines: { all: true } });
}

describe('json', () => {
  it('is written in pieces that join to exactly JSON.stringify of the report', async () => {
    for (const name of ['article-unsafe.ndjson', 'article-safe.ndjson', 'invalid-lines.ndjson', 'mixed-incidents.ndjson']) {
      for (const timelines of [undefined, { all: true }]) {
        const report = await analyze({ files: [fixture(name)], timelines });
        const want = JSON.stringify({ ...report, findings: report.findings.map((f) => ({ ...f, story: renderStory(f) })) }, null, 2) + '\n';
        expect([...renderJsonChunks(report)].join(''), name).toBe(want);
      }
    }
    // Many resources: several pieces, none much over 64 KiB (a piece ends after the slice that passes it).
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ ts: 1772359200000 + i, type: 'write', resource: `r${i}`, result: 'accepted', fenceToken: 1 }));
    const dir = tmp();
    writeFileSync(join(dir, 'many.ndjson'), lines.join('\n') + '\n');
    const report = await analyze({ files: [join(dir, 'many.ndjson')] });
    const pieces = [...renderJsonChunks(report)];
    expect(pieces.length).toBeGreaterThan(5);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(96 * 1024);
    expect(JSON.parse(pieces.join('')).resources).toHaveLength(3000);
  });
});

describe('markdown', () => {
  it('has the summary, readiness, findings with stories and sequence diagrams, and input health', async () => {
    const report = await analyze({ files: [fixture('mixed-incidents.ndjson')] });
    const md = renderMarkdown(report);
    for (const h of ['# stalewrite report: VIOLATED', '## Readiness', '## Findings', '## Input health', '### `accepted-stale-write` (error)', '| symptom | cause | check | action |', '```text', 't=0', '```mermaid\nsequenceDiagram\n']) {
      expect(md).toContain(h);
    }
    // One diagram per finding, between its story and its evidence table (test/markdown-mermaid.test.ts renders them).
    expect(md.match(/^```mermaid$/gm)).toHaveLength(report.findings.length);
    expect(md).toMatch(/^```\n\n```mermaid\n[\s\S]*?\n```\n\n\| where \| role \|/m);
    expect(md).toMatch(/mixed-incidents\.ndjson:10`? not valid JSON/);
  });

  it('log content cannot break tables, open code spans or inject HTML', async () => {
    const md = renderMarkdown(await hostileReport());
    // Stories are in fenced code blocks, which render literally; the fence outlasts any backtick run.
    const fences = [...md.matchAll(/^(`{3,})text$/gm)].map((m) => m[1]!);
    expect(fences.length).toBeGreaterThan(0);
    let outside = md;
    for (const f of new Set(fences)) outside = outside.replace(new RegExp(`^${f}text\\n[\\s\\S]*?\\n${f}$`, 'gm'), '');
    expect(outside).not.toMatch(/<script>|<img|<b>/);
    expect(md).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u202e]/);
    // Every table row keeps its column count: log pipes are escaped.
    for (const line of md.split('\n').filter((l) => l.startsWith('| '))) {
      const cells = line.replace(/\\\|/g, '').split('|').length;
      const header = md.split('\n').filter((l) => l.startsWith('| ')).length > 0;
      expect(header).toBe(true);
      expect(cells).toBeGreaterThan(2);
    }
    const readiness = md.split('\n').find((l) => l.startsWith('| res '))!;
    expect(readiness.replace(/\\\|/g, '').split('|')).toHaveLength(8);
    expect(md).toContain('\\](javascript');
    expect(outside).not.toMatch(/[^\\]\]\(javascript/);
  });
});

describe('junit', () => {
  it('is valid XML with one testcase per (rule, resource) and passes for clean resources', async () => {
    const xml = renderJunit(await analyze({ files: [fixture('mixed-incidents.ndjson')] }));
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(xml);
    const cases = [doc.testsuites.testsuite.testcase].flat() as Record<string, unknown>[];
    const names = cases.map((c) => c['@_name'] as string);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('accepted-stale-write on orders/1001');
    expect(names).toContain('readiness of orders/1002: verified');
    const failing = cases.filter((c) => c.failure !== undefined);
    expect(failing.length).toBe(Number(doc.testsuites['@_failures']));
    const stale = cases.find((c) => c['@_name'] === 'accepted-stale-write on orders/1001')!;
    expect(String((stale.failure as Record<string, unknown>)['#text'])).toContain('t=0');
    expect(stale['@_file']).toMatch(/mixed-incidents\.ndjson$/);
  });

  it('stays valid with control characters and markup in log content', async () => {
    const xml = renderJunit(await hostileReport());
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/);
    expect(xml).not.toContain('<script>');
  });

  it('a clean run still has passing testcases', async () => {
    const xml = renderJunit(await analyze({ files: [fixture('near-accepted-stale-write.ndjson')], rules: ['accepted-stale-write'] }));
    const doc = new XMLParser({ ignoreAttributes: false }).parse(xml);
    expect(Number(doc.testsuites['@_tests'])).toBeGreaterThan(0);
    expect(Number(doc.testsuites['@_failures'])).toBe(0);
  });
});

describe('github annotations', () => {
  it('point at the decisive log line, escaped per GitHub rules', async () => {
    const out = renderGithub(await analyze({ files: [fixture('article-unsafe.ndjson')] }));
    const first = out.split('\n')[0]!;
    expect(first).toMatch(/^::error file=.*article-unsafe\.ndjson,line=7,title=stalewrite accepted-stale-write on resource-7::/);
    expect(first).toContain('%0At=0');
  });

  it('cannot be broken out of by log content', async () => {
    const out = renderGithub(await hostileReport());
    const lines = out.trimEnd().split('\n');
    for (const l of lines) expect(l).toMatch(/^::(error|warning|notice) /);
    const props = lines[0]!.slice(0, lines[0]!.indexOf('::', 2));
    expect(props).not.toMatch(/[\r\n]/);
    expect(props.split(',').every((p) => /^(::error |)(file|line|title)=/.test(p))).toBe(true);
    expect(out).not.toContain('\u001b');
  });

  it('prints at most 10 per level, most severe first, and says how many were left out', async () => {
    const events = [{ ts: '2026-03-01T10:00:00Z', type: 'write', resource: 'r', fenceToken: 100, result: 'accepted' }];
    for (let i = 1; i <= 15; i++) events.push({ ts: `2026-03-01T10:00:${String(i).padStart(2, '0')}Z`, type: 'write', resource: 'r', fenceToken: i, result: 'accepted' });
    const out = renderGithub(await analyze({ events }));
    expect(out.split('\n').filter((l) => l.startsWith('::error'))).toHaveLength(10);
    expect(out).toMatch(/5 findings not annotated/);
  });

  it('appends the Markdown report to $GITHUB_STEP_SUMMARY', async () => {
    const summary = join(tmp(), 'summary.md');
    writeFileSync(summary, 'before\n');
    const r = await runCli(['analyze', '-f', 'github', fixture('article-unsafe.ndjson')], { env: { GITHUB_STEP_SUMMARY: summary } });
    expect(r.code).toBe(1);
    const text = readFileSync(summary, 'utf8');
    expect(text.startsWith('before\n# stalewrite report: VIOLATED')).toBe(true);
  });
});

describe('live ndjson', () => {
  it('emits a finding while the input pipe is still open, and a summary at the end', async () => {
    const child = spawn(process.execPath, [BIN, 'analyze', '-f', 'ndjson', '-'], { cwd: ROOT });
    let out = '';
    const firstFinding = new Promise<string>((resolve) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
    });
    child.stdin.write(readFileSync(fixture('article-unsafe.ndjson')));
    const line = JSON.parse(await firstFinding); // the pipe is still open here
    expect(line).toMatchObject({ kind: 'finding', rule: 'accepted-stale-write' });
    expect(child.exitCode).toBeNull();
    child.stdin.end();
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(1);
    const last = JSON.parse(out.trimEnd().split('\n').at(-1)!);
    expect(last).toMatchObject({ kind: 'summary', summary: { verdict: 'violated' } });
  });
});

describe('timeline command', () => {
  it('prints every event of the resource with the highest token and finding markers', async () => {
    const r = await runCli(['timeline', '--resource', 'resource-7', fixture('article-unsafe.ndjson')]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('t='));
    expect(lines).toHaveLength(7);
    expect(lines[6]).toMatch(/worker-a: write\(v1, token=1, op=op-a-1\) -> accepted\s+highest=2\s+.*article-unsafe\.ndjson:7\s+<- F[0-9a-f]{12} accepted-stale-write/);
    expect(lines[3]).toMatch(/authority: lease-A expired .*<\. F[0-9a-f]{12}/);
  });

  it('says which resources exist when the one asked for has no events', async () => {
    const r = await runCli(['timeline', '--resource', 'nope', fixture('article-unsafe.ndjson')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no events for resource "nope"; resources seen: resource-7/);
  });
});

describe('check command', () => {
  it('passes on matching expectations and fails with a readable diff on a changed one', async () => {
    const dir = tmp();
    cpSync(fixture('article-unsafe.ndjson'), join(dir, 'incident.ndjson'));
    const w = await runCli(['check', '--update', dir]);
    expect(w.code).toBe(0);
    const expectation = JSON.parse(readFileSync(join(dir, 'incident.expect.json'), 'utf8'));
    expect(expectation.findings).toContainEqual({ rule: 'accepted-stale-write', resource: 'resource-7', count: 1, certainty: 'definite' });
    const ok = await runCli(['check', dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/1 passed, 0 failed/);
    expectation.findings = expectation.findings.filter((f: { rule: string }) => f.rule !== 'accepted-stale-write');
    expectation.readiness['resource-7'] = 'verified';
    writeFileSync(join(dir, 'incident.expect.json'), JSON.stringify(expectation));
    const bad = await runCli(['check', dir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('FAIL');
    expect(bad.stdout).toContain('+ unexpected finding accepted-stale-write @ resource-7 (1)');
    expect(bad.stdout).toContain('~ readiness of resource-7: expected verified, got violated');
    expect(bad.stdout).toMatch(/0 passed, 1 failed/);
  });

  it('runs a directory of split sources as one case', async () => {
    const r = await runCli(['check', join(FIXTURES, 'split-mixed')]);
    expect(r.stdout).toMatch(/split-mixed\//);
  });

  it('exits 2 when there is nothing to check', async () => {
    const r = await runCli(['check', tmp()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no cases found/);
  });
});
