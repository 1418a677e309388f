/** `stalewrite explain <rule>`: the rule's table row, its message templates, why it matters, a bad log and a good log (from docs/rules). */
import { readFileSync } from 'node:fs';
import { rules } from '../rules/index.js';
import { placeholdersOf } from '../model/message.js';
import { SERVICE_IDS, SERVICE_PLACEHOLDERS, SERVICES, type ServiceId } from '../model/services.js';

export class UnknownRuleError extends Error {}

/** `service`: show only that lock service's case (else every service's, for rules that have one). */
export function renderExplain(id: string, service?: ServiceId): string {
  const rule = rules.find((r) => r.meta.id === id);
  if (rule === undefined) throw new UnknownRuleError(`unknown rule "${id}"; known rules: ${rules.map((r) => r.meta.id).join(', ')}`);
  const m = rule.meta;
  const doc = readDoc(id);
  const out = [
    `${m.id} (${m.severity}): ${m.title}`,
    '',
    `  symptom: ${m.symptom}`,
    `  cause:   ${m.cause}`,
    `  check:   ${m.check}`,
    `  action:  ${m.action}`,
    '',
    // The message templates, as findings report them (messageId `<rule>/<id>`, `{name}` filled from data).
    'Messages:',
    ...Object.entries(rule.messages).map(([key, template]) => `  ${key}: ${template}`),
    ...serviceCases(rule.messages, service),
  ];
  for (const heading of ['Why it matters', 'Bad log', 'Good log', 'What to change']) {
    const body = doc === undefined ? undefined : section(doc, heading);
    if (body === undefined) continue;
    out.push('', `${heading}:`, ...body.split('\n').map((l) => (l === '' ? '' : `  ${l}`)));
  }
  out.push('', `More: docs/rules/${id}.md`);
  return out.join('\n').replace(/\n{3,}/g, '\n\n') + '\n';
}

/**
 * The lock services' own cases of a rule: the values its service placeholders take when a
 * mapping or profile declares `"service"` (the messages ending in `Service` use them).
 */
function serviceCases(messages: Readonly<Record<string, string>>, only: ServiceId | undefined): string[] {
  const names = [...new Set(Object.values(messages).flatMap(placeholdersOf))].filter((n) => Object.prototype.hasOwnProperty.call(SERVICE_PLACEHOLDERS, n));
  const lines: string[] = [];
  for (const sid of only === undefined ? SERVICE_IDS : [only]) {
    for (const name of names) {
      const text = SERVICES[sid][SERVICE_PLACEHOLDERS[name]!];
      if (text !== undefined) lines.push(`  ${sid}: {${name}} = ${text}`);
    }
  }
  if (names.length === 0) return [];
  const head = 'Lock services (a mapping\'s or profile\'s "service" declares one; its findings then use the *Service message, filled with this):';
  return ['', head, ...(lines.length > 0 ? lines : [`  ${only}: no case of its own for this rule; the generic message is used`])];
}

function readDoc(id: string): string | undefined {
  try {
    return readFileSync(new URL(`../../docs/rules/${id}.md`, import.meta.url), 'utf8');
  } catch {
    return undefined;
  }
}

/** The text under `## heading` up to the next `## `, trimmed. */
export function section(md: string, heading: string): string | undefined {
  const start = md.indexOf(`\n## ${heading}\n`);
  if (start === -1) return undefined;
  const rest = md.slice(start + heading.length + 5);
  const end = rest.search(/\n## /);
  return (end === -1 ? rest : rest.slice(0, end)).trim();
}
