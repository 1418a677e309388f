/**
 * The data of the HTML report's page: one JSON document per block of resource cards, and an index
 * (every card's name, readiness, findings and block), each in a `<script>` data block that the
 * page's script reads and never executes. Log content is only ever JSON string values, escaped for
 * a script element (`<`, `>`, `&`, U+2028, U+2029 as \u escapes), so no value can close the element
 * or start markup. A block of 32 KB or more of JSON is gzip-compressed and base64-encoded (the page
 * inflates it with the browser's DecompressionStream): a big incident stays a few MB.
 */
import { gzipSync } from 'node:zlib';
import { byReadiness, type Finding, type ReportView, type ResourceSummary, type ResourceTimelineView } from '../model/report.js';
import { picture, type Picture } from './picture.js';
import { renderStory } from './story.js';

/** A block is closed once its JSON reaches this size (at a card's end). */
const BLOCK = 256 * 1024;
/** Blocks smaller than this stay plain JSON, readable in the file. */
const PLAIN = 32 * 1024;
/** Base64 is written in slices of this size. */
const SLICE = 48 * 1024;

/** JSON text safe inside <script type="application/json">. */
export function scriptJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return UNSAFE_IN_SCRIPT.test(text) ? text.replace(UNSAFE_IN_SCRIPT_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text;
}

const UNSAFE_IN_SCRIPT = /[<>&\u2028\u2029]/;
const UNSAFE_IN_SCRIPT_ALL = /[<>&\u2028\u2029]/g;

export interface Card {
  id: string;
  summary: ResourceSummary;
  view?: ResourceTimelineView;
  findings: Finding[];
}

interface IndexEntry {
  id: string;
  name: string;
  readiness: string;
  block: number;
  pos: number;
  height: number;
  findings: [string, string, string, string][];
}

/** By rule, the symptom, cause, check and action its findings share (written once, in the index). */
type RuleTexts = Map<string, [string, string, string, string]>;

/** The texts of the first finding of each rule; a finding whose texts differ carries its own. */
export function ruleTexts(findings: readonly Finding[]): RuleTexts {
  const out: RuleTexts = new Map();
  for (const f of findings) if (!out.has(f.rule)) out.set(f.rule, [f.symptom, f.cause, f.check, f.action]);
  return out;
}

/** The cards' data blocks, then the index block, as pieces of bounded size. */
export function* dataBlocks(cards: Iterable<Card>, head: Record<string, unknown>, notDrawn: string, texts: RuleTexts): Generator<string> {
  const index: IndexEntry[] = [];
  let pieces: string[] = [];
  let size = 0;
  let block = 0;
  let pos = 0;
  for (const card of cards) {
    pieces.push(pos === 0 ? '[' : ',');
    let height = 0;
    for (const p of cardJson(card, notDrawn, texts, (h) => (height = h))) {
      pieces.push(p);
      size += p.length;
    }
    index.push({ id: card.id, name: card.summary.resource, readiness: card.summary.readiness, block, pos, height, findings: card.findings.map((f) => [f.id, f.rule, f.severity, f.certainty]) });
    pos++;
    if (size >= BLOCK) {
      pieces.push(']');
      yield* encode(pieces, size, `class="sw-data" data-block="${block}"`);
      pieces = [];
      size = 0;
      pos = 0;
      block++;
    }
  }
  if (pos > 0) {
    pieces.push(']');
    yield* encode(pieces, size, `class="sw-data" data-block="${block}"`);
  }
  const ix: string[] = [`{"head":${scriptJson({ ...head, texts: Object.fromEntries(texts) })},"cards":[`];
  let ixSize = ix[0]!.length;
  index.forEach((e, i) => {
    const p = (i > 0 ? ',' : '') + scriptJson([e.id, e.name, e.readiness, e.block, e.pos, e.height, e.findings]);
    ix.push(p);
    ixSize += p.length;
  });
  ix.push(']}');
  yield* encode(ix, ixSize, 'id="sw-index"');
}

function* encode(pieces: string[], size: number, attrs: string): Generator<string> {
  if (size < PLAIN) {
    yield `\n<script type="application/json" ${attrs}>`;
    yield* pieces;
    yield '</script>';
    return;
  }
  const b64 = gzipSync(Buffer.from(pieces.join(''), 'utf8')).toString('base64');
  yield `\n<script type="application/x-gzip-base64" ${attrs}>`;
  for (let i = 0; i < b64.length; i += SLICE) yield b64.slice(i, i + SLICE);
  yield '</script>';
}

/** One card as JSON pieces: its resource, its picture (when drawn), its findings with their stories and evidence. */
function* cardJson(card: Card, notDrawn: string, texts: RuleTexts, height: (h: number) => void): Generator<string> {
  const r = card.summary;
  const pic: Picture | undefined = card.view !== undefined && card.view.events.length > 0 ? picture(card.view, card.findings) : undefined;
  yield `{"id":${scriptJson(card.id)},"name":${scriptJson(r.resource)},"readiness":${scriptJson(r.readiness)},"reason":${scriptJson(r.reason)},"highest":${scriptJson(r.highestAcceptedToken)},"events":${r.events},"findingCount":${r.findings}`;
  if (pic === undefined) yield `,"notDrawn":${scriptJson(card.view === undefined ? notDrawn : 'its history holds no event to draw')}`;
  else {
    yield `,"omitted":${card.view!.omitted},"focusOn":${scriptJson(pic.focusOn)},"lanes":${scriptJson(pic.lanes)},"ev":[`;
    for (let i = 0; i < pic.events.length; i++) yield (i > 0 ? ',' : '') + scriptJson(pic.events[i]);
    yield `],"focus":${scriptJson(pic.focus)}`;
    if (pic.whole !== undefined) yield `,"whole":${scriptJson(pic.whole)}`;
  }
  yield ',"findings":[';
  let storyLines = 0;
  for (let k = 0; k < card.findings.length; k++) {
    const f = card.findings[k]!;
    yield `${k > 0 ? ',' : ''}{"id":${scriptJson(f.id)},"rule":${scriptJson(f.rule)},"severity":${scriptJson(f.severity)},"certainty":${scriptJson(f.certainty)},"message":${scriptJson(f.message)}`;
    if (f.uncertainty !== undefined) yield `,"decide":${scriptJson(f.uncertainty.decide)}`;
    const same = texts.get(f.rule);
    if (same === undefined || same[0] !== f.symptom || same[1] !== f.cause || same[2] !== f.check || same[3] !== f.action) yield `,"texts":${scriptJson([f.symptom, f.cause, f.check, f.action])}`;
    yield ',"story":[';
    const story = renderStory(f);
    storyLines += story.length;
    for (let i = 0; i < story.length; i++) yield (i > 0 ? ',' : '') + scriptJson(story[i]);
    yield '],"evidence":[';
    const at = pic?.evidence.get(f.id);
    for (let i = 0; i < f.evidence.length; i++) {
      const e = f.evidence[i]!;
      const item: Record<string, unknown> = { role: e.role };
      const ev = at !== undefined && at[i]! >= 0 ? pic!.events[at[i]!]! : undefined;
      if (ev !== undefined) item.ev = at![i];
      // An item that is the drawn event says only which one; the page reads the rest from it.
      if (ev === undefined || ev.file !== e.file || ev.line !== e.line || ev.ts !== e.ts || ev.type !== e.type || ev.result !== e.result || ev.owner !== e.ownerId || ev.lease !== e.leaseId || ev.token !== e.fenceToken) {
        Object.assign(item, { file: e.file, line: e.line, ts: e.ts, type: e.type, result: e.result });
        if (e.ownerId !== undefined) item.owner = e.ownerId;
        if (e.leaseId !== undefined) item.lease = e.leaseId;
        if (e.fenceToken !== undefined) item.token = e.fenceToken;
      }
      if (e.inferred) item.inferred = true;
      if (e.decisive) item.decisive = true;
      yield (i > 0 ? ',' : '') + scriptJson(item);
    }
    yield ']}';
  }
  yield ']}';
  // What the page reserves for the card before drawing it (px): its picture and findings.
  height(90 + (pic === undefined ? 0 : pic.focus.height + 40) + card.findings.reduce((s, f) => s + 260 + 20 * f.evidence.length, 0) + 18 * storyLines);
}

/** The cards of a report: each drawn resource, then each other resource with listed findings; worst first. */
export function cardsOf(report: ReportView): Card[] {
  const byResource = new Map<string, Finding[]>();
  for (const f of report.findings) {
    let list = byResource.get(f.resource);
    if (list === undefined) byResource.set(f.resource, (list = []));
    list.push(f);
  }
  // One pass over the resources, keeping only the summaries of those drawn or with findings.
  const drawn = new Set((report.timelines ?? []).map((v) => v.resource));
  const summaries = new Map<string, ResourceSummary>();
  const rest: ResourceSummary[] = [];
  for (const r of report.resources) {
    if (drawn.has(r.resource)) summaries.set(r.resource, r);
    else if (byResource.has(r.resource)) rest.push(r);
  }
  const cards: Card[] = [];
  const seen = new Set<string>();
  for (const view of report.timelines ?? []) {
    const summary = summaries.get(view.resource) ?? fallbackSummary(view.resource, view.readiness);
    seen.add(view.resource);
    cards.push({ id: `r${cards.length + 1}`, summary, view, findings: byResource.get(view.resource) ?? [] });
  }
  for (const r of rest.sort(byReadiness)) {
    seen.add(r.resource);
    cards.push({ id: `r${cards.length + 1}`, summary: r, findings: byResource.get(r.resource)! });
  }
  // Findings about a resource missing from report.resources (a report built by hand): still shown.
  for (const [resource, findings] of byResource) {
    if (seen.has(resource)) continue;
    cards.push({ id: `r${cards.length + 1}`, summary: fallbackSummary(resource, 'untested'), findings });
  }
  return cards;
}

function fallbackSummary(resource: string, readiness: ResourceSummary['readiness']): ResourceSummary {
  return { resource, readiness, reason: '', highestAcceptedToken: null, events: 0, writes: { accepted: 0, rejectedStaleFence: 0, rejectedOther: 0, withoutToken: 0 }, staleWrites: 0, oldHandleReleases: 0, findings: 0 };
}
