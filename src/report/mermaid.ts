/**
 * A Mermaid `sequenceDiagram` of one finding, for the Markdown report (GitHub and GitLab render
 * them): the authority, the workers and the resource as participants; each evidence event as
 * messages (a request and its result; an expiry or revocation from the authority); a note on the
 * decisive event, with its role and the file name and line (the evidence table has the full path). Drawn from the finding's structured evidence, in the story's time order.
 *
 * Log content never reaches Mermaid's syntax. Participants are declared under aliases generated
 * here (`A`, `R`, `W1`…) with the name as an escaped label, and every label and message text is
 * passed through mermaidText(): it keeps letters, digits, space and `._=(),/-` and writes every
 * other character as a Mermaid entity code, `#59;` for `;`. Mermaid replaces those codes before it
 * parses and turns them back into characters only in the drawn SVG's text, so a newline, `;`, `#`,
 * `%%`, `%%{init}%%`, `-->>`, `:`, `<br>`, HTML or a backtick in a log value is text, never a
 * statement, directive, line break, markup or the end of the Markdown fence.
 */
import type { EvidenceItem, Finding } from '../model/report.js';
import { escapeTerminal } from './escape.js';
import { handleOf, inTimeOrder, relative, writeCall } from './story.js';

/** Findings given a diagram per Markdown report by default (`--max-diagrams`). */
export const MAX_DIAGRAMS = 50;

/**
 * Characters of diagram text at most (between the fences), well under Mermaid's default
 * `maxTextSize` of 50 000, past which Mermaid draws an error instead. Events that do not fit are
 * left out, and the diagram and the Markdown say how many.
 */
export const MAX_DIAGRAM_TEXT = 40_000;

/** Characters of one log value (owner, lease, token, value, operation…) shown in a diagram; the middle of a longer one is elided. */
export const MAX_LABEL = 64;

export interface SequenceDiagram {
  /** The diagram's text, line by line, from `sequenceDiagram` on (without the Markdown fence). */
  lines: string[];
  /** Evidence events drawn, and left out for the text limit. */
  drawn: number;
  omitted: number;
  /** Some log value was longer than MAX_LABEL and shown elided. */
  clipped: boolean;
}

const KEEP = /[A-Za-z0-9 ._=(),/\-\p{L}\p{N}]/u;

/**
 * Text for a Mermaid label or message: control characters made visible (as in every format), then
 * each character outside letters, digits, space and `._=(),/-` written as `#<code point>;`. The
 * only `#` and `;` left are those of the codes, so no code can be forged or broken from the log.
 */
export function mermaidText(text: string): string {
  let out = '';
  for (const c of escapeTerminal(text)) out += KEEP.test(c) ? c : `#${c.codePointAt(0)};`;
  return out;
}

/** The diagram of a finding, or undefined when it has no evidence to draw. */
export function sequenceDiagram(finding: Finding): SequenceDiagram | undefined {
  const items = inTimeOrder(finding);
  if (items.length === 0) return undefined;
  let clipped = false;
  const clip = (s: string | undefined): string | undefined => {
    if (s === undefined) return undefined;
    const chars = Array.from(s);
    if (chars.length <= MAX_LABEL) return s;
    clipped = true;
    return `${chars.slice(0, MAX_LABEL - 17).join('')}…${chars.slice(-16).join('')}`;
  };

  // Participants: aliases of our own, labels escaped; workers numbered by first appearance.
  const labels = new Map<string, string>([['A', 'authority']]);
  const workers = new Map<string | undefined, string>();
  const workerOf = (e: EvidenceItem): string => {
    let alias = workers.get(e.ownerId);
    if (alias === undefined) {
      workers.set(e.ownerId, (alias = `W${workers.size + 1}`));
      labels.set(alias, e.ownerId === undefined ? '(no owner id)' : named(clip(e.ownerId)!));
    }
    return alias;
  };
  labels.set('R', named(clip(finding.resource)!));

  const t0 = items[0]!.ms;
  const events = items.map(({ e, ms }) => {
    const shown = { ...e, leaseId: clip(e.leaseId), operationId: clip(e.operationId), fenceToken: clip(e.fenceToken), result: clip(e.result)! };
    const value = e.fields?.value;
    if (typeof value === 'string') shown.fields = { value: clip(value) };
    const w = workerOf(e);
    const lines = messages(shown, w, `t=${relative(ms - t0)}`);
    const [from, to] = lines.ends;
    if (e.decisive) lines.text.push(`  Note over ${from},${to}: ${mermaidText(`decisive - ${clip(e.role)} (${clip(fileName(e.file))}:${e.line})`)}`);
    return { participants: [from, to], lines: lines.text, decisive: e.decisive === true };
  });

  // What fits: the decisive event first, then the others in time order; drawn in time order.
  const declare = (alias: string) => `  participant ${alias} as ${mermaidText(labels.get(alias)!)}`;
  const declared = new Set<string>();
  const take = new Set<number>();
  const RESERVE = 200; // the note saying how many were left out
  let size = 'sequenceDiagram\n'.length + RESERVE;
  const order = [...events.keys()].sort((a, b) => Number(events[b]!.decisive) - Number(events[a]!.decisive) || a - b);
  for (const k of order) {
    const ev = events[k]!;
    const fresh = ev.participants.filter((p, j) => !declared.has(p) && ev.participants.indexOf(p) === j);
    const cost = [...fresh.map(declare), ...ev.lines].reduce((n, l) => n + l.length + 1, 0);
    if (size + cost > MAX_DIAGRAM_TEXT) continue;
    size += cost;
    take.add(k);
    for (const p of fresh) declared.add(p);
  }

  // Authority first, workers by first appearance, the resource last.
  const aliases = ['A', ...workers.values(), 'R'].filter((a) => declared.has(a));
  const lines = ['sequenceDiagram', ...aliases.map(declare)];
  for (const k of events.keys()) if (take.has(k)) lines.push(...events[k]!.lines);
  const omitted = events.length - take.size;
  if (omitted > 0 && aliases.length > 0) {
    lines.push(`  Note over ${aliases[0]},${aliases[aliases.length - 1]}: ${mermaidText(`${omitted} more of the ${events.length} events are not drawn (diagram text limit) - see the evidence table`)}`);
  }
  return { lines, drawn: take.size, omitted, clipped };
}

/** The last part of a path (`/` or `\\`). */
function fileName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}

/** A label is never empty (Mermaid would read `participant W1 as` with nothing after it differently). */
function named(s: string): string {
  return s.trim() === '' ? `(empty name${s === '' ? '' : `: ${JSON.stringify(s)}`})` : s;
}

/**
 * The messages of one event (values already clipped) between worker `w`, the authority `A` and
 * the resource `R`, and the two participants of its first message (where a note goes).
 */
function messages(e: EvidenceItem, w: string, t: string): { text: string[]; ends: [string, string] } {
  const msg = (from: string, arrow: string, to: string, text: string) => `  ${from}${arrow}${to}: ${mermaidText(text)}`;
  const lease = e.leaseId ?? 'lease';
  switch (e.type) {
    case 'acquire':
      return { text: [msg(w, '->>', 'A', `${t} acquire`), msg('A', '-->>', w, e.result === 'granted' ? `granted ${handleOf(e)}`.trim() : e.result)], ends: [w, 'A'] };
    case 'keepalive':
      return { text: [msg(w, '->>', 'A', `${t} keepalive(${lease})`), msg('A', '-->>', w, e.result)], ends: [w, 'A'] };
    case 'release':
      return { text: [msg(w, '->>', 'A', `${t} release(${handleOf(e)})`), msg('A', '-->>', w, e.result)], ends: [w, 'A'] };
    case 'expire': {
      const what = e.observer === 'worker' && !e.inferred ? `${lease} lost (worker's view)` : `${lease} expired${e.inferred ? ' (inferred - last renewal + ttl)' : ''}`;
      return { text: [msg('A', '--x', w, `${t} ${what}`)], ends: ['A', w] };
    }
    case 'revoke':
      return { text: [msg('A', '--x', w, `${t} ${lease} revoked`)], ends: ['A', w] };
    case 'write': {
      const view = e.observer === 'worker' ? " (worker's view)" : '';
      return { text: [msg(w, '->>', 'R', `${t} ${writeCall(e)}`), msg('R', '-->>', w, `${e.result}${view}`)], ends: [w, 'R'] };
    }
    default:
      return { text: [msg(w, '->>', 'A', `${t} ${e.type}`), msg('A', '-->>', w, e.result)], ends: [w, 'A'] };
  }
}
