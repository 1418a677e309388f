/**
 * Recorded cases for `stalewrite check`: `X.ndjson` (or `X.ndjson.gz`) beside `X.expect.json`,
 * or a directory of several `*.ndjson[.gz]` files (one incident split by source) with an
 * `expect.json`. The project's own fixtures use the same mechanism.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { analyze } from '../analyze.js';
import { InputError } from '../ingest/open.js';
import type { Report } from '../model/report.js';
import { diffExpectation, type Expectation, type ExpectedFinding } from './expect.js';

export interface Case {
  name: string;
  files: string[];
  expectPath: string;
}

export interface CaseResult {
  case: Case;
  ok: boolean;
  diffs: string[];
  report: Report;
}

const LOG = /\.ndjson(\.gz)?$/;

/**
 * Find the cases in directories and files. Logs without an expectation file count only with
 * `withoutExpectation` (for --update, which writes one).
 */
export function findCases(paths: readonly string[], withoutExpectation = false): Case[] {
  const out: Case[] = [];
  for (const p of paths) {
    if (!existsSync(p)) throw new InputError(`cannot read ${p}: no such file or directory`);
    if (statSync(p).isDirectory()) {
      if (existsSync(join(p, 'expect.json'))) {
        out.push(dirCase(p));
        continue;
      }
      for (const entry of readdirSync(p).sort()) {
        const full = join(p, entry);
        if (statSync(full).isDirectory()) {
          if (existsSync(join(full, 'expect.json'))) out.push(dirCase(full));
        } else if (LOG.test(entry)) {
          const expectPath = join(p, entry.replace(LOG, '.expect.json'));
          if (withoutExpectation || existsSync(expectPath)) out.push({ name: full, files: [full], expectPath });
        }
      }
    } else if (LOG.test(p)) {
      out.push({ name: p, files: [p], expectPath: join(dirname(p), basename(p).replace(LOG, '.expect.json')) });
    } else throw new InputError(`${p} is neither a directory nor an .ndjson[.gz] file`);
  }
  return out;
}

function dirCase(dir: string): Case {
  const files = readdirSync(dir).filter((f) => LOG.test(f)).sort().map((f) => join(dir, f));
  return { name: `${dir}/`, files, expectPath: join(dir, 'expect.json') };
}

export function readExpectation(path: string): Expectation {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new InputError(`cannot read expectation ${path}: ${(err as Error).message}`);
  }
  const e = parsed as Expectation;
  if (e === null || typeof e !== 'object' || !Array.isArray(e.findings)) throw new InputError(`expectation ${path} must be an object with a "findings" array`);
  return e;
}

export async function runCase(c: Case): Promise<CaseResult> {
  const expected = existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined;
  const report = await analyze({ files: c.files, ...expected?.options });
  if (expected === undefined) return { case: c, ok: false, diffs: [`- no expectation file ${c.expectPath} (run with --update to write it)`], report };
  const diffs = diffExpectation(report, expected);
  return { case: c, ok: diffs.length === 0, diffs, report };
}

/** The expectation the current results would satisfy; keeps the old description and options. */
export function expectationFrom(report: Report, previous?: Expectation): Expectation {
  const pairs = new Map<string, ExpectedFinding & { certainties: Set<string> }>();
  for (const f of report.findings) {
    const key = `${f.rule}\u0000${f.resource}`;
    let p = pairs.get(key);
    if (p === undefined) pairs.set(key, (p = { rule: f.rule, resource: f.resource, count: 0, certainties: new Set() }));
    p.count!++;
    p.certainties.add(f.certainty);
  }
  const findings: ExpectedFinding[] = [...pairs.values()].map(({ certainties, ...p }) =>
    certainties.size === 1 ? { ...p, certainty: [...certainties][0] as ExpectedFinding['certainty'] } : p,
  );
  const out: Expectation = {};
  if (previous?.description !== undefined) out.description = previous.description;
  if (previous?.options !== undefined) out.options = previous.options;
  out.findings = findings;
  out.readiness = Object.fromEntries(report.resources.map((r) => [r.resource, r.readiness]));
  out.input = { lines: report.input.lines, events: report.input.events, blank: report.input.blank, ignored: report.input.ignored, invalid: report.input.invalid };
  return out;
}

export function writeExpectation(c: Case, report: Report): void {
  const previous = existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined;
  writeFileSync(c.expectPath, JSON.stringify(expectationFrom(report, previous), null, 2) + '\n');
}
