/** The docs cannot drift from the code: the README's rule table and every rule page are checked. */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { renderRules } from '../src/cli/rules.js';
import { section as sectionOf } from '../src/cli/explain.js';

const section = (md: string, heading: string): string => sectionOf(md, heading) ?? '';
import { rules } from '../src/rules/index.js';
import { ROOT } from './helpers/run.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

function ndjsonBlock(md: string): string {
  const m = /```ndjson\n([\s\S]*?)```/.exec(md);
  return m === null ? '' : m[1]!;
}

async function analyzeText(text: string) {
  const f = join(mkdtempSync(join(tmpdir(), 'stalewrite-doc-')), 'log.ndjson');
  writeFileSync(f, text);
  return analyze({ files: [f] });
}

describe('README', () => {
  it('carries the rule table generated from the modules (npm run docs)', () => {
    const start = readme.indexOf('-->', readme.indexOf('<!-- rules:start')) + 3;
    const end = readme.indexOf('<!-- rules:end -->');
    expect(readme.slice(start, end).trim()).toBe(renderRules('markdown', false).trim());
  });

  it('names the fixture of the quick start, and it shows a real finding', async () => {
    const m = /npx stalewrite analyze (fixtures\/\S+\.ndjson)/.exec(readme);
    expect(m).not.toBeNull();
    const report = await analyze({ files: [join(ROOT, m![1]!)] });
    expect(report.summary.bySeverity.error).toBeGreaterThan(0);
  });

  it('documents every analyze option', async () => {
    const src = readFileSync(join(ROOT, 'src', 'cli', 'main.ts'), 'utf8');
    const options = [...src.matchAll(/\.option\('([a-z-]+)'/g)].map((m) => m[1]!);
    expect(options.length).toBeGreaterThan(5);
    for (const o of options) expect(readme, o).toContain(`--${o}`);
  });
});

describe('rule pages', () => {
  it.each(rules.map((r) => [r.meta.id, r] as const))('docs/rules/%s.md has a bad log that triggers it and a good log that does not', async (id, rule) => {
    const path = join(ROOT, 'docs', 'rules', `${id}.md`);
    expect(existsSync(path), path).toBe(true);
    const md = readFileSync(path, 'utf8');
    for (const h of ['Bad log', 'Good log', 'Why it matters', 'What to change']) expect(section(md, h), h).not.toBe('');
    for (const col of [rule.meta.symptom, rule.meta.cause, rule.meta.check, rule.meta.action]) expect(md).toContain(col);
    const bad = await analyzeText(ndjsonBlock(section(md, 'Bad log')));
    expect(bad.input.invalid).toBe(0);
    expect(bad.findings.filter((f) => f.rule === id)).toHaveLength(1);
    const good = await analyzeText(ndjsonBlock(section(md, 'Good log')));
    expect(good.input.invalid).toBe(0);
    expect(good.input.events).toBeGreaterThan(0);
    // The good log is clean of every rule, not only this one.
    expect(good.findings.map((f) => f.rule)).toEqual([]);
  });
});
