/**
 * Random multi-resource lock histories for the partition tests (merge.test.ts, scale-out.test.ts):
 * a few resources, each with leases handed from worker to worker, fenced writes (some stale and
 * accepted, some without a token, some answered only by the worker), releases from old handles,
 * operation ids logged by the worker and the resource, lines delivered twice, invalid and blank
 * lines, clocks that step back, and the lines spread over several inputs. Seeded: reproducible.
 */
import fc from 'fast-check';

export interface History {
  /** Input files: name → lines (without newlines). */
  files: { name: string; lines: string[] }[];
}

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

interface Step {
  r: number;
  kind: 'hand' | 'write' | 'stale' | 'untokened' | 'view' | 'oldRelease' | 'keepalive' | 'expire' | 'garbage' | 'invalidKeyed' | 'copy' | 'step';
  dt: number;
  file: number;
  equalTs: boolean;
}

const stepArb = fc.record({
  r: fc.nat({ max: 5 }),
  kind: fc.constantFrom<Step['kind']>('hand', 'write', 'write', 'write', 'stale', 'untokened', 'view', 'view', 'oldRelease', 'keepalive', 'expire', 'garbage', 'invalidKeyed', 'copy', 'step'),
  dt: fc.integer({ min: 0, max: 3000 }),
  file: fc.nat({ max: 3 }),
  equalTs: fc.boolean(),
});

export interface HistoryOptions {
  /** Inputs the lines are spread over (1 to 4). */
  inputs?: number;
  /** Allow clock steps back and lines out of order. */
  disorder?: boolean;
}

/** An arbitrary history. */
export function historyArb(options: HistoryOptions = {}): fc.Arbitrary<History> {
  const inputs = options.inputs ?? 3;
  return fc
    .array(stepArb, { minLength: 10, maxLength: 70 })
    .map((steps) => build(steps, inputs, options.disorder ?? true))
    .filter((h) => h.files.length > 0);
}

function build(steps: readonly Step[], inputs: number, disorder: boolean): History {
  const files: { name: string; lines: string[] }[] = Array.from({ length: inputs }, (_, i) => ({ name: `in-${i}.ndjson`, lines: [] }));
  const state = new Map<number, { token: number; owner: string; lease: string; prev?: { owner: string; lease: string; token: number } }>();
  let t = T0;
  let op = 0;
  let lastLine: { file: number; line: string } | undefined;
  const emit = (file: number, rec: Record<string, unknown>) => {
    // Keys written with escapes the engine must read as the same key (\/ and \u…).
    const odd = typeof rec.resource === 'string' && rec.resource.length % 2 === 1;
    const line = JSON.stringify(rec).replace('"resource":"cart/', '"resource":"cart\\/').replace('"resource":"job-', odd ? '"resource":"job\\u002d' : '"resource":"job-');
    files[file % inputs]!.lines.push(line);
    lastLine = { file: file % inputs, line };
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  for (const s of steps) {
    if (!s.equalTs) t += s.dt + 1;
    const res = s.r % 3 === 0 ? `orders/${s.r}` : s.r % 3 === 1 ? `cart/${s.r}` : `job-${s.r}`;
    const st = state.get(s.r);
    const f = s.file;
    // Each input is one clock domain unless a step says otherwise.
    const src = `host-${f % inputs}`;
    const base = { ts: iso(t), resource: res, source: src };
    switch (s.kind) {
      case 'hand': {
        const token = (st?.token ?? 0) + 1;
        const owner = `w${(token % 3) + 1}`;
        const lease = `l${s.r}-${token}`;
        if (st !== undefined) emit(0, { ...base, source: 'authority', type: 'expire', ownerId: st.owner, leaseId: st.lease, observer: 'authority' });
        emit(0, { ...base, source: 'authority', type: 'acquire', ownerId: owner, leaseId: lease, fenceToken: String(token), ttlMs: 5000 });
        state.set(s.r, { token, owner, lease, prev: st === undefined ? undefined : { owner: st.owner, lease: st.lease, token: st.token } });
        break;
      }
      case 'write':
      case 'stale':
      case 'untokened':
      case 'view': {
        if (st === undefined) break;
        const who = s.kind === 'stale' && st.prev !== undefined ? st.prev : st;
        const id = `op-${++op}`;
        const rec: Record<string, unknown> = { ...base, type: 'write', ownerId: who.owner, leaseId: who.lease, operationId: id, result: 'accepted', observer: 'resource' };
        if (s.kind !== 'untokened') rec.fenceToken = String(who.token);
        // The worker's view of the write, logged a little earlier by its own clock (in order: at once).
        if (s.kind === 'view') emit(f + 1, { ...rec, observer: 'worker', source: `worker-${who.owner}`, ts: iso(disorder ? t - (s.dt % 200) : t) });
        emit(f, rec);
        break;
      }
      case 'oldRelease':
        if (st?.prev !== undefined) emit(0, { ...base, source: 'authority', type: 'release', ownerId: st.prev.owner, leaseId: st.prev.lease, result: 'released' });
        break;
      case 'keepalive':
        if (st !== undefined) emit(0, { ...base, source: 'authority', type: 'keepalive', ownerId: st.owner, leaseId: st.lease, result: s.dt % 5 === 0 ? 'failed' : 'ok' });
        break;
      case 'expire':
        if (st !== undefined) emit(0, { ...base, source: 'authority', type: 'expire', ownerId: st.owner, leaseId: st.lease });
        break;
      case 'garbage':
        files[f % inputs]!.lines.push(s.dt % 3 === 0 ? '' : s.dt % 3 === 1 ? 'not json {' : '{"ts":"bad","type":"write"}');
        if (!disorder) lastLine = undefined;
        break;
      case 'invalidKeyed':
        // Read by the key reader, invalid for its partition.
        files[f % inputs]!.lines.push(JSON.stringify({ ...base, type: 'grab', ts: iso(disorder ? t + (s.dt % 2 === 0 ? 5000 : 0) : t) }));
        if (!disorder) lastLine = undefined;
        break;
      case 'copy':
        // In order: only the line just written, into its own input (a copy of an older line is behind).
        if (lastLine !== undefined) files[(lastLine.file + (disorder ? s.dt % 2 : 0)) % inputs]!.lines.push(lastLine.line);
        break;
      case 'step':
        if (disorder) t -= (s.dt % 4) * 400;
        break;
    }
  }
  return { files: files.filter((x) => x.lines.length > 0) };
}
