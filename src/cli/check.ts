/** The pass/fail table of `stalewrite check`, with a precise diff under each failing case. */
import Table from 'cli-table3';
import type { CaseResult } from '../check/cases.js';
import { escapeTerminal as t } from '../report/escape.js';

export function renderCheck(results: CaseResult[], updated: boolean, color: boolean): string {
  const style = color ? {} : { head: [] as string[], border: [] as string[] };
  const paint = (code: string, s: string) => (color ? `\u001b[${code}m${s}\u001b[0m` : s);
  const table = new Table({ head: ['case', 'result', 'findings', 'verdict'], style });
  for (const r of results) {
    const result = r.ok ? paint('32', 'pass') : updated ? paint('33', 'updated') : paint('31', 'FAIL');
    table.push([t(r.case.name), result, String(r.report.summary.findings), r.report.summary.verdict]);
  }
  const out = [table.toString(), ''];
  for (const r of results.filter((x) => !x.ok)) {
    out.push(`${t(r.case.name)}:`);
    for (const d of r.diffs) out.push(`  ${t(d)}`);
    out.push('');
  }
  const failed = results.filter((r) => !r.ok).length;
  out.push(updated ? `${results.length} cases, ${failed} expectation files written` : `${results.length - failed} passed, ${failed} failed`);
  return out.join('\n') + '\n';
}
