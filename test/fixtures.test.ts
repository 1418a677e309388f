/**
 * Every recorded case in fixtures/ through the same mechanism as `stalewrite check`:
 * `X.ndjson` beside `X.expect.json`, or a directory of several files with an `expect.json`.
 * The expectations were written by hand from the specification, independently of the code.
 */
import { describe, expect, it } from 'vitest';
import { findCases, runCase } from '../src/check/cases.js';
import { rules } from '../src/rules/index.js';
import { FIXTURES } from './helpers/run.js';

const all = findCases([FIXTURES]);

describe('fixtures', () => {
  it('there are fixtures for every rule, triggering and near-miss', () => {
    const names = all.map((c) => c.name.slice(FIXTURES.length + 1));
    for (const rule of rules.map((r) => r.meta.id)) {
      expect(names).toContain(`rule-${rule}.ndjson`);
      expect(names).toContain(`near-${rule}.ndjson`);
    }
    expect(names).toContain('article-safe.ndjson');
    expect(names).toContain('article-unsafe.ndjson');
  });

  it.each(all.map((c) => [c.name.slice(FIXTURES.length + 1), c] as const))('%s', async (_name, c) => {
    const result = await runCase(c);
    expect(result.diffs).toEqual([]);
    // Every line is accounted for.
    const i = result.report.input;
    expect(i.lines + i.expanded).toBe(i.events + i.duplicates + i.blank + i.ignored + i.invalid + i.joined);
  });
});
