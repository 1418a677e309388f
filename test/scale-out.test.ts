/**
 * README "Scaling out", run as written: the GNU parallel recipe (Debian's `parallel`; .ci/run
 * installs it) on held-out random histories and on every fixture, against a single run; the same
 * with --sshlogin : (the local host, as a remote one is named); and the Kubernetes Indexed Job of
 * examples/kubernetes: its manifests parse, and their commands work as given.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, type AnalyzeOptions } from '../src/analyze.js';
import { analysisOptions, findCases, readExpectation } from '../src/check/cases.js';
import { DEFAULT_POLICY, exitCodeFor } from '../src/model/policy.js';
import { renderJson } from '../src/report/json.js';
import { historyArb } from './helpers/histories.js';
import { BIN, FIXTURES, ROOT } from './helpers/run.js';

const haveParallel = spawnSync('parallel', ['--version'], { encoding: 'utf8' }).status === 0;
if (!haveParallel && process.env.CI) throw new Error('GNU parallel is missing: .ci/run installs it (Debian package parallel)');

const work = mkdtempSync(join(tmpdir(), 'sw-scale-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A `stalewrite` on PATH, as installed: the built CLI of this clone. */
const bin = join(work, 'bin');
mkdirSync(bin);
writeFileSync(join(bin, 'stalewrite'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
chmodSync(join(bin, 'stalewrite'), 0o755);
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, LC_ALL: 'C', HOME: work };
// GNU parallel's citation notice, once per user: not for a test.
mkdirSync(join(work, '.parallel'));
writeFileSync(join(work, '.parallel', 'will-cite'), '');

function sh(script: string, cwd: string, extra: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync('bash', ['-c', script], { cwd, env: { ...env, ...extra }, encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The README's recipe, word for word but for the inputs and options. */
const recipe = (n: number, options: string, inputs: string, parallelFlags = '') =>
  `parallel ${parallelFlags} stalewrite analyze ${options} --partition {}/${n} -o part-{}.json ${inputs} ::: ${Array.from({ length: n }, (_, i) => i).join(' ')} && stalewrite merge part-*.json`;

/** The single run's JSON and exit code, for the same inputs (names as given) and options. */
async function single(options: AnalyzeOptions): Promise<{ json: string; code: number }> {
  const report = await analyze(options);
  return { json: renderJson(report), code: exitCodeFor(report, DEFAULT_POLICY) };
}

describe.skipIf(!haveParallel)('GNU parallel', () => {
  it('the recipe on held-out histories gives the single run, also with --sshlogin :', async () => {
    // Held out: a seed no other property test uses, in timestamp order (where a merge is exact by design).
    const histories = fc.sample(historyArb({ disorder: false }), { seed: 20260301, numRuns: 6 });
    let findings = 0;
    for (const [k, h] of histories.entries()) {
      const dir = join(work, `h${k}`);
      mkdirSync(join(dir, 'logs'), { recursive: true });
      for (const f of h.files) writeFileSync(join(dir, 'logs', f.name), f.lines.join('\n') + '\n');
      // The single run, as a user runs it.
      const one = sh('stalewrite analyze -q -f json logs/*', dir);
      const expected = { json: one.stdout, code: one.code };
      findings += (JSON.parse(expected.json) as { findings: unknown[] }).findings.length;
      const r = sh(recipe(4, '', 'logs/*', k % 3 === 0 ? '--sshlogin :' : ''), dir);
      // stderr has the partitions' notes of invalid lines (as a single run has), never a failed merge.
      expect(r.stderr).not.toMatch(/cannot merge|may differ/);
      expect(r.stdout).toBe(expected.json);
      expect(r.code).toBe(expected.code);
    }
    expect(findings).toBeGreaterThan(2);
  }, 240_000);

  it('the recipe on every fixture gives the single run', async () => {
    const cases = findCases([FIXTURES]);
    const scripts: string[] = [];
    const expected: { dir: string; json: string; code: number }[] = [];
    for (const [k, c] of cases.entries()) {
      const o = existsSync(c.expectPath) ? readExpectation(c.expectPath).options : undefined;
      const flags = [
        o?.clockSkewMs !== undefined ? `--clock-skew ${o.clockSkewMs}ms` : '',
        o?.busyWindowMs !== undefined ? `--busy-window ${o.busyWindowMs}ms` : '',
        o?.busyThreshold !== undefined ? `--busy-threshold ${o.busyThreshold}` : '',
        o?.mapping !== undefined ? `--mapping '${join(c.expectPath, '..', o.mapping)}'` : o?.profile !== undefined ? `--profile ${o.profile}` : '',
        o?.klogYear !== undefined ? `--klog-year ${o.klogYear}` : '',
        o?.klogZone !== undefined ? `--klog-zone '${o.klogZone}'` : '',
        o?.log4jZone !== undefined ? `--log4j-zone '${o.log4jZone}'` : '',
      ].join(' ');
      const dir = join(work, `f${k}`);
      mkdirSync(dir);
      const files = c.files.map((f) => `'${f}'`).join(' ');
      writeFileSync(join(dir, 'run.sh'), `cd '${dir}' && ${recipe(2, `-q ${flags}`, files)} > merged.json 2> stderr; echo $? > code\n`);
      scripts.push(join(dir, 'run.sh'));
      const s = await single({ files: c.files, ...analysisOptions(c, existsSync(c.expectPath) ? readExpectation(c.expectPath) : undefined) });
      expected.push({ dir, ...s });
    }
    // All cases at once, two at a time (each runs its own parallel for its partitions).
    const r = sh(`parallel -j2 bash {} ::: ${scripts.map((s) => `'${s}'`).join(' ')}`, work);
    expect(r.code).toBe(0);
    for (const e of expected) {
      expect(readFileSync(join(e.dir, 'merged.json'), 'utf8'), e.dir).toBe(e.json);
      expect(Number(readFileSync(join(e.dir, 'code'), 'utf8')), e.dir).toBe(e.code);
    }
  }, 600_000);
});

// ---------------------------------------------------------------------------------------------
// Kubernetes: a YAML subset parser (block mappings and sequences, plain and quoted scalars,
// comments, documents): enough for the manifests, and strict about anything else.
// ---------------------------------------------------------------------------------------------

type Yaml = string | number | boolean | null | Yaml[] | { [k: string]: Yaml };

function parseYaml(text: string): Yaml[] {
  return text
    .split(/^---$/m)
    .map((doc) => {
      const lines = doc
        .split('\n')
        .map((raw, n) => {
          if (raw.includes('\t')) throw new Error(`line ${n + 1}: a tab`);
          const t = raw.replace(/^\s*#.*$/, '').replace(/\s+#\s.*$/, '');
          return { indent: t.length - t.trimStart().length, text: t.trim() };
        })
        .filter((l) => l.text !== '');
      if (lines.length === 0) return null;
      const [value, next] = block(lines, 0, lines[0]!.indent);
      if (next !== lines.length) throw new Error(`unexpected line: ${lines[next]!.text}`);
      return value;
    })
    .filter((d) => d !== null);
}

function block(lines: { indent: number; text: string }[], i: number, indent: number): [Yaml, number] {
  const seq = lines[i]!.text === '-' || lines[i]!.text.startsWith('- ');
  if (seq) {
    const out: Yaml[] = [];
    while (i < lines.length && lines[i]!.indent === indent && lines[i]!.text.startsWith('- ')) {
      const item = lines[i]!.text.slice(2).trim();
      if (/^[^"'][^:]*:( |$)/.test(item)) {
        // A mapping that starts on the item's line.
        const copy = lines.slice();
        copy[i] = { indent: indent + 2, text: item };
        const [v, next] = mapping(copy, i, indent + 2);
        out.push(v);
        i = next;
      } else {
        out.push(scalar(item));
        i++;
      }
    }
    return [out, i];
  }
  return mapping(lines, i, indent);
}

function mapping(lines: { indent: number; text: string }[], i: number, indent: number): [Yaml, number] {
  const out: { [k: string]: Yaml } = {};
  while (i < lines.length && lines[i]!.indent === indent && !lines[i]!.text.startsWith('- ')) {
    const m = /^([A-Za-z0-9_.-]+):(?: (.*))?$/.exec(lines[i]!.text);
    if (m === null) throw new Error(`not a key: ${lines[i]!.text}`);
    if (Object.prototype.hasOwnProperty.call(out, m[1]!)) throw new Error(`key ${m[1]} twice`);
    if (m[2] !== undefined && m[2] !== '') {
      out[m[1]!] = scalar(m[2]);
      i++;
    } else if (i + 1 < lines.length && lines[i + 1]!.indent > indent) {
      const [v, next] = block(lines, i + 1, lines[i + 1]!.indent);
      out[m[1]!] = v;
      i = next;
    } else {
      out[m[1]!] = null;
      i++;
    }
  }
  return [out, i];
}

function scalar(t: string): Yaml {
  if (/^[[{&*!|>%@`]/.test(t)) throw new Error(`not in the subset: ${t}`);
  if (t.startsWith('"')) return JSON.parse(t) as string;
  if (t.startsWith("'")) {
    if (!t.endsWith("'")) throw new Error(`unclosed quote: ${t}`);
    return t.slice(1, -1).replace(/''/g, "'");
  }
  if (t === 'true' || t === 'false') return t === 'true';
  if (t === 'null' || t === '~') return null;
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}

const dig = (v: Yaml, ...path: (string | number)[]): Yaml => path.reduce<Yaml>((o, k) => (o as Record<string | number, Yaml>)[k]!, v);

describe('Kubernetes Indexed Job (examples/kubernetes)', () => {
  const dir = join(ROOT, 'examples', 'kubernetes');
  const [partitions] = parseYaml(readFileSync(join(dir, 'partitions.yaml'), 'utf8'));
  const [merge] = parseYaml(readFileSync(join(dir, 'merge.yaml'), 'utf8'));

  it('parses: an Indexed Job of N completions, N at a time, and a merge Job that is not retried', () => {
    expect(parseYaml('a: 1\nb:\n  - x\n  - y: "2"\n    z: true\n')).toEqual([{ a: 1, b: ['x', { y: '2', z: true }] }]);
    expect(() => parseYaml('a: [1, 2]\n')).toThrow(/subset/);
    expect(dig(partitions!, 'kind')).toBe('Job');
    expect(dig(partitions!, 'spec', 'completionMode')).toBe('Indexed');
    const n = Number((dig(partitions!, 'spec', 'template', 'spec', 'containers', 0, 'env') as { name: string; value: string }[]).find((e) => e.name === 'PARTITIONS')!.value);
    expect(dig(partitions!, 'spec', 'completions')).toBe(n);
    expect(dig(partitions!, 'spec', 'parallelism')).toBe(n);
    expect(dig(partitions!, 'spec', 'template', 'spec', 'restartPolicy')).toBe('Never');
    expect(dig(merge!, 'kind')).toBe('Job');
    expect(dig(merge!, 'spec', 'backoffLimit')).toBe(0);
    const command = dig(partitions!, 'spec', 'template', 'spec', 'containers', 0, 'command') as string[];
    expect(command.slice(0, 2)).toEqual(['sh', '-c']);
    expect(command[2]).toContain('--partition "$JOB_COMPLETION_INDEX/$PARTITIONS"');
  });

  it('names this version of stalewrite in its images and its install line (merge refuses parts of another version; 0.2.0 had no --partition)', () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    for (const job of [partitions!, merge!]) expect(dig(job, 'spec', 'template', 'spec', 'containers', 0, 'image')).toBe(`registry.example.com/stalewrite:${version}`);
    const text = readFileSync(join(dir, 'partitions.yaml'), 'utf8') + readFileSync(join(dir, 'merge.yaml'), 'utf8');
    expect([...text.matchAll(/stalewrite[:@](\d+\.\d+\.\d+)/g)].map((m) => m[1])).toEqual(expect.arrayContaining([version]));
    expect([...text.matchAll(/stalewrite[:@](\d+\.\d+\.\d+)/g)].every((m) => m[1] === version)).toBe(true);
    expect(text).toContain(`npm install -g stalewrite@${version}`);
  });

  it('its commands work as given: N pods with JOB_COMPLETION_INDEX, then the merge, equal a single run', async () => {
    const container = (job: Yaml) => dig(job, 'spec', 'template', 'spec', 'containers', 0) as { command: string[]; env: { name: string; value: string }[] };
    const p = container(partitions!);
    const m = container(merge!);
    const logs = join(work, 'k8s-logs');
    const reports = join(work, 'k8s-reports');
    mkdirSync(logs);
    mkdirSync(reports);
    // Logs as a shared volume holds them: plain and gzip.
    writeFileSync(join(logs, 'authority.ndjson'), readFileSync(join(FIXTURES, 'mixed-incidents.ndjson')));
    writeFileSync(join(logs, 'workers.ndjson.gz'), gzipSync(readFileSync(join(FIXTURES, 'views.ndjson'))));
    // The pods' environment: the manifest's, with the volumes where this test has them.
    const podEnv = (c: typeof p) => Object.fromEntries(c.env.map((e) => [e.name, e.name === 'LOGS' ? logs : e.name === 'REPORTS' ? reports : e.value]));
    const n = Number(podEnv(p).PARTITIONS);
    for (let i = 0; i < n; i++) {
      const r = spawnSync(p.command[0]!, p.command.slice(1), { env: { ...env, ...podEnv(p), JOB_COMPLETION_INDEX: String(i) }, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
    const r = spawnSync(m.command[0]!, m.command.slice(1), { env: { ...env, ...podEnv(m) }, encoding: 'utf8' });
    const expected = await single({ files: readdirSync(logs).sort().map((f) => join(logs, f)) });
    expect(readFileSync(join(reports, 'report.json'), 'utf8')).toBe(expected.json);
    expect(r.status).toBe(expected.code);
  }, 120_000);
});
