/** The profiles by name, and `auto`, which picks one per input from its first record. */
import { canonical } from './canonical.js';
import { APP_JSON, K8S_LEADERELECTION, LOGFMT, OTLP_JSON, ZOOKEEPER } from './builtin.js';
import { compileMapping, loadMapping, type CompileOptions } from './mapping.js';
import type { Profile, ProfileRecipe } from './types.js';
import { EVENT_TYPES } from '../model/event.js';

import { PROFILE_NAMES, type ProfileName } from './names.js';

export { PROFILE_NAMES, type ProfileName };

export function getProfile(name: ProfileName, options: CompileOptions = {}): Profile {
  switch (name) {
    case 'canonical':
      return canonical;
    case 'app-json':
      return compileMapping(APP_JSON, 'app-json', options);
    case 'logfmt':
      return compileMapping(LOGFMT, 'logfmt', options);
    case 'otlp-json':
      return compileMapping(OTLP_JSON, 'otlp-json', options);
    case 'k8s-leaderelection':
      return compileMapping(K8S_LEADERELECTION, 'k8s-leaderelection', options);
    case 'zookeeper':
      return compileMapping(ZOOKEEPER, 'zookeeper', options);
    case 'auto':
      return autoProfile(options);
  }
}

export { loadMapping, compileMapping };

/** The profile a recipe describes (in a parsing worker thread). */
export function rebuildProfile(recipe: ProfileRecipe): Profile {
  switch (recipe.kind) {
    case 'canonical':
      return canonical;
    case 'auto':
      return autoProfile(recipe.options as CompileOptions);
    case 'mapping':
      return compileMapping(recipe.spec, recipe.name, recipe.options as CompileOptions);
  }
}

const KLOG_LINE = /^[IWEF]\d{4} \d{2}:\d{2}:\d{2}/;
/** A Java logging line (log4j, logback): an ISO date and time first, bracketed or not. */
const JAVA_LINE = /^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}/;
const LOGFMT_LINE = /^[\w.@-]+=("[^"]*"|\S*)(\s+[\w.@-]+=("[^"]*"|\S*))+/;

/**
 * `auto`: decide per input from its first non-blank line. OTLP (resourceLogs or timeUnixNano),
 * canonical (type, resource and ts as in format v1), klog (text header, or klog JSON: a leaderelection
 * line, or any with a numeric `ts` and `v`, `caller` and `msg`, and no `level`), Java logging text
 * (a ZooKeeper server's or a Curator application's log: zookeeper), logfmt (key=value pairs), else
 * app-json.
 */
export function autoProfile(options: CompileOptions = {}): Profile {
  const cache = new Map<string, Profile>();
  const get = (name: ProfileName) => {
    let p = cache.get(name);
    if (p === undefined) cache.set(name, (p = getProfile(name, options)));
    return p;
  };
  return {
    name: 'auto',
    recipe: { kind: 'auto', options },
    // One of the inputs may be a ZooKeeper server's log, whose session expiries name no resource.
    leaseScoped: true,
    detect(firstLine: string): Profile {
      return get(detectProfile(firstLine));
    },
    toEvent() {
      throw new Error('the auto profile detects a profile per input first');
    },
  };
}

export function detectProfile(line: string): Exclude<ProfileName, 'auto'> {
  const text = line.trim();
  if (KLOG_LINE.test(text)) return 'k8s-leaderelection';
  if (text.startsWith('{')) {
    let rec: unknown;
    try {
      rec = JSON.parse(text);
    } catch {
      return 'app-json';
    }
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) return 'app-json';
    const r = rec as Record<string, unknown>;
    if ('resourceLogs' in r || 'timeUnixNano' in r) return 'otlp-json';
    if (typeof r.type === 'string' && (EVENT_TYPES as readonly string[]).includes(r.type) && typeof r.resource === 'string' && 'ts' in r) return 'canonical';
    if (typeof r.caller === 'string' && typeof r.msg === 'string') {
      if (/leaderelection|lease/i.test(r.caller + ' ' + r.msg)) return 'k8s-leaderelection';
      // klog's JSON format (component-base logs/json): epoch-ms `ts`, a verbosity `v` on info lines, no `level`.
      if (typeof r.ts === 'number' && typeof r.v === 'number' && !('level' in r)) return 'k8s-leaderelection';
    }
    return 'app-json';
  }
  if (JAVA_LINE.test(text)) return 'zookeeper';
  if (LOGFMT_LINE.test(text)) return 'logfmt';
  return 'app-json';
}
