import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'stalewrite.js');
export const FIXTURES = join(ROOT, 'fixtures');

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the built CLI as a user would, optionally feeding stdin (`script`: another entry than bin/stalewrite.js). */
export function runCli(args: string[], options: { stdin?: string | Buffer; env?: Record<string, string | undefined>; cwd?: string; script?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...options.env };
    delete env.FORCE_COLOR;
    const child = spawn(process.execPath, [options.script ?? BIN, ...args], { cwd: options.cwd ?? ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    else child.stdin.end();
  });
}
