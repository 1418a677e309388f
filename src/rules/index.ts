/** Every rule, in the order of the article's table. The rule table is generated from this list. */
import { acceptedEqualToken } from './accepted-equal-token.js';
import { acceptedStaleWrite } from './accepted-stale-write.js';
import { busyRateRising } from './busy-rate-rising.js';
import { clockDerivedToken } from './clock-derived-token.js';
import { clockWentBackwards } from './clock-went-backwards.js';
import { duplicateEffect } from './duplicate-effect.js';
import { keepaliveGap } from './keepalive-gap.js';
import { missingToken } from './missing-token.js';
import { overlappingLeases } from './overlapping-leases.js';
import { staleNotExplicit } from './stale-not-explicit.js';
import { staleRelease } from './stale-release.js';
import { tokenNotMonotonic } from './token-not-monotonic.js';
import { unknownToken } from './unknown-token.js';
import { writeAfterLeaseEnd } from './write-after-lease-end.js';
import type { Rule } from './types.js';

export const rules: readonly Rule[] = [
  // Old worker got 200 after the new one: the resource does not check the token.
  acceptedStaleWrite,
  acceptedEqualToken,
  writeAfterLeaseEnd,
  staleNotExplicit,
  // Old release removed B's lock: the release checks only the name.
  staleRelease,
  // Duplicate after retry: fencing taken for idempotency.
  duplicateEffect,
  // Busy share grows: leases not renewed, or the resource held long.
  busyRateRising,
  keepaliveGap,
  // No token in the resource request: protection stayed in the authority.
  missingToken,
  unknownToken,
  // Where tokens come from, and whether the authority itself gave out two holds.
  tokenNotMonotonic,
  clockDerivedToken,
  overlappingLeases,
  // Whether the logs' own clocks can be trusted for order within a clock domain.
  clockWentBackwards,
];

export type { Rule, RuleMeta, RuleContext, ReportInput, EvidenceRef, Handler, RuleOptions, RuleMessage, RuleGate } from './types.js';
