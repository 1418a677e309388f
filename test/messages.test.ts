/**
 * Finding messages are a message id plus data, rendered by the engine from the rule's templates:
 * over every fixture, each finding's `message` is its template rendered with its `data`, and every
 * placeholder of every template is exercised by some finding (or listed below as untested).
 */
import { describe, expect, it } from 'vitest';
import { findCases, runCase } from '../src/check/cases.js';
import { analyze } from '../src/index.js';
import { formatMessage, MessageDataError, placeholdersOf } from '../src/model/message.js';
import type { Finding } from '../src/model/report.js';
import { rules } from '../src/rules/index.js';
import { FIXTURES } from './helpers/run.js';

/**
 * `<rule>/<id>` templates (or `<rule>/<id>/{name}` placeholders) that neither the fixtures nor the
 * extra cases below produce. Keep it empty if you can; the test fails if an entry here is exercised.
 */
const UNTESTED: readonly string[] = [];

const T0 = Date.UTC(2026, 2, 1, 10);
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** Small inputs for message variants no fixture produces. */
export const EXTRA: { name: string; events: Record<string, unknown>[]; options?: Record<string, unknown> }[] = [
  {
    // The resource logs the write without a token first; the worker's view with the token comes after.
    name: 'missing-token: view arrives later',
    events: [
      { ts: at(0), type: 'acquire', resource: 'r', ownerId: 'A', leaseId: 'l1', fenceToken: 3, result: 'granted', source: 'authority' },
      { ts: at(1000), type: 'write', resource: 'r', ownerId: 'A', leaseId: 'l1', operationId: 'op-1', result: 'accepted', observer: 'resource', source: 'db' },
      { ts: at(1100), type: 'write', resource: 'r', ownerId: 'A', leaseId: 'l1', operationId: 'op-1', fenceToken: 3, result: 'accepted', observer: 'worker', source: 'worker-a' },
    ],
  },
  {
    // The worker's view with the token is logged before the resource's line without it.
    name: 'missing-token: view first',
    events: [
      { ts: at(0), type: 'acquire', resource: 'r', ownerId: 'A', leaseId: 'l1', fenceToken: 3, result: 'granted', source: 'authority' },
      { ts: at(1000), type: 'write', resource: 'r', ownerId: 'A', leaseId: 'l1', operationId: 'op-1', fenceToken: 3, result: 'accepted', observer: 'worker', source: 'worker-a' },
      { ts: at(1100), type: 'write', resource: 'r', ownerId: 'A', leaseId: 'l1', operationId: 'op-1', result: 'accepted', observer: 'resource', source: 'db' },
    ],
  },
  {
    // Leases known by owner only: one ended by a logged expire, one by its TTL.
    name: 'write-after-lease-end: no lease ids',
    events: [
      { ts: at(0), type: 'acquire', resource: 'r', ownerId: 'A', fenceToken: 1, result: 'granted' },
      { ts: at(1000), type: 'expire', resource: 'r', ownerId: 'A' },
      { ts: at(2000), type: 'write', resource: 'r', ownerId: 'A', fenceToken: 1, result: 'accepted' },
      { ts: at(3000), type: 'acquire', resource: 's', ownerId: 'B', fenceToken: 1, ttlMs: 1000, result: 'granted' },
      { ts: at(6000), type: 'write', resource: 's', ownerId: 'B', fenceToken: 1, result: 'accepted' },
    ],
  },
  {
    // No latencies, hold times, keepalive gaps or TTLs: the message has no figures.
    name: 'busy-rate-rising: no figures',
    events: [
      ...[0, 1, 2, 3, 4].map((s) => ({ ts: at(s * 1000), type: 'acquire', resource: 'r', ownerId: 'A', leaseId: 'l1', fenceToken: 1, result: 'granted' })),
      ...[61, 62, 63, 64, 65].map((s) => ({ ts: at(s * 1000), type: 'acquire', resource: 'r', ownerId: 'B', result: 'busy' })),
    ],
  },
  {
    // Three steps back in one clock domain, the largest not the first.
    name: 'clock-went-backwards: a larger step later',
    events: [
      { ts: at(10_000), type: 'acquire', resource: 'r', ownerId: 'A', leaseId: 'l1', fenceToken: 1, result: 'granted' },
      { ts: at(9_000), type: 'keepalive', resource: 'r', ownerId: 'A', leaseId: 'l1', result: 'ok' },
      { ts: at(20_000), type: 'keepalive', resource: 'r', ownerId: 'A', leaseId: 'l1', result: 'ok' },
      { ts: at(15_000), type: 'keepalive', resource: 'r', ownerId: 'A', leaseId: 'l1', result: 'ok' },
      { ts: at(30_000), type: 'keepalive', resource: 'r', ownerId: 'A', leaseId: 'l1', result: 'ok' },
      { ts: at(29_000), type: 'release', resource: 'r', ownerId: 'A', leaseId: 'l1', result: 'released' },
    ],
  },
];

async function allFindings(): Promise<{ where: string; finding: Finding }[]> {
  const out: { where: string; finding: Finding }[] = [];
  for (const c of findCases([FIXTURES])) {
    const r = await runCase(c);
    for (const finding of r.report.findings) out.push({ where: c.name.slice(FIXTURES.length + 1), finding });
  }
  for (const x of EXTRA) {
    const r = await analyze({ events: x.events, ...x.options });
    for (const finding of r.findings) out.push({ where: x.name, finding });
  }
  return out;
}

describe('finding messages', () => {
  it('every rule has templates, and every finding is its template rendered with its data', async () => {
    for (const rule of rules) expect(Object.keys(rule.messages).length, rule.meta.id).toBeGreaterThan(0);
    const exercised = new Set<string>();
    const found = await allFindings();
    expect(found.length).toBeGreaterThan(100);
    for (const { where, finding: f } of found) {
      expect(f.messageId, where).toMatch(new RegExp(`^${f.rule}/[A-Za-z0-9_]+$`));
      const id = f.messageId!.slice(f.rule.length + 1);
      const rule = rules.find((r) => r.meta.id === f.rule)!;
      const template = rule.messages[id];
      expect(template, `${where}: ${f.messageId}`).toBeTypeOf('string');
      expect(f.data, where).toBeTypeOf('object');
      for (const v of Object.values(f.data!)) expect(['string', 'number'], where).toContain(typeof v);
      expect(f.message, `${where}: ${f.messageId}`).toBe(formatMessage(template!, f.data!));
      // No data beyond the template's placeholders: data is what the text says, nothing hidden.
      expect(Object.keys(f.data!).sort(), `${where}: ${f.messageId}`).toEqual(placeholdersOf(template!).sort());
      exercised.add(f.messageId!);
      for (const name of placeholdersOf(template!)) exercised.add(`${f.messageId}/{${name}}`);
    }
    const missing: string[] = [];
    for (const rule of rules) {
      for (const [id, template] of Object.entries(rule.messages)) {
        const key = `${rule.meta.id}/${id}`;
        if (!exercised.has(key) && !UNTESTED.includes(key)) missing.push(key);
        for (const name of placeholdersOf(template)) {
          const p = `${key}/{${name}}`;
          if (!exercised.has(p) && !UNTESTED.includes(p) && !UNTESTED.includes(key)) missing.push(p);
        }
      }
    }
    expect(missing, 'templates or placeholders no finding exercises (add a fixture or case, or list them in UNTESTED)').toEqual([]);
    for (const key of UNTESTED) expect(exercised.has(key), `${key} is listed as untested but is exercised`).toBe(false);
  });

  it('the JSON report carries messageId and data', async () => {
    const r = await analyze({ events: EXTRA[0]!.events });
    const f = r.findings.find((x) => x.rule === 'missing-token')!;
    expect(f.messageId).toBe('missing-token/droppedLate');
    expect(f.data).toEqual({ writer: 'A', sent: '3' });
    expect(f.message).toBe('A wrote without a fencing token and the resource accepted it, although the worker sent token 3: the token was dropped in transit');
    expect(Object.isFrozen(f.data)).toBe(true);
  });

  it('templates name only placeholders, and ids are plain names', () => {
    for (const rule of rules) {
      for (const [id, template] of Object.entries(rule.messages)) {
        expect(id, rule.meta.id).toMatch(/^[A-Za-z][A-Za-z0-9_]*$/);
        // Every brace in a template belongs to a placeholder.
        expect(template.replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, ''), `${rule.meta.id}/${id}`).not.toMatch(/[{}]/);
      }
    }
  });
});

describe('formatMessage', () => {
  it('replaces placeholders with data verbatim, numbers as text', () => {
    expect(formatMessage('{a} wrote {n} times; {a} again', { a: 'worker-<b>&"x"', n: 3 })).toBe('worker-<b>&"x" wrote 3 times; worker-<b>&"x" again');
    expect(formatMessage('no placeholders', {})).toBe('no placeholders');
    expect(formatMessage('{x}', { x: 0 })).toBe('0');
    expect(formatMessage('{x}', { x: '' })).toBe('');
  });

  it('throws on a placeholder with no data', () => {
    expect(() => formatMessage('{writer} wrote with token {token}', { writer: 'A' })).toThrow(MessageDataError);
    expect(() => formatMessage('{writer} wrote with token {token}', { writer: 'A' })).toThrow(/\{token\}/);
    // Inherited properties are not data.
    expect(() => formatMessage('{toString}', {})).toThrow(MessageDataError);
  });

  it('does not re-read braces in data values (one pass)', () => {
    expect(formatMessage('{a} and {b}', { a: '{b}', b: 'B' })).toBe('{b} and B');
    expect(formatMessage('{a}', { a: '{missing}' })).toBe('{missing}');
    expect(formatMessage('{a}', { a: '$& $1 $$' })).toBe('$& $1 $$');
  });

  it('leaves braces that are not placeholders', () => {
    expect(formatMessage('{ a } {1} {} {a', { a: 'x' })).toBe('{ a } {1} {} {a');
  });

  it('lists placeholders once each, in order', () => {
    expect(placeholdersOf('{b} {a} {b} { c }')).toEqual(['b', 'a']);
  });
});
