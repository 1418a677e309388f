/**
 * The k8s-leaderelection profile, line by line: every message client-go's leader election logs
 * (tools/leaderelection/leaderelection.go at v0.34.0, printf style, and v0.35.0, structured), in
 * klog text and in klog's JSON format, becomes the event the README's "Lock services" section says.
 * The messages are client-go's own; the README quotes the same ones, and the fixtures under
 * fixtures/profiles/k8s/ carry each of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LockEvent } from '../src/model/event.js';
import { detectProfile, getProfile } from '../src/profiles/index.js';
import { klogParser, leaseInText } from '../src/profiles/parsers.js';
import { FIXTURES, ROOT } from './helpers/run.js';

const LOCK = 'kube-system/kube-controller-manager';
const OTHER = 'kcm-node-b_0a9c41d2-77e0-4b8e-a1f5-3c2d9e8b6a10';

type Want = { type: LockEvent['type']; result: string } | 'ignored';

/**
 * [style, the source's text (printf format, or the structured message), its arguments or pairs,
 * its line in leaderelection.go at the tag, its verbosity, the event].
 */
const LINES: [string, string, string[] | Record<string, string>, number, number, Want][] = [
  // client-go up to v0.34: printf style (klog.Infof), the lease (Describe(): "ns/name") in the message.
  ['v0.34', 'attempting to acquire leader lease %v...', [LOCK], 257, 0, 'ignored'],
  ['v0.34', 'failed to acquire lease %v', [LOCK], 266, 4, 'ignored'],
  ['v0.34', 'successfully acquired lease %v', [LOCK], 271, 0, { type: 'acquire', result: 'granted' }],
  ['v0.34', 'successfully renewed lease %v', [LOCK], 293, 5, { type: 'keepalive', result: 'ok' }],
  ['v0.34', 'failed to renew lease %v: %v', [LOCK, 'context deadline exceeded'], 297, 0, { type: 'expire', result: 'expired' }],
  ['v0.34', 'lock has expired: %v', [LOCK], 374, 0, { type: 'expire', result: 'expired' }],
  ['v0.34', 'lock is held by %v and has not yet expired: %v', [OTHER, LOCK], 379, 6, { type: 'acquire', result: 'busy' }],
  ['v0.34', 'lock is held by %v and has not yet expired', [OTHER], 468, 4, { type: 'acquire', result: 'busy' }],
  // client-go from v0.35: structured (logger.Info), the lease in the `lock` pair.
  ['v0.35', 'Attempting to acquire leader lease...', { lock: LOCK }, 258, 0, 'ignored'],
  ['v0.35', 'Failed to acquire lease', { lock: LOCK }, 267, 4, 'ignored'],
  ['v0.35', 'Successfully acquired lease', { lock: LOCK }, 272, 0, { type: 'acquire', result: 'granted' }],
  ['v0.35', 'Successfully renewed lease', { lock: LOCK }, 295, 5, { type: 'keepalive', result: 'ok' }],
  ['v0.35', 'Failed to renew lease', { lock: LOCK, err: 'context deadline exceeded' }, 299, 0, { type: 'expire', result: 'expired' }],
  ['v0.35', 'Lease has expired', { lock: LOCK }, 377, 0, { type: 'expire', result: 'expired' }],
  ['v0.35', 'Lease is held and has not yet expired', { lock: LOCK, holder: OTHER }, 382, 6, { type: 'acquire', result: 'busy' }],
  ['v0.35', 'Lease is held by and has not yet expired', { lock: LOCK, holder: OTHER }, 472, 4, { type: 'acquire', result: 'busy' }],
];

const printf = (format: string, args: string[]) => args.reduce((s, a) => s.replace('%v', a), format);

/** klog text: `I0301 10:30:00.012877       1 leaderelection.go:272] …` (klog's header; the pid padded to 7). */
function textLine(text: string, args: string[] | Record<string, string>, line: number): string {
  const body = Array.isArray(args) ? printf(text, args) : [JSON.stringify(text), ...Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`)].join(' ');
  return `I0301 10:30:00.012877       1 leaderelection.go:${line}] ${body}`;
}

/** klog JSON (component-base logs/json): epoch-ms float `ts`, `caller`, `msg`, `v`, then the pairs. */
function jsonLine(text: string, args: string[] | Record<string, string>, line: number, v: number, caller = 'leaderelection/leaderelection.go'): string {
  const msg = Array.isArray(args) ? printf(text, args) : text;
  return JSON.stringify({ ts: 1772361000012.877, caller: `${caller}:${line}`, msg, v, ...(Array.isArray(args) ? {} : args) });
}

const KLOG = { year: 2026, zone: 'Z' };
const origin = (text: string) => ({ file: '/logs/kcm-node-a.log', line: 2, source: '/logs/kcm-node-a.log', text });

describe('k8s-leaderelection reads client-go leader election, v0.34 and v0.35', () => {
  it.each(LINES.flatMap(([style, text, args, line, v, want]) => {
    // Only the V(4) printf busy line names no lease.
    const named = !Array.isArray(args) || args.includes(LOCK);
    return [[`${style} klog text`, textLine(text, args, line), want, named] as const, [`${style} klog JSON`, jsonLine(text, args, line, v), want, named] as const];
  }))('%s: %s', (_style, line, want, named) => {
    const profile = getProfile('k8s-leaderelection', { klog: KLOG });
    const parse = klogParser(KLOG);
    // The V(4) printf busy line names no lease: it is carried from an earlier line of the same file
    // (here a line that names another lease, which every line that names its own must override).
    const before = textLine('attempting to acquire leader lease %v...', ['kube-system/earlier'], 257);
    profile.toEvent(parse(before) as Record<string, unknown>, { ...origin(before), line: 1 });
    const rec = parse(line);
    expect(typeof rec).toBe('object');
    const ev = profile.toEvent(rec as Record<string, unknown>, origin(line));
    if (want === 'ignored') {
      expect(ev === null || ev === undefined, JSON.stringify(ev)).toBe(true);
      return;
    }
    expect(typeof ev, String(ev)).toBe('object');
    const e = ev as LockEvent;
    expect({ type: e.type, result: e.result }).toEqual(want);
    expect(e.resource).toBe(named ? LOCK : 'kube-system/earlier');
    // The owner is the file: client-go logs no identity, and `holder` is the other pod.
    expect(e.ownerId).toBe('kcm-node-a.log');
    expect(e.observer).toBe('worker');
    expect(e.fenceToken).toBeUndefined();
    expect(Math.floor(e.ts)).toBe(Date.parse('2026-03-01T10:30:00.012Z'));
  });

  it('names the lease only where a printf message names it: no "..." of the attempt, no "i/o" of an error', () => {
    expect(leaseInText(`attempting to acquire leader lease  ${LOCK}...`)).toBe(LOCK);
    expect(leaseInText(`error retrieving resource lock ${LOCK}: Get "https://10.0.0.1:443/apis": context deadline exceeded`)).toBe(LOCK);
    expect(leaseInText(printf('lock is held by %v and has not yet expired: %v', [OTHER, LOCK]))).toBe(LOCK);
    expect(leaseInText(printf('lock is held by %v and has not yet expired', [OTHER]))).toBeUndefined();
    expect(leaseInText('k8s.io/client-go/informers/factory.go:160: failed to list *v1.Pod: dial tcp 10.0.0.1:443: i/o timeout')).toBeUndefined();
    // klog JSON: a printf message gives `lock`; a structured line keeps its own pair.
    const parse = klogParser();
    expect(parse(jsonLine('successfully acquired lease %v', [LOCK], 271, 0))).toMatchObject({ lock: LOCK });
    expect(parse(jsonLine('Successfully acquired lease %v', { lock: 'ns/own' }, 272, 0))).toMatchObject({ lock: 'ns/own' });
  });

  it('detects klog JSON for --profile auto, also when the first line is not leader election', () => {
    expect(detectProfile(jsonLine('Serving securely on [::]:10259', [], 211, 0, 'server/secure_serving.go'))).toBe('k8s-leaderelection');
    // zap production lines (level, float-second ts) and bunyan (level, v) stay app-json.
    expect(detectProfile('{"level":"info","ts":1772361000.0128,"caller":"app/main.go:40","msg":"started"}')).toBe('app-json');
    expect(detectProfile('{"name":"w","hostname":"h","pid":1,"level":30,"msg":"x","time":"2026-03-01T10:30:00Z","v":0}')).toBe('app-json');
  });

  it('every message above is quoted in the README and logged in a fixture under fixtures/profiles/k8s/', () => {
    const dir = join(FIXTURES, 'profiles', 'k8s');
    const logs = readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.log'))
      .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
      .join('\n');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const [style, text, args] of LINES) {
      if (Array.isArray(args)) {
        expect(readme, `${style}: ${text}`).toContain(`\`${text}\``);
        // Each %v stands for a lease name, a holder or an error.
        const re = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%v/g, '[^"\\n]+?') + '(\\n|")');
        expect(logs, `${style}: ${text}`).toMatch(re);
      } else {
        expect(readme, `${style}: ${text}`).toContain(`\`"${text}"`);
        expect(logs, `${style}: ${text}`).toContain(`"${text}"`);
      }
    }
  });
});
