/** The command line. Thin: parse options, call the library, write the report, set the exit code. */
import { writeFile } from 'node:fs/promises';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { analyze } from '../analyze.js';
import { InputError } from '../ingest/open.js';
import { DEFAULT_MAX_LINE_BYTES } from '../ingest/lines.js';
import { StrictInputError, DEFAULT_MAX_PROBLEMS } from '../ingest/records.js';
import { DEFAULT_BUSY_THRESHOLD, DEFAULT_BUSY_WINDOW_MS, DEFAULT_CLOCK_SKEW_MS, DEFAULT_MAX_FINDINGS } from '../engine.js';
import { parseDuration } from '../model/time.js';
import type { Report, Severity } from '../model/report.js';
import { renderJson } from '../report/json.js';
import { renderTable } from '../report/table.js';
import { escapeTerminal } from '../report/escape.js';
import { renderRules } from './rules.js';
import { renderExplain, UnknownRuleError } from './explain.js';
import { VERSION } from '../version.js';

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_USAGE = 2;

const FORMATS = ['table', 'json'] as const;
const FAIL_ON = ['error', 'warning', 'info', 'none'] as const;

class UsageError extends Error {}

export async function main(argv: string[] = hideBin(process.argv)): Promise<void> {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  const color = process.stdout.isTTY === true && !process.env.NO_COLOR;

  const cli = yargs(argv)
    .scriptName('stalewrite')
    .usage('$0 <command> [options]\n\nFind stale writes in distributed-lock and fencing-token logs.')
    .command(
      ['analyze [files..]', '$0 [files..]'],
      'Analyse NDJSON logs of locks and writes; report stale writes, old-handle releases and writes without tokens',
      (y) =>
        y
          .positional('files', { type: 'string', array: true, describe: 'NDJSON files (gzip is detected); "-" or nothing reads stdin' })
          .option('format', { alias: 'f', choices: FORMATS, describe: 'Report format [default: table on a terminal, json otherwise]' })
          .option('output', { alias: 'o', type: 'string', describe: 'Write the report to FILE instead of stdout' })
          .option('fail-on', { choices: FAIL_ON, default: 'error' as const, describe: 'Exit 1 when a finding at or above this severity exists' })
          .option('strict', { type: 'boolean', default: false, describe: 'Exit 2 at the first invalid line' })
          .option('max-invalid', { type: 'number', describe: 'Exit 2 once more than N lines are invalid' })
          .option('max-line-bytes', { type: 'number', default: DEFAULT_MAX_LINE_BYTES, describe: 'Longer lines are reported as invalid and skipped' })
          .option('max-problems', { type: 'number', default: DEFAULT_MAX_PROBLEMS, describe: 'Invalid lines listed in the report (all are counted)' })
          .option('max-findings', { type: 'number', default: DEFAULT_MAX_FINDINGS, describe: 'Findings listed in the report (all are counted)' })
          .option('clock-skew', { type: 'string', default: `${DEFAULT_CLOCK_SKEW_MS}ms`, describe: 'Bound on clock skew between sources, e.g. 250ms, 1s' })
          .option('include-possible', { type: 'boolean', default: false, describe: 'Let findings of certainty "possible" count for --fail-on too' })
          .option('busy-window', { type: 'string', default: `${DEFAULT_BUSY_WINDOW_MS / 1000}s`, describe: 'busy-rate-rising: length of the time windows compared' })
          .option('busy-threshold', { type: 'number', default: DEFAULT_BUSY_THRESHOLD, describe: 'busy-rate-rising: rise of the busy share over the first window that is reported (0-1)' })
          .option('rule', { type: 'string', describe: 'Run only these rules: --rule a --rule b, or --rule a,b (see `stalewrite rules`)' })
          .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'Do not print invalid lines to stderr' })
          .example('$0 analyze fixtures/article-unsafe.ndjson', 'Find the late write in the article\'s incident')
          .example('kubectl logs deploy/worker | $0 analyze -', 'Read stdin')
          .example('$0 analyze authority.ndjson workers.ndjson.gz db.ndjson', 'Merge several sources by timestamp')
          .example('$0 analyze --format json -o report.json logs/*.ndjson', 'Write the JSON report to a file')
          .example('$0 analyze --fail-on warning --strict ci.ndjson', 'Be strict in CI'),
      async (args) => {
        process.exitCode = await runAnalyze(args, color);
      },
    )
    .command(
      'rules',
      'Print the rule table (generated from the rule modules)',
      (y) =>
        y
          .option('format', { alias: 'f', choices: ['table', 'json', 'markdown'] as const, default: 'table' as const, describe: 'Output format' })
          .example('$0 rules', 'The table: id, severity, symptom, cause, check, action')
          .example('$0 rules --format markdown', 'The same as a Markdown table'),
      (args) => {
        process.stdout.write(renderRules(args.format, color));
      },
    )
    .command(
      'explain <rule>',
      "Explain a rule: its table row, why it matters, a bad log and a good log",
      (y) =>
        y
          .positional('rule', { type: 'string', demandOption: true, describe: 'Rule id (see `stalewrite rules`)' })
          .example('$0 explain accepted-stale-write', 'What a late accepted write means and how to fix it'),
      (args) => {
        process.stdout.write(renderExplain(args.rule));
      },
    )
    .example('$0 analyze fixtures/article-unsafe.ndjson', 'Analyse a log file')
    .example('$0 explain stale-release', 'Explain a rule')
    .example('$0 rules', 'List the rules')
    .epilogue('Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage error, unreadable input or strict input failure.')
    .version(VERSION)
    .help()
    .alias('h', 'help')
    .strict()
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .fail((msg, err) => {
      if (err !== undefined && err !== null && !(err instanceof UsageError) && !(err instanceof UnknownRuleError)) throw err;
      process.stderr.write(`stalewrite: ${msg ?? err?.message}\nRun "stalewrite --help" for usage.\n`);
      process.exit(EXIT_USAGE);
    });

  try {
    await cli.parseAsync();
  } catch (err) {
    if (err instanceof InputError || err instanceof StrictInputError || err instanceof UsageError || err instanceof UnknownRuleError) {
      process.stderr.write(`stalewrite: ${escapeTerminal(err.message)}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    throw err;
  }
}

interface AnalyzeArgs {
  files?: string[];
  format?: (typeof FORMATS)[number];
  output?: string;
  'fail-on': (typeof FAIL_ON)[number];
  strict: boolean;
  'max-invalid'?: number;
  'max-line-bytes': number;
  'max-problems': number;
  'max-findings': number;
  'clock-skew': string;
  'include-possible': boolean;
  'busy-window': string;
  'busy-threshold': number;
  rule?: string | string[];
  quiet: boolean;
}

async function runAnalyze(args: AnalyzeArgs, color: boolean): Promise<number> {
  const clockSkewMs = parseDuration(args['clock-skew']);
  if (clockSkewMs === undefined) throw new UsageError(`--clock-skew "${args['clock-skew']}" is not a duration such as 250ms or 1s`);
  const busyWindowMs = parseDuration(args['busy-window']);
  if (busyWindowMs === undefined || busyWindowMs <= 0) throw new UsageError(`--busy-window "${args['busy-window']}" is not a positive duration such as 60s or 5m`);
  const busyThreshold = args['busy-threshold'];
  if (!(busyThreshold > 0 && busyThreshold <= 1)) throw new UsageError('--busy-threshold must be a number above 0 and at most 1');
  for (const [name, v, min] of [['max-invalid', args['max-invalid'], 0], ['max-line-bytes', args['max-line-bytes'], 1], ['max-problems', args['max-problems'], 0], ['max-findings', args['max-findings'], 0]] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v < min)) throw new UsageError(`--${name} must be a whole number ≥ ${min}`);
  }
  const files = args.files === undefined || args.files.length === 0 ? ['-'] : args.files;
  if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin ("-") can be given only once');
  const format = args.format ?? (args.output === undefined && process.stdout.isTTY ? 'table' : 'json');

  let shown = 0;
  const report = await analyze({
    files,
    strict: args.strict,
    maxInvalid: args['max-invalid'],
    maxLineBytes: args['max-line-bytes'],
    maxProblems: args['max-problems'],
    maxFindings: args['max-findings'],
    clockSkewMs,
    busyWindowMs,
    busyThreshold,
    rules: args.rule === undefined ? undefined : ([] as string[]).concat(args.rule).flatMap((r) => r.split(',')).map((r) => r.trim()).filter((r) => r !== ''),
    onProblem: args.quiet
      ? undefined
      : (p) => {
          if (++shown <= 10) process.stderr.write(`stalewrite: ${escapeTerminal(p.file)}:${p.line}: ${escapeTerminal(p.reason)}\n`);
        },
  });
  if (!args.quiet && shown > 10) process.stderr.write(`stalewrite: ${shown - 10} more invalid lines (${shown} in all; listed in the report)\n`);
  for (const f of report.input.files) {
    if (f.error !== undefined) process.stderr.write(`stalewrite: ${escapeTerminal(f.error)}\n`);
  }

  const text = format === 'json' ? renderJson(report) : renderTable(report, { color: color && args.output === undefined, width: args.output === undefined && process.stdout.isTTY ? process.stdout.columns : undefined });
  if (args.output !== undefined) await writeFile(args.output, text);
  else await writeOut(text);
  if (report.input.files.some((f) => f.error !== undefined)) return EXIT_USAGE;
  return exitCodeFor(report, args['fail-on'], args['include-possible']);
}

/**
 * 1 when a finding at or above the threshold exists, else 0. Findings whose certainty is only
 * `possible` count only with includePossible.
 */
export function exitCodeFor(report: Report, failOn: Severity | 'none', includePossible = false): number {
  if (failOn === 'none') return EXIT_OK;
  const count = (s: Record<Severity, number>) => (failOn === 'error' ? s.error : failOn === 'warning' ? s.error + s.warning : s.error + s.warning + s.info);
  const n = count(report.summary.bySeverity) - (includePossible ? 0 : count(report.summary.possibleBySeverity));
  return n > 0 ? EXIT_FINDINGS : EXIT_OK;
}

function writeOut(text: string): Promise<void> {
  return new Promise((resolve) => {
    if (process.stdout.write(text)) resolve();
    else process.stdout.once('drain', () => resolve());
  });
}
