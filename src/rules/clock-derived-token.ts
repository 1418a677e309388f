import type { LockEvent } from '../model/event.js';
import { formatToken } from '../model/format.js';
import { defineRule, type Handler } from './types.js';

const DAY_S = 86400;
/** Epoch units a token may be read in: name, factor from milliseconds. */
const UNITS: readonly [string, number][] = [
  ['seconds', 1e-3],
  ['milliseconds', 1],
  ['microseconds', 1e3],
  ['nanoseconds', 1e6],
];

/** Granted or written tokens look like wall-clock values. */
/** Per resource: reported already (once per resource). */
interface State {
  reported: boolean;
}

export const clockDerivedToken = defineRule<State>({
  meta: {
    id: 'clock-derived-token',
    severity: 'warning',
    title: 'Fencing tokens look like wall-clock timestamps',
    symptom: 'Tokens look like the current time',
    cause: 'Tokens are derived from a wall clock, which can go backwards or collide across hosts',
    check: 'Read tokens as epoch seconds, milliseconds, microseconds and nanoseconds and compare with the event time',
    action: 'Never derive tokens from the wall clock (article, step 4): use a monotonic generation per resource from the authority',
  },
  messages: {
    looksLikeClock: "token {token} is within a day of the event's own time read as epoch {unit}: tokens seem to come from a clock",
  },
  state: () => ({ reported: false }),
  // Gates (Rule.when): an acquire acts only when granted.
  when: { acquire: { results: ['granted'] } },
  on: {
    acquire: check,
    write: check,
  },
});

function check(...[event, { report, peek, slot }]: Parameters<Handler<State>>): void {
  if (peek()?.reported === true || event.fenceToken === undefined) return;
  if (event.type === 'acquire' && event.result !== 'granted') return;
  const unit = clockUnit(event);
  if (unit === undefined) return;
  slot().reported = true;
  report({
    messageId: 'looksLikeClock',
    data: { token: formatToken(event.fenceToken), unit },
    evidence: [{ event, role: `token reads as epoch ${unit}` }],
    certainty: 'definite',
  });
}

/** The epoch unit in which the token lies within a day of the event time, if any. */
export function clockUnit(event: LockEvent): string | undefined {
  if (event.ts < 1e12) return undefined; // only events with a realistic wall-clock time (after 2001)
  const token = Number(event.fenceToken!);
  for (const [name, factor] of UNITS) {
    const now = event.ts * factor;
    if (Math.abs(token - now) <= DAY_S * 1000 * factor) return name;
  }
  return undefined;
}
