// The article's unsafe incident on each of `n` resources, as canonical NDJSON lines in time
// order: worker-a's lease expires during a pause, worker-b takes over and writes, then
// worker-a's late write with the older token is accepted. Two findings per resource
// (accepted-stale-write, keepalive-gap). For the HTML report's size and load checks.
export function articleIncidents(n) {
  const t0 = Date.UTC(2026, 2, 1, 10, 0, 0);
  const iso = (ms) => new Date(ms).toISOString();
  const events = [];
  for (let i = 0; i < n; i++) {
    const resource = `orders/${i}`;
    const at = t0 + i * 7;
    const a = { resource, ownerId: 'worker-a', leaseId: `lease-${i}-a` };
    const b = { resource, ownerId: 'worker-b', leaseId: `lease-${i}-b` };
    events.push(
      { ts: at, type: 'acquire', ...a, fenceToken: 2 * i + 1, ttlMs: 10000 },
      { ts: at + 3000, type: 'keepalive', ...a, result: 'ok' },
      { ts: at + 13000, type: 'expire', resource, leaseId: a.leaseId },
      { ts: at + 14000, type: 'acquire', ...b, fenceToken: 2 * i + 2, ttlMs: 10000 },
      { ts: at + 15000, type: 'write', ...b, fenceToken: 2 * i + 2, result: 'accepted', value: `b${i}` },
      { ts: at + 16000, type: 'write', ...a, fenceToken: 2 * i + 1, result: 'accepted', value: `a${i}` },
    );
  }
  events.sort((x, y) => x.ts - y.ts);
  return events.map((e) => JSON.stringify({ ...e, ts: iso(e.ts) }));
}
