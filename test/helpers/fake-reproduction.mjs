#!/usr/bin/env node
// A stand-in for examples/*-postgres/run.mjs, for test/reproduction-helper.test.ts: it says its
// work dir as startRun() does, and starts, in its own process group (none detached), a child that
// carries the run's marker and a paused one that does not (as PostgreSQL's renamed backends and a
// SIGSTOPped worker would be). Then it never finishes, or with --leak it prints a result and
// exits, leaving both children running.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

const work = mkdtempSync(join(tmpdir(), 'stalewrite-fake-run-'));
const marked = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', basename(work)], { stdio: 'ignore' });
const unmarked = spawn('sleep', ['600'], { stdio: 'ignore' });
unmarked.kill('SIGSTOP');
process.stderr.write(`[example fake] work dir ${work}\n`);
if (process.argv.includes('--leak')) {
  marked.unref();
  unmarked.unref();
  process.stdout.write(JSON.stringify({ ok: true }) + '\n');
} else {
  setInterval(() => {}, 1000);
}
