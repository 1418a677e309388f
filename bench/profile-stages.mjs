#!/usr/bin/env node
// CPU profile by stage (README "Where the time goes"). Not a test: it prints a table.
//
//   node --cpu-prof --cpu-prof-dir=DIR test/helpers/unbundled-cli.mjs analyze -f json --jobs 1 FILE > /dev/null
//
// (The CLI as tsc compiled it: bin/stalewrite.js runs one bundle, whose frames this cannot place
// in stages; a profile of it is refused.)
//   node bench/profile-stages.mjs DIR/*.cpuprofile [--functions 30]
//
// Each sample goes to one stage: `rules` when a rule is on its stack (with the state queries the
// rule makes), `report` when the report is (summaries, JSON), else the innermost of the project's
// files (timeline state, engine, byte reader, ingest, analyze loop); samples with no project frame
// are garbage collection or start-up and Node internals. Idle samples are left out.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { functions: { type: 'string', default: '0' } } });
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/profile-stages.mjs FILE.cpuprofile… [--functions N]\n');
  process.exit(2);
}

const REPORT_FNS = /^(resources|summarise|readinessOf|buildReport)$/;
function stageOf({ url = '', functionName: fn }) {
  if (url.includes('/dist/rules/')) return 'rules';
  if (url.includes('/dist/report/') || (/\/dist\/(engine|analyze)\.js$/.test(url) && REPORT_FNS.test(fn))) return 'report';
  if (url.includes('/dist/timeline/')) return 'timeline state';
  if (url.endsWith('/dist/engine.js')) return 'engine';
  if (url.includes('/dist/profiles/')) return 'byte reader';
  if (url.includes('/dist/ingest/')) return 'ingest';
  if (url.endsWith('/dist/analyze.js') || url.includes('/dist/model/') || url.endsWith('/dist/verdict.js')) return 'analyze loop, model';
  if (fn === '(garbage collector)') return 'garbage collection';
  return undefined;
}

for (const file of positionals) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  if (p.nodes.some((n) => n.callFrame.url.includes('/dist/bundle/'))) {
    process.stderr.write(`${file}: a profile of the bundled CLI (bin/stalewrite.js); profile test/helpers/unbundled-cli.mjs instead, whose frames name their files\n`);
    process.exit(2);
  }
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + p.timeDeltas[i]);
  const stages = new Map();
  const fns = new Map();
  let total = 0;
  for (const [id, t] of self) {
    const leaf = byId.get(id).callFrame;
    if (leaf.functionName === '(idle)') continue;
    total += t;
    const found = [];
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) found.push(stageOf(byId.get(cur).callFrame));
    const stage = ['rules', 'report'].find((s) => found.includes(s)) ?? found.find((s) => s !== undefined) ?? 'start-up, Node internals, other';
    stages.set(stage, (stages.get(stage) ?? 0) + t);
    const name = `${leaf.functionName || '(anonymous)'} ${leaf.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${leaf.lineNumber + 1}`;
    fns.set(name, (fns.get(name) ?? 0) + t);
  }
  const s = (us) => (us / 1e6).toFixed(2);
  console.log(`${file}: ${s(total)} s of samples\n\n| stage | s | share |\n|---|---|---|`);
  for (const [stage, t] of [...stages].sort((a, b) => b[1] - a[1])) console.log(`| ${stage} | ${s(t)} | ${((100 * t) / total).toFixed(0)} % |`);
  const top = Number(values.functions);
  if (top > 0) {
    console.log(`\nself time, top ${top} functions:`);
    for (const [name, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(t / 1e6).toFixed(3)}  ${name}`);
  }
  console.log('');
}
