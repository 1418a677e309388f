/**
 * OpenTelemetry logs in OTLP/JSON: a line holding an export batch
 * (`resourceLogs[].resource.attributes` → `scopeLogs[].logRecords[]`) expands into one record per
 * log record; a line holding one log record is one record. Attributes (typed AnyValues) are
 * flattened under their keys (`service.instance.id` stays one key); `intValue` stays a string so
 * large ids and tokens are exact. The body becomes `body`; trace and span ids are kept.
 */

type Rec = Record<string, unknown>;

export function expandOtlp(record: Rec): Rec[] {
  const batches = record.resourceLogs;
  if (!Array.isArray(batches)) return [flatten(record, undefined)];
  const out: Rec[] = [];
  for (const rl of batches) {
    if (rl === null || typeof rl !== 'object') continue;
    const resourceAttrs = attributes((rl as Rec).resource !== null && typeof (rl as Rec).resource === 'object' ? ((rl as Rec).resource as Rec).attributes : undefined);
    const scopes = (rl as Rec).scopeLogs;
    if (!Array.isArray(scopes)) continue;
    for (const sl of scopes) {
      const records = sl !== null && typeof sl === 'object' ? (sl as Rec).logRecords : undefined;
      if (!Array.isArray(records)) continue;
      for (const lr of records) if (lr !== null && typeof lr === 'object') out.push(flatten(lr as Rec, resourceAttrs));
    }
  }
  return out;
}

function flatten(lr: Rec, resourceAttrs: Rec | undefined): Rec {
  const out: Rec = Object.create(null) as Rec;
  if (resourceAttrs !== undefined) Object.assign(out, resourceAttrs);
  Object.assign(out, attributes(lr.attributes));
  for (const key of ['timeUnixNano', 'observedTimeUnixNano', 'severityText', 'severityNumber', 'traceId', 'spanId']) {
    if (lr[key] !== undefined) out[key] = lr[key];
  }
  if (lr.body !== undefined) out.body = anyValue(lr.body);
  return { ...out };
}

function attributes(list: unknown): Rec {
  const out: Rec = Object.create(null) as Rec;
  if (!Array.isArray(list)) return out;
  for (const kv of list) {
    if (kv === null || typeof kv !== 'object' || typeof (kv as Rec).key !== 'string') continue;
    out[(kv as Rec).key as string] = anyValue((kv as Rec).value);
  }
  return out;
}

function anyValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  const a = v as Rec;
  if ('stringValue' in a) return a.stringValue;
  if ('intValue' in a) return typeof a.intValue === 'number' ? a.intValue : String(a.intValue);
  if ('doubleValue' in a) return a.doubleValue;
  if ('boolValue' in a) return a.boolValue;
  if ('bytesValue' in a) return a.bytesValue;
  if ('arrayValue' in a) {
    const values = (a.arrayValue as Rec | null)?.values;
    return Array.isArray(values) ? values.map(anyValue) : [];
  }
  if ('kvlistValue' in a) return attributes((a.kvlistValue as Rec | null)?.values);
  return undefined;
}
