/** The command line. Thin: parse options, call the library, write the report, set the exit code. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { analyzeView, checkReadable, type ProgressInfo } from '../analyze.js';
import { InputError, reasonOf } from '../ingest/open.js';
import { OptionError } from '../model/options.js';
import { DEFAULT_MAX_LINE_BYTES } from '../ingest/lines.js';
import { StrictInputError, DEFAULT_MAX_PROBLEMS } from '../ingest/records.js';
import { DEFAULT_BUSY_THRESHOLD, DEFAULT_BUSY_WINDOW_MS, DEFAULT_CLOCK_SKEW_MS, DEFAULT_MAX_FINDINGS, DEFAULT_MAX_RESOURCES } from '../engine.js';
import { parseDuration } from '../model/time.js';
import type { Report, ReportView } from '../model/report.js';
import { findingLine, summaryLineChunks } from '../report/ndjson.js';
import type { FailPolicy } from '../model/policy.js';
import { Progress } from './progress.js';
import type { CaseResult } from '../check/cases.js';
import { canonical } from '../profiles/canonical.js';
import { MappingError, PROFILE_NAMES, type ProfileName } from '../profiles/names.js';
import type { Profile } from '../profiles/types.js';
import { escapeTerminal } from '../report/escape.js';
import type { MarkdownOptions } from '../report/markdown.js';
import { MAX_DIAGRAMS } from '../report/mermaid.js';
import { renderExplain, UnknownRuleError } from './explain.js';
import { SERVICE_IDS } from '../model/services.js';
import { VERSION } from '../version.js';
import { checkMistypedCommand, UnknownCommandError, unknownOptions, unknownOptionsMessage } from './did-you-mean.js';
import { appendSummaryChunks, InputSet, interruptedNote, onStdoutError, openPlanned, OutputError, planOutput, stdoutSink, writeStdout, type OutputPlan, type Sink } from './output.js';

import { EXIT_FINDINGS, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, exitCodeFor } from '../model/policy.js';
import { noEventsParts } from '../verdict.js';
import { capYoungGeneration } from './young-generation.js';
import { MAX_PARTITIONS } from '../partition/hash.js';
export { EXIT_FINDINGS, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE };

const FORMATS = ['table', 'json', 'markdown', 'html', 'junit', 'github', 'ndjson'] as const;
const FAIL_ON = ['error', 'warning', 'info', 'none'] as const;
/** The commands, for "did you mean" and for naming the right --help. */
const COMMANDS = ['analyze', 'merge', 'rules', 'explain', 'timeline', 'check', 'map'] as const;
const COMMAND_ALIASES: Record<string, (typeof COMMANDS)[number]> = { analyse: 'analyze' };

class UsageError extends Error {}

/** Stands for a lone "-" while yargs parses (see main). */
const STDIN_PLACEHOLDER = '\u0000-stdin-\u0000';

function restoreStdin(args: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(args)) {
    if (value === STDIN_PLACEHOLDER) args[key] = '-';
    else if (Array.isArray(value) && value.includes(STDIN_PLACEHOLDER)) args[key] = value.map((v) => (v === STDIN_PLACEHOLDER ? '-' : v));
  }
}

/** Options that choose how records become events; shared by analyze, timeline and map. */
const PROFILE_OPTIONS = {
  profile: { alias: 'p', choices: PROFILE_NAMES, default: 'canonical' as ProfileName, describe: 'How records become events: a built-in profile (auto picks one per file)' },
  mapping: { alias: 'm', type: 'string', describe: 'A mapping file for your own log fields (see README "Your own logs"); replaces --profile' },
  'klog-year': { type: 'number', describe: 'k8s-leaderelection: the year klog text lines lack [default: this year]' },
  'klog-zone': { type: 'string', describe: 'k8s-leaderelection: the zone klog text lines lack, e.g. Z or +02:00 [default: Z]' },
  'log4j-zone': { type: 'string', describe: 'zookeeper: the zone of Java log timestamps written without one (%d{ISO8601}), e.g. Z or +02:00 [default: Z]' },
} as const;

interface ProfileArgs {
  profile: ProfileName;
  mapping?: string;
  'klog-year'?: number;
  'klog-zone'?: string;
  'log4j-zone'?: string;
}

/** The profile asked for; the mapping machinery is loaded only for other profiles than canonical. */
async function profileFrom(args: ProfileArgs): Promise<Profile> {
  const zone = args['klog-zone'];
  if (zone !== undefined && !/^(Z|[+-]\d{2}:\d{2})$/.test(zone)) throw new UsageError(`--klog-zone "${zone}" is not Z or an offset such as +02:00`);
  const year = args['klog-year'];
  if (year !== undefined && !(Number.isInteger(year) && year >= 1970 && year <= 9999)) throw new UsageError('--klog-year must be a year such as 2026');
  const klog = { year, zone };
  const log4jZone = args['log4j-zone'];
  if (log4jZone !== undefined && !/^(Z|[+-]\d{2}:\d{2})$/.test(log4jZone)) throw new UsageError(`--log4j-zone "${log4jZone}" is not Z or an offset such as +02:00`);
  const log4j = { zone: log4jZone };
  if (args.mapping === undefined && args.profile === 'canonical') return canonical;
  const { getProfile, loadMapping } = await import('../profiles/index.js');
  if (args.mapping !== undefined) return loadMapping(args.mapping, { klog, log4j });
  return getProfile(args.profile, { klog, log4j });
}

export async function main(argv: string[] = hideBin(process.argv)): Promise<void> {
  // EPIPE (`| head`) is quiet; any other write error (`> /dev/full`) is one line and exit 2.
  process.stdout.on('error', onStdoutError);
  const color = process.stdout.isTTY === true && !process.env.NO_COLOR;
  // Interrupted mid-stream: a short message and the conventional exit code, no stack trace.
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      // Temporary report files are removed first: an earlier report at -o stays as it was.
      process.stderr.write(`\nstalewrite: interrupted (${signal}); ${interruptedNote()}\n`);
      process.exit(code);
    });
  }

  // yargs' parser drops a lone "-" (stdin) from positionals: `analyze a.ndjson -` read only
  // a.ndjson. It is passed through as a placeholder and turned back into "-" before any handler.
  const cli = yargs(argv.map((a) => (a === '-' ? STDIN_PLACEHOLDER : a)))
    .middleware(restoreStdin, true)
    .scriptName('stalewrite')
    .usage('$0 <command> [options]\n\nFind stale writes in distributed-lock and fencing-token logs.')
    .command(
      ['analyze [files..]', 'analyse', '$0 [files..]'],
      'Analyse NDJSON logs of locks and writes; report stale writes, old-handle releases and writes without tokens',
      (y) =>
        y
          .positional('files', { type: 'string', array: true, describe: 'NDJSON files (gzip is detected); "-" or nothing reads stdin' })
          .option('format', { alias: 'f', choices: FORMATS, describe: 'Report format [default: table on a terminal, json otherwise]. ndjson streams findings as they are found' })
          .option('output', { alias: 'o', type: 'string', describe: 'Write the report to FILE instead of stdout: atomically (a temporary file beside it, renamed over FILE once complete), never over an input. -f ndjson writes FILE in place as it goes; a FIFO or device is written in place' })
          .option('fail-on', { choices: FAIL_ON, default: 'error' as const, describe: 'Exit 1 when a finding at or above this severity exists' })
          .option('strict', { type: 'boolean', default: false, describe: 'Exit 2 at the first invalid line' })
          .option('max-invalid', { type: 'number', describe: 'Exit 2 once more than N lines are invalid' })
          .option('max-line-bytes', { type: 'number', default: DEFAULT_MAX_LINE_BYTES, describe: 'Longer lines are reported as invalid and skipped' })
          .option('max-problems', { type: 'number', default: DEFAULT_MAX_PROBLEMS, describe: 'Invalid lines listed in the report (all are counted)' })
          .option('max-findings', { type: 'number', default: DEFAULT_MAX_FINDINGS, describe: 'Findings listed in the report (all are counted)' })
          .option('clock-skew', { type: 'string', default: `${DEFAULT_CLOCK_SKEW_MS}ms`, describe: 'Bound on clock skew between sources, e.g. 250ms, 1s' })
          .option('include-possible', { type: 'boolean', default: false, describe: 'Count findings of certainty "possible" as confirmed ones for --fail-on (exit 1 instead of 3)' })
          .option('allow-inconclusive', { type: 'boolean', default: false, describe: 'Exit 0 instead of 3 when the only findings at or above --fail-on are "possible" (the headline still says inconclusive)' })
          .option('require-tested', { type: 'boolean', default: false, describe: 'Exit 3 when the verdict is untested or unconfirmed: the logs did not show a stale request explicitly rejected' })
          .option('allow-empty', { type: 'boolean', default: false, describe: 'Exit 0 (verdict untested) instead of 2 when the input yields no event at all' })
          .option('busy-window', { type: 'string', default: `${DEFAULT_BUSY_WINDOW_MS / 1000}s`, describe: 'busy-rate-rising: length of the time windows compared' })
          .option('busy-threshold', { type: 'number', default: DEFAULT_BUSY_THRESHOLD, describe: 'busy-rate-rising: rise of the busy share over the first window that is reported (0-1)' })
          .option('rule', { type: 'string', describe: 'Run only these rules: --rule a --rule b, or --rule a,b (see `stalewrite rules`)' })
          .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'Do not print invalid lines to stderr' })
          .options(PROFILE_OPTIONS)
          .option('all-resources', { type: 'boolean', default: false, describe: 'html: draw every resource, not only those with findings' })
          .option('max-drawn', { type: 'number', default: 50, describe: 'html: resources drawn at most, worst first (the page says how many were left out)' })
          .option('max-diagrams', { type: 'number', default: MAX_DIAGRAMS, describe: 'markdown: findings given a Mermaid sequence diagram at most (the others say they have none)' })
          .option('max-resources', { type: 'number', default: DEFAULT_MAX_RESOURCES, describe: 'Resources tracked at most; past it, events of new resources are not analysed and the run exits 2' })
          .option('jobs', { alias: 'j', type: 'string', default: 'auto', describe: 'Analyse on N threads, each a partition of the resources, merged into the same report: a number, or auto (every core, at most 8, for files of 64 MiB or more in all on 3 or more cores; one thread on 2 cores, for stdin, --strict, --max-invalid and -f ndjson). See README "Scaling out"' })
          .option('workers', { type: 'string', hidden: true, describe: 'Replaced by --jobs' })
          .option('progress', { type: 'boolean', describe: 'Show progress on stderr [default: when stderr is a terminal and CI is not set]' })
          .option('partition', { type: 'string', describe: 'Analyse only partition I of N (I from 0): the resources whose key hashes to it. Writes the JSON report that `stalewrite merge` combines, and exits 0 once it is written (2 if the run failed). See README "Scaling out"' })
          .option('with-timelines', { type: 'boolean', default: false, describe: 'With --partition: include the event histories that `merge -f html` draws (--all-resources, --max-drawn)' })
          .example('$0 analyze fixtures/article-unsafe.ndjson', 'Find the late write in the article\'s incident')
          .example('kubectl logs deploy/worker | $0 analyze -', 'Read stdin')
          .example('$0 analyze authority.ndjson workers.ndjson.gz db.ndjson', 'Merge several sources by timestamp')
          .example('$0 analyze --format json -o report.json logs/*.ndjson', 'Write the JSON report to a file')
          .example('$0 analyze --fail-on warning --strict ci.ndjson', 'Be strict in CI')
          .example('$0 analyze -f markdown -o postmortem.md logs/*.ndjson.gz', 'A report to paste into the postmortem')
          .example('$0 analyze -f html -o incident.html logs/*', 'A self-contained page: each resource\'s lanes opened on the evidence, details on hover')
          .example('$0 analyze -f html --max-drawn 10000 -o big.html logs/*', 'Draw every resource of a big incident (cards drawn as they scroll into view)')
          .example('$0 analyze -f junit -o stalewrite.xml chaos.ndjson', 'JUnit XML for CI test reports')
          .example('$0 analyze -f github chaos.ndjson', 'GitHub Actions annotations (+ $GITHUB_STEP_SUMMARY)')
          .example('tail -F app.log | $0 analyze -f ndjson -', 'Alert on each finding as it happens')
          .example('parallel $0 analyze --partition {}/4 -o part-{}.json logs/* ::: 0 1 2 3 && $0 merge part-*.json', 'Four partitions (on other hosts with --sshlogin), then one report'),
      async (args) => {
        // `stalewrite anlyze`: the default command got a mistyped command name as its file.
        if (args._.length === 0) checkMistypedCommand(args.files, COMMANDS, existsSync);
        // The young generation held at 8 MB semi-spaces (young-generation.ts) through the report.
        const uncap = capYoungGeneration();
        try {
          process.exitCode = await runAnalyze(args, color);
        } finally {
          uncap();
        }
      },
    )
    .command(
      'merge <reports..>',
      'Merge the JSON reports of the partitions of one run (analyze --partition I/N) into the report one run would have written',
      (y) =>
        y
          .positional('reports', { type: 'string', array: true, demandOption: true, describe: 'The N partition reports, in any order' })
          .option('format', { alias: 'f', choices: FORMATS, describe: 'Report format [default: table on a terminal, json otherwise]' })
          .option('output', { alias: 'o', type: 'string', describe: 'Write the report to FILE instead of stdout (atomically; never over one of the reports)' })
          .option('fail-on', { choices: FAIL_ON, default: 'error' as const, describe: 'Exit 1 when a finding at or above this severity exists' })
          .option('include-possible', { type: 'boolean', default: false, describe: 'Count findings of certainty "possible" as confirmed ones for --fail-on' })
          .option('allow-inconclusive', { type: 'boolean', default: false, describe: 'Exit 0 instead of 3 when the only findings at or above --fail-on are "possible"' })
          .option('require-tested', { type: 'boolean', default: false, describe: 'Exit 3 when the verdict is untested or unconfirmed' })
          .option('allow-empty', { type: 'boolean', default: false, describe: 'Exit 0 (verdict untested) instead of 2 when the input yielded no event at all' })
          .option('max-diagrams', { type: 'number', default: MAX_DIAGRAMS, describe: 'markdown: findings given a Mermaid sequence diagram at most' })
          .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'Fewer notes on stderr' })
          .example('parallel $0 analyze --partition {}/4 -o part-{}.json logs/* ::: 0 1 2 3 && $0 merge part-*.json', 'Four partitions, then the report of one run')
          .example('$0 merge -f html -o incident.html part-*.json', 'An html report (the partitions ran with --with-timelines)'),
      async (args) => {
        process.exitCode = await runMerge(args, color);
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
      async (args) => {
        const { renderRules } = await import('./rules.js');
        process.stdout.write(renderRules(args.format, color));
      },
    )
    .command(
      'explain <rule>',
      "Explain a rule: its table row, why it matters, a bad log and a good log",
      (y) =>
        y
          .positional('rule', { type: 'string', demandOption: true, describe: 'Rule id (see `stalewrite rules`)' })
          .option('service', { choices: SERVICE_IDS, describe: 'Show only this lock service\'s case (what a mapping\'s "service" makes the message say)' })
          .example('$0 explain accepted-stale-write', 'What a late accepted write means and how to fix it')
          .example('$0 explain missing-token --service redis', 'The Redis case: a Redis lock value is no fencing token'),
      (args) => {
        process.stdout.write(renderExplain(args.rule, args.service));
      },
    )
    .command(
      'timeline [files..]',
      'Print every event of one resource in merged order, with the highest accepted token and markers on the evidence of findings',
      (y) =>
        y
          .positional('files', { type: 'string', array: true, describe: 'NDJSON files; "-" or nothing reads stdin' })
          .option('resource', { alias: 'r', type: 'string', demandOption: true, describe: 'The resource key' })
          .option('max-events', { type: 'number', default: 100000, describe: 'Events shown at most (first fifth and the latest)' })
          .option('clock-skew', { type: 'string', default: `${DEFAULT_CLOCK_SKEW_MS}ms`, describe: 'Bound on clock skew between sources' })
          .options(PROFILE_OPTIONS)
          .example('$0 timeline --resource resource-7 fixtures/article-unsafe.ndjson', 'The article-style interleaving of one resource')
          .example('$0 timeline -r orders/42 authority.ndjson db.ndjson', 'Merged from several sources'),
      async (args) => {
        process.exitCode = await runTimeline(args.files, args.resource, args['max-events'], args['clock-skew'], await profileFrom(args));
      },
    )
    .command(
      'check [paths..]',
      'Run recorded incidents against their expectations (X.ndjson beside X.expect.json, or a directory with expect.json)',
      (y) =>
        y
          .positional('paths', { type: 'string', array: true, describe: 'Directories or .ndjson files [default: .]' })
          .option('update', { type: 'boolean', default: false, describe: 'Write the expectation files from the current results' })
          .example('$0 check fixtures/', 'Every case in fixtures/, with a diff for each mismatch')
          .example('$0 check --update incidents/2026-03-01.ndjson', 'Record what the analyzer says now as the expectation'),
      async (args) => {
        process.exitCode = await runCheck(args.paths === undefined || args.paths.length === 0 ? ['.'] : args.paths, args.update, color);
      },
    )
    .command(
      'map <files..>',
      'Show, for the first lines of a file, the canonical event each became, or why it was ignored or invalid; with --suggest, draft a mapping file from your logs',
      (y) =>
        y
          .positional('files', { type: 'string', array: true, demandOption: true, describe: 'A log file (several with --suggest)' })
          .options(PROFILE_OPTIONS)
          .option('lines', { alias: 'n', type: 'number', default: 20, describe: 'How many lines' })
          .option('max-line-bytes', { type: 'number', default: DEFAULT_MAX_LINE_BYTES, describe: 'Longer lines are reported and skipped' })
          .option('suggest', { type: 'boolean', default: false, describe: 'Print a mapping file (JSON) drafted from the first 2000 lines of each file; what it could not guess goes to stderr' })
          .example('$0 map --mapping my-worker.json worker.log', 'Debug a mapping file')
          .example('$0 map --profile app-json -n 50 app.log', 'See what the app-json profile makes of your logs')
          .example('$0 map --suggest worker-*.log > mapping.json', 'Draft a mapping from your own lines; then analyze --mapping mapping.json worker-*.log'),
      async (args) => {
        if (!Number.isInteger(args.lines) || args.lines < 1) throw new UsageError('--lines must be a whole number ≥ 1');
        const files = args.files;
        if (args.suggest) {
          if (args.mapping !== undefined) throw new UsageError('--suggest drafts a mapping: it does not take --mapping');
          for (const f of files) if (f !== '-') await checkReadable(f);
          readingFrom(files, 'map');
          const { renderSuggestion } = await import('./map.js');
          const { mapping, messages } = await renderSuggestion(files, args['max-line-bytes'], { year: args['klog-year'], zone: args['klog-zone'] });
          for (const m of messages) process.stderr.write(`${escapeTerminal(m)}\n`);
          await writeStdout(mapping);
          return;
        }
        if (files.length !== 1) throw new UsageError(`map shows one file (got ${files.length}); several files are for --suggest`);
        const profile = await profileFrom(args);
        if (files[0] !== '-') await checkReadable(files[0]!);
        readingFrom(files, 'map');
        const { renderMap } = await import('./map.js');
        await writeStdout(await renderMap(files[0]!, profile, args.lines, args['max-line-bytes']));
      },
    )
    .example('$0 analyze fixtures/article-unsafe.ndjson', 'Analyse a log file')
    .example('$0 explain stale-release', 'Explain a rule')
    .example('$0 rules', 'List the rules')
    .epilogue('Exit codes: 0 nothing at or above --fail-on; 1 definite or likely findings at or above it; 2 usage error, unreadable input, no event read, strict input failure, a report that cannot be written, or a report path that is an input (refused); 3 inconclusive (only "possible" findings), or untested with --require-tested.')
    .version(VERSION)
    .help()
    .alias('h', 'help')
    .strict()
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .fail((msg, err) => {
      if (err !== undefined && err !== null && !(err instanceof UsageError) && !(err instanceof UnknownRuleError) && !(err instanceof MappingError) && !(err instanceof UnknownCommandError)) throw err;
      // yargs says "Unknown arguments: fial-on, fialOn": name each unknown option as typed, with
      // the nearest option of the command (yargs suggests none itself).
      const internals = cli as unknown as { getOptions(): { key: Record<string, unknown>; alias: Record<string, string[]> }; getInternalMethods(): { getContext(): { commands: string[] } } };
      const options = internals.getOptions();
      const known = [...Object.keys(options.key), ...Object.entries(options.alias).flat(2)];
      const unknown = err === undefined || err === null ? unknownOptions(argv, known) : [];
      const text = unknown.length > 0 ? unknownOptionsMessage(unknown.map(escapeTerminal), known) : (msg ?? err?.message ?? 'usage error');
      // The help that fits: the command's own, or the top level's for a mistyped command.
      const inContext = internals.getInternalMethods().getContext().commands[0] as string | undefined;
      const first = inContext ?? argv.find((a) => !a.startsWith('-'));
      const command = first === undefined ? 'analyze' : (COMMAND_ALIASES[first] ?? (COMMANDS.includes(first as never) ? first : 'analyze'));
      const help = err instanceof UnknownCommandError ? 'stalewrite --help' : `stalewrite ${command} --help`;
      // Our own errors are one message each, escaped whole: log content in one (a resource name) shows
      // a newline as \n instead of starting a line. yargs' messages and the unknown-option list are
      // several lines by design (the options already escaped): each line is escaped.
      const lines = err !== undefined && err !== null && unknown.length === 0 ? [text] : text.split('\n');
      process.stderr.write(`${lines.map((line) => `stalewrite: ${escapeTerminal(line)}`).join('\n')}\nRun "${help}" for usage.\n`);
      process.exit(EXIT_USAGE);
    });

  // yargs lays out the whole help text before running any subcommand, only to have it ready for
  // showHelp(), which is never called here: about 80 ms of every start-up. --help still works.
  const usage = (cli as unknown as { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: () => void } } }).getInternalMethods?.().getUsageInstance?.();
  if (usage?.cacheHelpMessage !== undefined) usage.cacheHelpMessage = () => undefined;

  try {
    await cli.parseAsync();
  } catch (err) {
    if (err instanceof InputError || err instanceof OptionError || err instanceof OutputError || err instanceof StrictInputError || err instanceof UsageError || err instanceof UnknownRuleError || err instanceof MappingError || err instanceof UnknownCommandError) {
      process.stderr.write(`stalewrite: ${escapeTerminal(err.message)}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    throw err;
  }
}

interface AnalyzeArgs extends ProfileArgs {
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
  'allow-inconclusive': boolean;
  'require-tested': boolean;
  'allow-empty': boolean;
  'busy-window': string;
  'busy-threshold': number;
  rule?: string | string[];
  quiet: boolean;
  'all-resources': boolean;
  'max-drawn': number;
  'max-diagrams': number;
  'max-resources': number;
  jobs: string;
  workers?: string;
  progress?: boolean;
  partition?: string;
  'with-timelines': boolean;
}

async function runAnalyze(args: AnalyzeArgs, color: boolean): Promise<number> {
  const clockSkewMs = parseDuration(args['clock-skew']);
  if (clockSkewMs === undefined) throw new UsageError(`--clock-skew "${args['clock-skew']}" is not a duration such as 250ms or 1s`);
  const busyWindowMs = parseDuration(args['busy-window']);
  if (busyWindowMs === undefined || busyWindowMs <= 0) throw new UsageError(`--busy-window "${args['busy-window']}" is not a positive duration such as 60s or 5m`);
  const busyThreshold = args['busy-threshold'];
  if (!(busyThreshold > 0 && busyThreshold <= 1)) throw new UsageError('--busy-threshold must be a number above 0 and at most 1');
  for (const [name, v, min] of [['max-invalid', args['max-invalid'], 0], ['max-line-bytes', args['max-line-bytes'], 1], ['max-problems', args['max-problems'], 0], ['max-findings', args['max-findings'], 0], ['max-drawn', args['max-drawn'], 0], ['max-diagrams', args['max-diagrams'], 0], ['max-resources', args['max-resources'], 1]] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v < min)) throw new UsageError(`--${name} must be a whole number ≥ ${min}`);
  }
  const markdown: MarkdownOptions = { maxDiagrams: args['max-diagrams'] };
  const files = args.files === undefined || args.files.length === 0 ? ['-'] : args.files;
  if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin ("-") can be given only once');
  // Typed at a prompt with no file: say what it waits for instead of waiting silently. It then
  // reads on (lines typed or pasted, ended by Ctrl-D); a pipe or a file changes nothing.
  noteTerminalStdin(files, 'analyze');
  if (args.workers !== undefined) throw new UsageError('--workers was replaced by --jobs: --jobs N analyses on N threads (each a partition of the resources), --jobs 1 on one; see README "Scaling out"');
  const jobs = parseJobs(args.jobs);
  const partition = args.partition === undefined ? undefined : parsePartition(args.partition);
  if (partition === undefined && args['with-timelines']) throw new UsageError('--with-timelines is for partition runs (--partition I/N): a single run draws its timelines with -f html');
  if (partition !== undefined && args.format !== undefined && args.format !== 'json') {
    throw new UsageError(`--partition writes the JSON report that \`stalewrite merge\` combines (got -f ${args.format}); give the format to merge: stalewrite merge -f ${args.format} part-*.json`);
  }
  const format = args.format ?? (partition === undefined && args.output === undefined && process.stdout.isTTY ? 'table' : 'json');

  const policy: FailPolicy = { failOn: args['fail-on'], includePossible: args['include-possible'], allowInconclusive: args['allow-inconclusive'], requireTested: args['require-tested'] };
  // An input is never written (`-o x x`, `-o link-to-x x`, `-o x < x`, `x >> x`): checked before
  // anything is opened or truncated, as is the -o path itself (a directory, a missing directory).
  const inputs = new InputSet(files);
  if (args.mapping !== undefined) inputs.add(args.mapping);
  if (args.output === undefined) inputs.refuseStdout();
  const summaryPath = format === 'github' && process.env.GITHUB_STEP_SUMMARY ? process.env.GITHUB_STEP_SUMMARY : undefined;
  if (summaryPath !== undefined) inputs.refuse(summaryPath, `GITHUB_STEP_SUMMARY ${summaryPath}`);
  const plan = args.output === undefined ? undefined : planOutput(args.output, inputs, format === 'ndjson');
  // Live output: findings are written as they are detected, so the output is opened first (and a
  // file is written in place, as it goes).
  const sink = format === 'ndjson' ? (plan === undefined ? stdoutSink() : await openPlanned(plan, inputs)) : undefined;
  const showProgress = args.progress ?? (process.stderr.isTTY === true && !process.env.CI);
  const progress = showProgress ? new Progress() : undefined;

  let shown = 0;
  // Its resources' summaries are made as the report is written (never all held at once).
  let report: ReportView;
  try {
    report = await analyzeView({
      files,
      profile: await profileFrom(args),
      strict: args.strict,
      maxInvalid: args['max-invalid'],
      maxLineBytes: args['max-line-bytes'],
      maxProblems: args['max-problems'],
      maxFindings: args['max-findings'],
      clockSkewMs,
      busyWindowMs,
      busyThreshold,
      rules: ruleList(args.rule),
      timelines: format === 'html' || args['with-timelines'] ? { all: args['all-resources'], maxResources: args['max-drawn'] } : undefined,
      partition,
      maxResources: args['max-resources'],
      jobs,
      onFinding: sink === undefined ? undefined : (f) => void (sink.alert ?? sink.write).call(sink, findingLine(f)).catch(stopOnWriteError),
      onProgress: progress === undefined ? undefined : (p: ProgressInfo) => progress.update(p),
      onProblem: args.quiet
        ? undefined
        : (p) => {
            if (++shown <= 10) {
              progress?.clear();
              process.stderr.write(`stalewrite: ${escapeTerminal(p.file)}:${p.line}: ${escapeTerminal(p.reason)}\n`);
            }
          },
    });
  } finally {
    progress?.clear();
  }
  if (!args.quiet && shown > 10) process.stderr.write(`stalewrite: ${shown - 10} more invalid lines (${shown} in all; listed in the report)\n`);
  for (const f of report.input.files) {
    if (f.error !== undefined) process.stderr.write(`stalewrite: ${escapeTerminal(f.error)}\n`);
    if (f.sameAs !== undefined) process.stderr.write(`stalewrite: ${escapeTerminal(f.file)} is the same file as ${escapeTerminal(f.sameAs)}: read once\n`);
  }

  if (sink !== undefined) {
    for (const chunk of summaryLineChunks(report)) await sink.write(chunk);
    await sink.close();
  } else await writeReport(report, format, plan, inputs, policy, color, args.output === undefined, summaryPath, markdown);
  if (report.input.files.some((f) => f.error !== undefined)) return EXIT_USAGE;
  // A partition's findings and verdict are the merge's to judge: written is done (job engines
  // then do not retry a partition for having findings).
  if (partition !== undefined) return EXIT_OK;
  return exitFor(report, policy, { quiet: args.quiet, allowEmpty: args['allow-empty'], requireTested: args['require-tested'] });
}

/** Write a whole report (every format but live ndjson) to stdout or the planned file, and the GitHub step summary. */
async function writeReport(report: ReportView, format: (typeof FORMATS)[number], plan: OutputPlan | undefined, inputs: InputSet, policy: FailPolicy, color: boolean, toStdout: boolean, summaryPath: string | undefined, markdown: MarkdownOptions): Promise<void> {
  const toTerminal = toStdout && process.stdout.isTTY === true;
  // Opened only now: when the analysis fails, an earlier report at that path is left alone. A
  // file is written to a temporary file beside it and renamed over it once complete and synced.
  const out: Sink = plan === undefined ? stdoutSink() : await openPlanned(plan, inputs);
  try {
    // Written in pieces: a report of many resources is never one big string.
    const chunks = format === 'ndjson' ? ndjsonChunks(report) : await render(format, report, policy, { color: color && toStdout, width: toTerminal ? process.stdout.columns : undefined }, markdown);
    for (const chunk of chunks) await out.write(chunk);
  } catch (err) {
    await out.abort();
    throw err;
  }
  await out.close();
  if (summaryPath !== undefined) {
    const { renderMarkdownChunks } = await import('../report/markdown.js');
    // Appended to, as GitHub expects (it creates the file and reads it after the step).
    await appendSummaryChunks(summaryPath, withNewline(renderMarkdownChunks(report, markdown)));
  }
}

/** The ndjson lines of a finished report (merge): its findings, then the summary line. */
function* ndjsonChunks(report: ReportView): Generator<string> {
  for (const f of report.findings) yield findingLine(f);
  yield* summaryLineChunks(report);
}

/** The exit code of a finished report (analyze, merge), with what stderr must say about it. */
function exitFor(report: ReportView, policy: FailPolicy, o: { quiet: boolean; allowEmpty: boolean; requireTested: boolean }): number {
  if (report.summary.untrackedEvents > 0) {
    process.stderr.write(`stalewrite: more than ${report.summary.resources} resources: ${report.summary.untrackedEvents} events of further resources were NOT analysed (raise --max-resources)\n`);
    return EXIT_USAGE;
  }
  // Nothing analysed is never a pass.
  if (report.input.events === 0 && !o.allowEmpty) {
    const [head, ...rest] = noEventsParts(report.input);
    process.stderr.write(`stalewrite: ${escapeTerminal(head!)}\n${rest.map((p) => `  ${escapeTerminal(p)}\n`).join('')}  --allow-empty accepts an input with no event\n`);
    return EXIT_USAGE;
  }
  const code = exitCodeFor(report, policy);
  // A merged report that may differ from a single run's is never a pass either.
  const inexact = report.partitions?.inexact ?? [];
  if (inexact.length > 0) {
    process.stderr.write(`stalewrite: this merged report may differ from one run's: ${escapeTerminal(inexact.join('; '))}${code === EXIT_OK ? ' (exit 3; analyse without partitions to decide)' : ''}\n`);
    // Past --max-resources in all, a single run exits 2.
    if (/more than --max-resources/.test(inexact.join(' '))) return EXIT_USAGE;
    if (code === EXIT_OK) return EXIT_INCONCLUSIVE;
  }
  // Passing, but on input that mostly was not read, or that held no write: say so where CI logs show it.
  if (code === EXIT_OK && !o.quiet) {
    for (const r of report.summary.reasons) {
      if (r.id === 'no-writes' || r.id === 'mostly-unread') process.stderr.write(`stalewrite: warning: ${escapeTerminal(r.message)}; --require-tested fails such a run\n`);
    }
  }
  if (code === EXIT_INCONCLUSIVE && !o.quiet) {
    const why = report.summary.reasons.find((r) => r.id === 'uncertain' || r.id === 'not-explicit' || r.id === 'no-stale-request' || r.id === 'no-writes');
    process.stderr.write(`stalewrite: verdict ${report.summary.verdict}${why !== undefined ? `: ${escapeTerminal(why.message)}` : ''} (exit 3; ${o.requireTested && (report.summary.verdict === 'untested' || report.summary.verdict === 'unconfirmed') ? 'drop --require-tested' : '--allow-inconclusive'} exits 0)\n`);
  }
  return code;
}

/** `--jobs auto|N`. */
function parseJobs(text: string): number | 'auto' {
  if (text === 'auto') return 'auto';
  const n = /^\d+$/.test(text.trim()) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_PARTITIONS)) throw new UsageError(`--jobs "${text}" is not auto or a whole number from 1 to ${MAX_PARTITIONS}`);
  return n;
}

/** `--partition I/N`: I from 0, below N (at most MAX_PARTITIONS). */
function parsePartition(text: string): { index: number; count: number } {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = m === null ? NaN : Number(m[1]);
  const count = m === null ? NaN : Number(m[2]);
  if (!(count >= 1 && count <= MAX_PARTITIONS) || !(index >= 0 && index < count)) {
    throw new UsageError(`--partition "${text}" is not I/N with 0 ≤ I < N ≤ ${MAX_PARTITIONS} (partitions count from 0: --partition 0/4 … --partition 3/4)`);
  }
  return { index, count };
}

/** Reading a terminal: say what it waits for instead of waiting silently (a pipe or a file changes nothing). */
function noteTerminalStdin(files: readonly string[], command: string): void {
  if (files.includes('-') && process.stdin.isTTY === true) process.stderr.write(`stalewrite: reading stdin (a terminal); pipe a log in or give a file (end typed input with Ctrl-D) — see "stalewrite ${command} --help"\n`);
}

/** A command that prints to stdout what it read from `files`: never onto one of them, and not silently from a terminal. */
function readingFrom(files: readonly string[], command: string): void {
  new InputSet(files).refuseStdout();
  noteTerminalStdin(files, command);
}

/** `--rule a --rule b,c` as a list; a usage error when it names no rule at all (`--rule ""` would run none and pass). */
function ruleList(rule: string | string[] | undefined): string[] | undefined {
  if (rule === undefined) return undefined;
  const ids = ([] as string[]).concat(rule).flatMap((r) => r.split(',')).map((r) => r.trim()).filter((r) => r !== '');
  if (ids.length === 0) throw new UsageError('--rule names no rule; give rule ids (see `stalewrite rules`), or leave --rule out to run them all');
  return ids;
}

/** Reporters are loaded only when asked for, to keep start-up short. Each gives its text in pieces. */
async function render(format: Exclude<(typeof FORMATS)[number], 'ndjson'>, report: ReportView, policy: FailPolicy, table: { color: boolean; width?: number }, markdown: MarkdownOptions): Promise<Iterable<string>> {
  switch (format) {
    case 'json':
      return (await import('../report/json.js')).renderJsonChunks(report);
    case 'markdown':
      return (await import('../report/markdown.js')).renderMarkdownChunks(report, markdown);
    case 'html':
      return (await import('../report/html.js')).renderHtmlChunks(report);
    case 'junit':
      return (await import('../report/junit.js')).renderJunitChunks(report, policy);
    case 'github':
      return (await import('../report/github.js')).renderGithubChunks(report);
    case 'table':
      return (await import('../report/table.js')).renderTableChunks(report, table);
  }
}

function* withNewline(chunks: Iterable<string>): Generator<string> {
  yield* chunks;
  yield '\n';
}

/** A live stream could not be written (`-f ndjson -o /dev/full`): one line and exit 2, at once. */
function stopOnWriteError(err: unknown): void {
  process.stderr.write(`stalewrite: ${escapeTerminal(err instanceof Error ? err.message : String(err))}\n`);
  process.exit(EXIT_USAGE);
}

interface MergeArgs {
  reports: string[];
  format?: (typeof FORMATS)[number];
  output?: string;
  'fail-on': (typeof FAIL_ON)[number];
  'include-possible': boolean;
  'allow-inconclusive': boolean;
  'require-tested': boolean;
  'allow-empty': boolean;
  'max-diagrams': number;
  quiet: boolean;
}

async function runMerge(args: MergeArgs, color: boolean): Promise<number> {
  const format = args.format ?? (args.output === undefined && process.stdout.isTTY ? 'table' : 'json');
  const policy: FailPolicy = { failOn: args['fail-on'], includePossible: args['include-possible'], allowInconclusive: args['allow-inconclusive'], requireTested: args['require-tested'] };
  const inputs = new InputSet(args.reports);
  if (args.output === undefined) inputs.refuseStdout();
  const summaryPath = format === 'github' && process.env.GITHUB_STEP_SUMMARY ? process.env.GITHUB_STEP_SUMMARY : undefined;
  if (summaryPath !== undefined) inputs.refuse(summaryPath, `GITHUB_STEP_SUMMARY ${summaryPath}`);
  const plan = args.output === undefined ? undefined : planOutput(args.output, inputs);
  const { mergeReports, MergeError, MergedInputError } = await import('../partition/merge.js');
  const reports: Report[] = [];
  for (const path of args.reports) {
    await checkReadable(path);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new InputError(`cannot read ${path}: ${reasonOf(err)}`);
    }
    try {
      reports.push(JSON.parse(text) as Report);
    } catch (err) {
      throw new InputError(`${path} is not a JSON report (${(err as Error).message}): give the files analyze --partition I/N -o FILE wrote`);
    }
  }
  let report: Report;
  try {
    report = mergeReports(reports, args.reports);
  } catch (err) {
    // The input failed as a single run's would (exit 2, no report): said as that run says it, not as a usage error.
    if (err instanceof MergedInputError) throw new InputError(err.message);
    if (err instanceof MergeError) throw new UsageError(`cannot merge: ${err.message}`);
    throw err;
  }
  if (format === 'html' && report.timelines === undefined) throw new UsageError('an html report draws timelines: run the partitions with --with-timelines (and --all-resources or --max-drawn as the html report should have them)');
  for (const f of report.input.files) if (f.error !== undefined) process.stderr.write(`stalewrite: ${escapeTerminal(f.error)}\n`);
  await writeReport(report, format, plan, inputs, policy, color, args.output === undefined, summaryPath, { maxDiagrams: args['max-diagrams'] });
  if (report.input.files.some((f) => f.error !== undefined)) return EXIT_USAGE;
  return exitFor(report, policy, { quiet: args.quiet, allowEmpty: args['allow-empty'], requireTested: args['require-tested'] });
}

async function runTimeline(files: string[] | undefined, resource: string, maxEvents: number, skew: string, profile: Profile): Promise<number> {
  const clockSkewMs = parseDuration(skew);
  if (clockSkewMs === undefined) throw new UsageError(`--clock-skew "${skew}" is not a duration such as 250ms or 1s`);
  if (!Number.isInteger(maxEvents) || maxEvents < 2) throw new UsageError('--max-events must be a whole number ≥ 2');
  const inputs = files === undefined || files.length === 0 ? ['-'] : files;
  readingFrom(inputs, 'timeline');
  const report = await analyzeView({
    files: inputs,
    clockSkewMs,
    timelines: { resources: [resource], perResource: maxEvents },
    profile,
    onProblem: () => undefined,
  });
  const { renderTimeline } = await import('../report/timeline.js');
  const lines = renderTimeline(report, resource);
  if (lines.length === 0) {
    const known: string[] = [];
    for (const r of report.resources) {
      if (known.length === 10) break;
      known.push(r.resource);
    }
    // Resource names are log content: each is escaped for the terminal here (and the message again on output).
    throw new UsageError(`no events for resource "${escapeTerminal(resource)}"${known.length > 0 ? `; resources seen: ${known.map(escapeTerminal).join(', ')}${report.resources.length > 10 ? ', …' : ''}` : ''}`);
  }
  await writeStdout(lines.map(escapeTerminal).join('\n') + '\n');
  return EXIT_OK;
}

async function runCheck(paths: string[], update: boolean, color: boolean): Promise<number> {
  const { findCases, runCase, writeExpectation } = await import('../check/cases.js');
  const cases = findCases(paths, update);
  // Nor is a case's log (or its expectation) the place for the check table.
  new InputSet(cases.flatMap((c) => [...c.files, c.expectPath].filter((f) => existsSync(f)))).refuseStdout();
  if (cases.length === 0) throw new UsageError(`no cases found in ${paths.join(', ')} (X.ndjson beside X.expect.json, or a directory with expect.json)`);
  const results: CaseResult[] = [];
  for (const c of cases) {
    const r = await runCase(c);
    if (update && !r.ok) {
      writeExpectation(c, r.report);
      r.diffs.unshift(`updated ${c.expectPath}`);
    }
    results.push(r);
  }
  const { renderCheck } = await import('./check.js');
  await writeStdout(renderCheck(results, update, color));
  return update || results.every((r) => r.ok) ? EXIT_OK : EXIT_FINDINGS;
}


