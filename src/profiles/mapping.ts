/**
 * Mapping files (`--mapping FILE`) and the built-in profiles written in the same language: which
 * records are which event type (match rules), where each canonical field lives (dot paths, first
 * present wins), value maps, timestamp formats, identifier normalisation and defaults. Compiled
 * once, when loaded; every mistake is reported then, with its path in the file, not per line.
 *
 * This is the public entry: reading a mapping file, checking it against the schema (with messages
 * that name the path), and handing it to mapping-compile.ts. The match conditions are in
 * mapping-conditions.ts, reading fields out of records in mapping-fields.ts, and the regular
 * expressions' safety in regex.ts.
 */
import type { ErrorObject } from 'ajv';
import { readFileSync } from 'node:fs';
import validateMappingSpec from '../generated/mapping-validator.js';
import { DURATION_UNIT_NAMES, DURATION_UNITS } from '../model/time.js';
import { MappingError } from './names.js';
import { describeJsonError } from './json-error.js';
import type { Profile } from './types.js';
import { compileSpec, type CompileOptions, type MappingSpec } from './mapping-compile.js';

export { MappingError };
export type { CompileOptions, DurationUnit, MappingSpec } from './mapping-compile.js';
export { pathGetter } from './mapping-fields.js';
export { subsumes } from './mapping-conditions.js';
export { hasNestedQuantifier, MAX_REGEX_INPUT, safeRegex } from './regex.js';

export function loadMapping(path: string, options: CompileOptions = {}): Profile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new MappingError(`cannot read mapping ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  let spec: unknown;
  try {
    spec = JSON.parse(text);
  } catch (err) {
    throw new MappingError(`mapping ${path} is not valid JSON: ${describeJsonError(text, err)}`);
  }
  return compileMapping(spec, path, options);
}

export function compileMapping(spec: unknown, name: string, options: CompileOptions = {}): Profile {
  checkUnits(spec, name);
  if (!validateMappingSpec(spec)) throw new MappingError(`mapping ${name}: ${explain(validateMappingSpec.errors ?? [])}`);
  return compileSpec(spec as MappingSpec, name, options);
}

/**
 * `units` is checked before the schema so that a wrong unit gets a message naming the units:
 * `mapping X: /units/ttlMs: "sec" is not a unit (ns, us, ms, s, min, h)`.
 */
function checkUnits(spec: unknown, name: string): void {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return;
  const units = (spec as { units?: unknown }).units;
  if (units === undefined || units === null || typeof units !== 'object' || Array.isArray(units)) return; // the schema says what is wrong
  for (const [field, unit] of Object.entries(units as Record<string, unknown>)) {
    if (field !== 'ttlMs') throw new MappingError(`mapping ${name}: /units/${field}: not a canonical duration field (units can be given for ttlMs)`);
    if (typeof unit !== 'string' || DURATION_UNITS[unit] === undefined) {
      throw new MappingError(`mapping ${name}: /units/${field}: ${JSON.stringify(unit)} is not a unit (${DURATION_UNIT_NAMES.join(', ')})`);
    }
  }
}

function explain(errors: ErrorObject[]): string {
  const e = errors[0];
  if (e === undefined) return 'does not match the mapping schema';
  const at = e.instancePath === '' ? '/' : e.instancePath;
  const badName = (e as ErrorObject & { propertyName?: string }).propertyName;
  if (badName !== undefined) {
    const allowed = e.keyword === 'enum' ? ` (one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})` : '';
    return `${at}: "${badName}" is not allowed here${allowed}`;
  }
  if (e.keyword === 'additionalProperties') return `${at}: unknown key "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === 'propertyNames') return `${at}: ${e.message} (${JSON.stringify((e.params as { propertyName: string }).propertyName)})`;
  if (e.keyword === 'enum') return `${at}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${at}: ${e.message}`;
}
