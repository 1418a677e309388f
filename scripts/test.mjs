#!/usr/bin/env node
// `npm test`: build, run every vitest test, then print the closing line `N passed, N failed`
// from vitest's JSON reporter (CI reads that line, not vitest's own summary). Not on a terminal,
// nothing it prints carries colour codes (see plain-env.mjs). For test/test-output.test.ts, which
// runs this script on a probe: STALEWRITE_TEST_NO_BUILD=1 skips the build, and
// STALEWRITE_TEST_RESULTS names the results file instead of .vitest-results.json.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { plainEnv } from './plain-env.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = process.env.STALEWRITE_TEST_RESULTS || join(root, '.vitest-results.json');
const env = plainEnv(process.env, process.stdout.isTTY === true && process.stderr.isTTY === true);
const bin = (name) => join(root, 'node_modules', '.bin', name);

const build = process.env.STALEWRITE_TEST_NO_BUILD === '1' ? { status: 0 } : spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit', env });
if (build.status !== 0) {
  console.log('build failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

rmSync(results, { force: true });
const args = ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${results}`, ...process.argv.slice(2)];
const run = spawnSync(bin('vitest'), args, { cwd: root, stdio: 'inherit', env });

if (!existsSync(results)) {
  console.log('vitest wrote no results');
  console.log('0 passed, 1 failed');
  process.exit(run.status || 1);
}
const r = JSON.parse(readFileSync(results, 'utf8'));
const passed = r.numPassedTests ?? 0;
// Suites that failed to load count as failures too.
const failed = (r.numFailedTests ?? 0) + (r.numRuntimeErrorTestSuites ?? 0);
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || run.status !== 0 ? 1 : 0);
