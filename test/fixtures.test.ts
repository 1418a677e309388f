/**
 * Every recorded case in fixtures/: `X.ndjson` beside `X.expect.json`, or a directory holding
 * several `*.ndjson` files (one incident split by source) and an `expect.json`.
 * The expectations were written by hand from the specification, independently of the code.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze.js';
import { diffExpectation, type Expectation } from '../src/check/expect.js';
import { FIXTURES } from './helpers/run.js';
import { rules } from '../src/rules/index.js';

interface Case {
  name: string;
  files: string[];
  expectation: Expectation;
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const entry of readdirSync(FIXTURES).sort()) {
    const path = join(FIXTURES, entry);
    if (statSync(path).isDirectory()) {
      const files = readdirSync(path).filter((f) => /\.ndjson(\.gz)?$/.test(f)).sort().map((f) => join(path, f));
      out.push({ name: `${entry}/`, files, expectation: JSON.parse(readFileSync(join(path, 'expect.json'), 'utf8')) as Expectation });
    } else if (entry.endsWith('.expect.json')) {
      const base = entry.slice(0, -'.expect.json'.length);
      const log = readdirSync(FIXTURES).find((f) => f === `${base}.ndjson` || f === `${base}.ndjson.gz`);
      if (log === undefined) throw new Error(`${entry} has no log beside it`);
      out.push({ name: log, files: [join(FIXTURES, log)], expectation: JSON.parse(readFileSync(path, 'utf8')) as Expectation });
    }
  }
  return out;
}

const all = cases();

describe('fixtures', () => {
  it('there are fixtures for every rule, triggering and near-miss', () => {
    const names = all.map((c) => c.name);
    for (const rule of rules.map((r) => r.meta.id)) {
      expect(names).toContain(`rule-${rule}.ndjson`);
      expect(names).toContain(`near-${rule}.ndjson`);
    }
    expect(names).toContain('article-safe.ndjson');
    expect(names).toContain('article-unsafe.ndjson');
  });

  it.each(all.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const report = await analyze({ files: c.files, ...c.expectation.options });
    expect(diffExpectation(report, c.expectation)).toEqual([]);
    // Every line is accounted for.
    const i = report.input;
    expect(i.lines).toBe(i.events + i.blank + i.ignored + i.invalid);
  });
});
