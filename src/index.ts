/** stalewrite as a library: `import { analyze } from 'stalewrite'`. */
export { analyze, selectRules, type AnalyzeOptions } from './analyze.js';
export { Engine, readinessOf, DEFAULT_CLOCK_SKEW_MS, type EngineOptions } from './engine.js';
export { InputError } from './ingest/open.js';
export { StrictInputError } from './ingest/records.js';
export { readLines, type LineBatch } from './ingest/lines.js';
export { canonical } from './profiles/canonical.js';
export type { Profile, RecordOrigin } from './profiles/types.js';
export { rules } from './rules/index.js';
export type { Rule, RuleMeta, RuleContext, ReportInput, EvidenceRef } from './rules/index.js';
export type { LockEvent, EventType, Observer } from './model/event.js';
export type * from './model/report.js';
export { parseFenceToken, compareTokens } from './model/token.js';
export { parseTimestamp } from './model/time.js';
export { renderJson } from './report/json.js';
export { renderTable } from './report/table.js';
export { VERSION } from './version.js';
export { exitCodeFor, EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCONCLUSIVE, type FailPolicy } from './model/policy.js';
export { READINESS } from './model/report.js';
