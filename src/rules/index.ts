/** Every rule, in the order of the article's table. The rule table is generated from this list. */
import { acceptedStaleWrite } from './accepted-stale-write.js';
import { missingToken } from './missing-token.js';
import { staleRelease } from './stale-release.js';
import type { Rule } from './types.js';

export const rules: readonly Rule[] = [acceptedStaleWrite, staleRelease, missingToken];

export type { Rule, RuleMeta, RuleContext, ReportInput, EvidenceRef, Handler } from './types.js';
