#!/usr/bin/env node
// A deterministic, seeded log of canonical events (or pino-style app-json lines) for benchmarks:
//   node bench/generate.mjs --mb 200 --resources 100000 --seed 1 [--style canonical|pino] [--cover] > log.ndjson
// --cover: the first cycles visit every resource once, in order, then they are picked at random
// (without it, each cycle's resource is random, so a log too small for its resource count sees
// only part of them: 100 MB with 1M resources reaches about 130 000).
// About 200-byte lines: per resource, leases are acquired, kept alive and released, and writes
// carry tokens; a few resources get incidents (late accepted writes, stale releases, no token).
import { parseArgs } from 'node:util';

process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const { values: a } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    resources: { type: 'string', default: '100000' },
    seed: { type: 'string', default: '1' },
    style: { type: 'string', default: 'canonical' },
    'incident-every': { type: 'string', default: '1000' },
    cover: { type: 'boolean', default: false },
  },
});
const targetBytes = Number(a.mb) * 1e6;
const nRes = Number(a.resources);
const incidentEvery = Number(a['incident-every']);
let seed = Number(a.seed) >>> 0 || 1;
const rand = () => {
  // xorshift32
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 4294967296;
};

const t0 = Date.UTC(2026, 2, 1, 0, 0, 0);
const state = new Array(nRes); // per resource: token, lease, owner
const pino = a.style === 'pino';
let bytes = 0;
let ts = t0;
const out = [];
const flush = () => {
  const chunk = out.join('');
  out.length = 0;
  return new Promise((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once('drain', resolve)));
};

const MSG = { acquire: 'lock granted to worker', keepalive: 'lease renewed by worker', release: 'lock released by worker', write: 'resource write result' };

function line(type, r, o) {
  ts += 1 + Math.floor(rand() * 3);
  const iso = new Date(ts).toISOString();
  let s;
  if (pino) {
    const msg = { acquire: 'lock acquired', keepalive: 'keepalive ok', release: 'lock released', write: 'write' }[type];
    s = `{"level":30,"time":${ts},"pid":${1000 + (o.owner % 50)},"hostname":"host-${o.owner % 50}","msg":"${msg}","resource":"res-${r}","owner":"w-${o.owner}","lease":"${o.lease}"${o.token !== undefined ? `,"fence":"${o.token}"` : ''}${type === 'write' ? `,"opId":"op-${r}-${o.op}","rowCount":${o.result === 'accepted' ? 1 : 0}` : ''}${type === 'acquire' ? ',"ttlMs":10000' : ''}}\n`;
  } else {
    s = `{"ts":"${iso}","type":"${type}","resource":"res-${r}","ownerId":"w-${o.owner}","leaseId":"${o.lease}"${o.token !== undefined ? `,"fenceToken":"${o.token}"` : ''}${type === 'acquire' ? ',"ttlMs":10000' : ''}${type === 'write' ? `,"operationId":"op-${r}-${o.op}","result":"${o.result}","value":"v${o.op}"` : ''},"msg":"${MSG[type]}"}\n`;
  }
  bytes += s.length;
  out.push(s);
}

let op = 0;
let cycle = 0;
while (bytes < targetBytes) {
  const r = a.cover && cycle < nRes ? cycle : Math.floor(rand() * nRes);
  cycle++;
  let st = state[r];
  if (st === undefined) state[r] = st = { token: 0, lease: 0, owner: 0 };
  st.token++;
  st.lease = `l${r}-${st.token}`;
  st.owner = Math.floor(rand() * 500);
  const h = { owner: st.owner, lease: st.lease, token: st.token };
  line('acquire', r, h);
  line('keepalive', r, { owner: h.owner, lease: h.lease });
  const incident = r % incidentEvery === 0 && rand() < 0.5;
  line('write', r, { ...h, op: ++op, result: 'accepted' });
  if (incident && st.token > 1) {
    // a late write with the previous token, accepted: an accepted stale write
    line('write', r, { owner: h.owner + 1, lease: `l${r}-${st.token - 1}`, token: st.token - 1, op: ++op, result: 'accepted' });
  }
  line('release', r, { owner: h.owner, lease: h.lease, token: h.token });
  if (out.length > 2000) await flush();
}
await flush();
