/**
 * Reading values out of a mapping's records: where each canonical field is looked up by default,
 * dot paths through own properties, the getters of the canonical fields (first present candidate,
 * resolved once per record), and the `{path}` / `{$file}` templates of `defaults`.
 */
import { basename } from 'node:path';
import { MappingError } from './names.js';
import type { RecordOrigin } from './types.js';

/** Where canonical fields are looked up when a mapping does not say. */
export const DEFAULT_FIELDS: Record<string, string[]> = {
  ts: ['ts'],
  type: ['type'],
  message: ['msg', 'message'],
  resource: ['resource'],
  ownerId: ['ownerId'],
  leaseId: ['leaseId'],
  operationId: ['operationId'],
  fenceToken: ['fenceToken'],
  ttlMs: ['ttlMs'],
  result: ['result'],
  observer: ['observer'],
  // The clock domain: pino/bunyan `hostname`, OpenTelemetry `host.name` (never a bare `host`).
  source: ['source', 'hostname', 'host.name'],
  rowCount: ['rowCount'],
};

export type Getter = (record: Record<string, unknown>) => unknown;

/** The value at a dot path, through own properties only; a key that itself holds dots is tried whole first. */
export function pathGetter(path: string): Getter {
  if (!path.includes('.')) {
    // A key Object.prototype lacks is own or absent on a parsed record: read it directly.
    if (!(path in Object.prototype)) return (r) => r[path];
    return (r) => own(r, path);
  }
  const parts = path.split('.');
  return (r) => {
    const whole = own(r, path);
    if (whole !== undefined) return whole;
    let v: unknown = r;
    for (const p of parts) {
      if (v === null || typeof v !== 'object') return undefined;
      v = own(v as Record<string, unknown>, p);
    }
    return v;
  };
}

function own(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

/**
 * Getters of the canonical fields, each giving its first present candidate. The fields whose
 * candidates are all top-level keys are resolved together, once per record, in one pass over the
 * record's keys (a record has about ten; the candidates of all fields are some sixty, and probing
 * each of them is slow on records of many shapes). Rules test '@type' or '@message' again and
 * again on the same record, and toEvent reads the fields once more: all of that reads the result.
 */
export function fieldGetters(candidates: Map<string, string[]>): Map<string, Getter> {
  const getters = new Map<string, Getter>();
  const indexed: string[] = [];
  const byKey = new Map<string, { field: number; rank: number }[]>();
  for (const [field, paths] of candidates) {
    if (paths.some((p) => p.includes('.'))) {
      getters.set(field, memo(firstOf(paths)));
      continue;
    }
    const f = indexed.push(field) - 1;
    paths.forEach((key, rank) => {
      let hits = byKey.get(key);
      if (hits === undefined) byKey.set(key, (hits = []));
      hits.push({ field: f, rank });
    });
  }
  const values: unknown[] = new Array(indexed.length).fill(undefined);
  const ranks = new Int32Array(indexed.length);
  let last: Record<string, unknown> | undefined;
  const resolve = (r: Record<string, unknown>): void => {
    values.fill(undefined);
    ranks.fill(0x7fffffff);
    for (const key in r) {
      const hits = byKey.get(key);
      if (hits === undefined) continue;
      const v = r[key];
      if (v === undefined || v === null || v === '') continue;
      for (let i = 0; i < hits.length; i++) {
        const h = hits[i]!;
        if (h.rank < ranks[h.field]!) {
          ranks[h.field] = h.rank;
          values[h.field] = v;
        }
      }
    }
    last = r;
  };
  indexed.forEach((field, f) =>
    getters.set(field, (r) => {
      if (r !== last) resolve(r);
      return values[f];
    }),
  );
  return getters;
}

/** A getter that remembers its last record. */
function memo(get: Getter): Getter {
  let last: Record<string, unknown> | undefined;
  let value: unknown;
  return (r) => {
    if (r !== last) {
      value = get(r);
      last = r;
    }
    return value;
  };
}

/** The first candidate path whose value is present (not undefined, null or ""). */
function firstOf(paths: string[]): Getter {
  const getters = paths.map(pathGetter);
  if (getters.length === 1) {
    const g = getters[0]!;
    return (r) => present(g(r));
  }
  return (r) => {
    for (const g of getters) {
      const v = present(g(r));
      if (v !== undefined) return v;
    }
    return undefined;
  };
}

export function present(v: unknown): unknown {
  return v === null || v === '' ? undefined : v;
}

type Template = (record: Record<string, unknown>, origin: RecordOrigin) => string | undefined;

/** `{path}` placeholders from the record, `{$file}` for the input's base name. */
export function template(t: string, where: string): Template {
  const parts = t.split(/(\{[^{}]+\})/).filter((p) => p !== '');
  const pieces = parts.map((p) => {
    if (!p.startsWith('{')) return () => p;
    const name = p.slice(1, -1);
    if (name === '$file') return (_r: Record<string, unknown>, o: RecordOrigin) => basename(o.file);
    if (name.startsWith('$')) throw new MappingError(`${where}: unknown placeholder ${p} (use {$file} or a field path)`);
    const g = pathGetter(name);
    return (r: Record<string, unknown>) => str(present(g(r)));
  });
  return (record, origin) => {
    let out = '';
    for (const piece of pieces) {
      const v = piece(record, origin);
      if (v === undefined) return undefined;
      out += v;
    }
    return out;
  };
}

export function str(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return undefined;
}
