/** `stalewrite rules`: the rule table, generated from the rule modules (never written twice). */
import Table from 'cli-table3';
import { rules } from '../rules/index.js';

export function renderRules(format: 'table' | 'json' | 'markdown', color: boolean): string {
  const metas = rules.map((r) => r.meta);
  if (format === 'json') return JSON.stringify(metas, null, 2) + '\n';
  if (format === 'markdown') {
    const cell = (s: string) => s.replace(/\|/g, '\\|');
    const lines = ['| id | severity | symptom | cause | check | action |', '|---|---|---|---|---|---|'];
    for (const m of metas) lines.push(`| \`${m.id}\` | ${m.severity} | ${cell(m.symptom)} | ${cell(m.cause)} | ${cell(m.check)} | ${cell(m.action)} |`);
    return lines.join('\n') + '\n';
  }
  const style = color ? {} : { head: [] as string[], border: [] as string[] };
  const table = new Table({ head: ['id', 'severity', 'symptom', 'cause', 'check', 'action'], style, wordWrap: true, colWidths: [22, 10, 22, 22, 22, 30] });
  for (const m of metas) table.push([m.id, m.severity, m.symptom, m.cause, m.check, m.action]);
  return table.toString() + '\n';
}
