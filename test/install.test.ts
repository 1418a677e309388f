// Installing outside the clone (issue 12, point 5), as the README's "Installing" says: `npm pack`,
// then `npm install -g --prefix <dir>` of the tarball, then the installed `stalewrite` run from
// another folder. Everything happens in a temporary directory that is removed afterwards; the
// user's global prefix is never touched. The dependencies come from npm's cache or the registry.
//
// The tarball is packed with --ignore-scripts from the dist/ that `npm test` has just built (a
// `prepare` run here would rebuild dist/ while other test files read it); `npm ci` and CI run
// `prepare` itself.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, ROOT } from './helpers/run.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
const dir = mkdtempSync(join(tmpdir(), 'stalewrite-install-'));
const prefix = join(dir, 'prefix');
const work = join(dir, 'elsewhere');
const bin = join(prefix, 'bin', 'stalewrite');

/** npm with no prefix, location or global settings inherited from an `npm test` around us. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  for (const key of Object.keys(env)) if (/^npm_config_(prefix|global_prefix|local_prefix|global|location|call|ignore_scripts)$/i.test(key)) delete env[key];
  return env;
}
function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, env: npmEnv(), encoding: 'utf8', timeout: 240000, stdio: ['ignore', 'pipe', 'pipe'] });
}
function run(args: string[]) {
  return spawnSync(bin, args, { cwd: work, encoding: 'utf8', timeout: 60000, env: { ...process.env, FORCE_COLOR: undefined } });
}

let files: string[] = [];
let tarball = '';

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is not built: run `node scripts/build.mjs` (npm test does) first');
  const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT)) as { filename: string; files: { path: string }[] }[];
  files = packed[0]!.files.map((f) => f.path);
  tarball = join(dir, packed[0]!.filename);
  npm(['install', '--global', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], dir);
  mkdirSync(work);
  copyFileSync(join(FIXTURES, 'article-unsafe.ndjson'), join(work, 'article-unsafe.ndjson'));
  copyFileSync(join(ROOT, 'examples', 'mapping', 'billing.json'), join(work, 'billing.json'));
  copyFileSync(join(ROOT, 'examples', 'mapping', 'billing.log'), join(work, 'billing.log'));
}, 300000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the packed tarball', () => {
  it('is named after the package and holds the built code (the CLI bundle with its licenses), the validators, the rule docs and nothing test-only', () => {
    expect(tarball.endsWith(`${pkg.name}-${pkg.version}.tgz`)).toBe(true);
    for (const f of ['bin/stalewrite.js', 'dist/cli/main.js', 'dist/bundle/stalewrite.js', 'dist/bundle/help.cjs', 'dist/bundle/locales/en.json', 'dist/bundle/THIRD-PARTY-LICENSES.md', 'dist/index.js', 'dist/index.d.ts', 'dist/ingest/parse-worker.js', 'dist/generated/event-validator.js', 'dist/generated/mapping-validator.js', 'docs/rules/accepted-stale-write.md', 'schema/report.schema.json', 'package.json', 'README.md']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => /^(src|test|scripts|fixtures|bench|examples|node_modules)\//.test(f))).toEqual([]);
  });
});

describe('stalewrite installed globally from the tarball, run from another folder', () => {
  it('finds the late write and exits 1', () => {
    const r = run(['analyze', 'article-unsafe.ndjson']);
    expect(r.status, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.findings.map((f: { rule: string }) => f.rule)).toContain('accepted-stale-write');
    expect(report.tool.version).toBe(pkg.version);
    const table = run(['analyze', '-f', 'table', 'article-unsafe.ndjson']);
    expect(table.status).toBe(1);
    expect(table.stdout).toContain('accepted-stale-write');
  });

  it('prints its version, explains a rule and loads a mapping (generated validator)', () => {
    const version = run(['--version']);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);
    const explain = run(['explain', 'stale-release']);
    expect(explain.status, explain.stderr).toBe(0);
    expect(explain.stdout).toMatch(/^stale-release \(error\)/);
    const mapped = run(['analyze', '--mapping', 'billing.json', 'billing.log']);
    expect(mapped.status, mapped.stderr).toBe(1);
    expect(JSON.parse(mapped.stdout).findings.map((f: { rule: string }) => f.rule)).toContain('accepted-stale-write');
  });

  it('installed only the runtime dependencies', () => {
    const installed = readdirSync(join(prefix, 'lib', 'node_modules', pkg.name, 'node_modules'));
    for (const dep of Object.keys(pkg.dependencies)) expect(installed, dep).toContain(dep);
    for (const dev of Object.keys(pkg.devDependencies)) expect(installed, dev).not.toContain(dev.split('/')[0]);
  });

  it('uninstalls', () => {
    npm(['uninstall', '--global', '--prefix', prefix, pkg.name], dir);
    expect(existsSync(bin)).toBe(false);
    expect(existsSync(join(prefix, 'lib', 'node_modules', pkg.name))).toBe(false);
  }, 120000);
});

describe('the README', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  it('has an "Installing" section with the commands tested above', () => {
    const start = readme.indexOf('\n## Installing\n');
    expect(start).toBeGreaterThan(0);
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    for (const s of ['npm pack', `npm install -g --ignore-scripts ./${pkg.name}-${pkg.version}.tgz`, 'stalewrite --version', `npm uninstall -g ${pkg.name}`, '--prefix']) expect(section, s).toContain(s);
  });

  it('suggests `npx stalewrite` only for use in the clone', () => {
    // Each use must say "clone" on its line or in the few lines before it.
    const lines = readme.split('\n');
    lines.forEach((line, i) => {
      if (!line.includes('npx stalewrite')) return;
      expect(lines.slice(Math.max(0, i - 6), i + 1).join('\n'), `README.md:${i + 1}: ${line}`).toMatch(/\bclone\b/);
    });
  });
});
