/**
 * Built-in profiles, written in the mapping language itself (so each is also an example of a
 * mapping file): app-json (JSON logger envelopes + lock-field aliases), logfmt, otlp-json,
 * k8s-leaderelection and zookeeper. `canonical` is the format v1 with its own strict validator.
 */
import type { MappingSpec } from './mapping.js';

const SEP = '[._ -]?';

/** Where app loggers put the time, and the aliases of the lock fields. */
export const APP_FIELDS: Record<string, string[]> = {
  ts: ['time', 'timestamp', 'ts', '@timestamp', 't'],
  type: ['event', 'type', 'kind'],
  message: ['msg', 'message', '@message', 'event'],
  resource: ['resource', 'resourceKey', 'resource_key', 'key', 'lockKey', 'lock_key', 'lock'],
  ownerId: ['ownerId', 'owner', 'worker', 'holder', 'owner_id', 'workerId', 'worker_id'],
  leaseId: ['leaseId', 'lease', 'lease_id', 'leaseID'],
  fenceToken: ['fenceToken', 'fence', 'fencing_token', 'fencingToken', 'fence_token', 'token'],
  operationId: ['operationId', 'opId', 'op_id', 'operation_id', 'idempotencyKey', 'idempotency_key'],
  rowCount: ['rowCount', 'rows', 'rowsAffected', 'rows_affected', 'row_count'],
  ttlMs: ['ttlMs', 'ttl_ms'],
  result: ['result', 'outcome'],
  observer: ['observer', 'role'],
  // The clock domain: a host's logs share one clock. Not a bare `host`: in access logs that is often the HTTP target.
  source: ['source', 'hostname', 'host.name'],
};

const re = (pattern: string) => ({ regex: pattern, flags: 'i' });
const WRITE_TYPE = re(`^(write|update|db${SEP}write|write${SEP}result|resource${SEP}write)$`);

/**
 * The event-type vocabulary: an explicit `event`/`type`/`kind` value first, then patterns in
 * the message. Documented in the README ("app-json").
 */
export const APP_RULES: MappingSpec['match'] = [
  { when: { '@type': re(`^(lock${SEP})?(busy|contended|acquire${SEP}busy|already${SEP}locked)$`) }, type: 'acquire', set: { result: 'busy' } },
  { when: { '@type': re(`^(lock${SEP})?(acquire|acquired|granted|key${SEP}created)$`) }, type: 'acquire' },
  { when: { '@type': re(`^(lease${SEP})?(keepalive|keep${SEP}alive|renew)${SEP}(failed|error)$`) }, type: 'keepalive', set: { result: 'failed' } },
  { when: { '@type': re(`^(lease${SEP})?(keepalive|keep${SEP}alive|renew|renewed|heartbeat)(${SEP}(ok|succeeded))?$`) }, type: 'keepalive' },
  { when: { '@type': re(`^(lease${SEP})?(expire|expired|lost)$`) }, type: 'expire' },
  { when: { '@type': re(`^(lease${SEP})?(revoke|revoked)$`) }, type: 'revoke' },
  { when: { '@type': re(`^(lock${SEP})?(release|unlock)${SEP}(rejected|refused|failed)$`) }, type: 'release', set: { result: 'rejected' } },
  { when: { '@type': re(`^(lock${SEP})?(release|released|unlock|unlocked)$`) }, type: 'release' },
  { when: { '@type': WRITE_TYPE, '@result': { exists: true } }, type: 'write' },
  { when: { '@type': WRITE_TYPE, '@rowCount': 0 }, type: 'write', set: { result: 'rejected-stale-fence' } },
  { when: { '@type': WRITE_TYPE, '@rowCount': { exists: true } }, type: 'write', set: { result: 'accepted' } },
  { when: { '@message': re('\\block (is )?busy\\b|\\balready (locked|held)\\b|\\block held by\\b') }, type: 'acquire', set: { result: 'busy' } },
  { when: { '@message': re('\\block acquired\\b|\\bacquired (the )?lock\\b') }, type: 'acquire' },
  { when: { '@message': re('\\bkeepalive failed\\b|\\bfailed to renew\\b|\\brenewal failed\\b') }, type: 'keepalive', set: { result: 'failed' } },
  { when: { '@message': re('\\bkeepalive (ok|succeeded)\\b|\\blease renewed\\b|\\brenewed (the )?lease\\b') }, type: 'keepalive' },
  { when: { '@message': re('\\blease (lost|expired)\\b') }, type: 'expire' },
  { when: { '@message': re('\\blease revoked\\b') }, type: 'revoke' },
  { when: { '@message': re('\\b(release|unlock) (rejected|refused)\\b') }, type: 'release', set: { result: 'rejected' } },
  { when: { '@message': re('\\block released\\b|\\breleased (the )?lock\\b') }, type: 'release' },
  { when: { '@message': re('\\bwrite rejected\\b|\\bstale (write|token|fence)\\b|\\bfenced off\\b') }, type: 'write', set: { result: 'rejected-stale-fence' } },
  { when: { '@message': re('\\bwrite (accepted|applied|committed)\\b') }, type: 'write', set: { result: 'accepted' } },
  { when: { '@message': re('\\bwrite (failed|error)\\b') }, type: 'write', set: { result: 'error' } },
  { when: { '@message': re('\\bwrite timed out\\b|\\bwrite timeout\\b') }, type: 'write', set: { result: 'timeout' } },
  { when: { '@message': re('\\b(write|wrote|update)\\b'), '@result': { exists: true } }, type: 'write' },
  { when: { '@message': re('\\b(write|wrote|update)\\b'), '@rowCount': 0 }, type: 'write', set: { result: 'rejected-stale-fence' } },
  { when: { '@message': re('\\b(write|wrote|update)\\b'), '@rowCount': { exists: true } }, type: 'write', set: { result: 'accepted' } },
];

export const APP_JSON: MappingSpec = {
  description: 'JSON application logs (pino, bunyan, winston, zap, zerolog, slog, structlog, hclog) with common lock-field names',
  fields: APP_FIELDS,
  match: APP_RULES,
  // Application code logs its own view: lock steps and write outcomes as the worker saw them.
  defaults: { ownerId: '{hostname}/{pid}', observer: 'worker' },
};

export const LOGFMT: MappingSpec = {
  ...APP_JSON,
  description: 'logfmt lines (key=value, quoted values), read with the app-json aliases',
  parse: 'logfmt',
  fields: { ...APP_FIELDS, ts: ['time', 'ts', 'timestamp', 't', '@timestamp'] },
};

export const OTLP_JSON: MappingSpec = {
  description: 'OpenTelemetry logs in OTLP/JSON (export batches or one log record per line)',
  expand: 'otlp',
  fields: {
    ...APP_FIELDS,
    ts: ['timeUnixNano', 'observedTimeUnixNano'],
    message: ['body', 'event'],
    ownerId: [...APP_FIELDS.ownerId!, 'service.instance.id', 'host.name'],
    source: ['source', 'host.name', 'service.instance.id'],
  },
  match: APP_RULES,
  defaults: { observer: 'worker' },
};

/**
 * client-go `tools/leaderelection` (verified at v0.34.0 and v0.35.0; the style changed at v0.35.0),
 * klog text or klog JSON (`--logging-format=json`). The messages, printf style up to v0.34 /
 * structured from v0.35 (`lock` is a key/value pair there, read from the text before):
 * - acquire: `successfully acquired lease ns/name` / `"Successfully acquired lease" lock=…`;
 * - keepalive (V(5)): `successfully renewed lease ns/name` / `"Successfully renewed lease"`;
 * - expire: `failed to renew lease ns/name: err` / `"Failed to renew lease" … err=…`: client-go
 *   stops leading right after it (renew returns, OnStoppedLeading runs), so it is the pod's own
 *   end of its hold, not a renewal that may be retried;
 * - expire: `lock has expired: ns/name` (v0.31+) / `"Lease has expired"`, logged in coordinated
 *   leader election by whichever pod saw the lease run out: it ends the lease of that pod, if it
 *   holds one (a candidate that logs it about the holder ends nothing);
 * - busy: `lock is held by X and has not yet expired[: ns/name]` (V(4) / V(6)) /
 *   `"Lease is held by and has not yet expired"` (V(4)), `"Lease is held and has not yet expired"`
 *   (V(6)); their `holder` is the other pod, so it is not read as the owner;
 * - not events: `attempting to acquire leader lease …` (an attempt, not a grant; it gives the
 *   lease name that later lines carry) and V(4) `failed to acquire lease …` (it follows every
 *   failed attempt, busy or an API error, so counting it would count a busy attempt twice).
 * Components' own end lines (`"leaderelection lost"`: kube-controller-manager, kube-scheduler)
 * are expire too. The owner is the file: client-go logs no identity.
 */
export const K8S_LEADERELECTION: MappingSpec = {
  description: 'client-go leader election (klog text or JSON, printf style up to v0.34, structured from v0.35): lease-only evidence, no tokens',
  // A Kubernetes Lease gives no fencing token per acquisition: missing-token says so of a write under one of these leases.
  service: 'kubernetes',
  parse: 'klog',
  fields: {
    ts: ['ts', 'time'],
    message: ['msg'],
    resource: ['lock', 'lease', 'lockName'],
    ownerId: ['identity', 'pod'],
  },
  match: [
    { when: { '@message': re('^successfully acquired lease\\b') }, type: 'acquire', set: { observer: 'worker' } },
    { when: { '@message': re('^successfully renewed lease\\b') }, type: 'keepalive', set: { observer: 'worker' } },
    { when: { '@message': re('^failed to renew lease\\b') }, type: 'expire', set: { observer: 'worker' } },
    { when: { '@message': re('^(lock|lease) is held (by|and has not yet expired)\\b') }, type: 'acquire', set: { result: 'busy', observer: 'worker' } },
    { when: { '@message': re('^(lock|lease) has expired\\b|\\bleader ?election lost\\b|\\bstopped leading\\b') }, type: 'expire', set: { observer: 'worker' } },
  ],
  // "leaderelection lost" and the V(4) "lock is held by …" name no lease: the one last named in the same log is meant.
  carry: ['resource', 'ownerId'],
  defaults: { ownerId: '{$file}' },
};

/** A ZooKeeper session id as servers and Java clients print it (0x%x): 64 bits, at most 16 hex digits. */
const ZK_SESSION = '(?<leaseId>0x[0-9a-f]{1,16})\\b';

/**
 * ZooKeeper and Curator: the server's own log (the authority expires a session, and with it every
 * ephemeral lock node the session held: a lease-scoped expire, applied to each lock that session
 * holds in the other logs), a Java application's lines from the ZooKeeper client and Curator, and
 * JSON lines with the app-json fields (the workers' own lock steps and writes, the session id as
 * the lease id, the lock node's czxid as the token). Session ids are normalised to the server's
 * spelling. Verbatim lines in the README ("zookeeper").
 */
export const ZOOKEEPER: MappingSpec = {
  description: 'ZooKeeper server logs (session expiry), ZooKeeper-client and Curator lines of Java applications (log4j/logback text or JSON), and JSON worker lines with the app-json fields; session ids normalised',
  // missing-token then says where ZooKeeper's token is (the lock node's czxid).
  service: 'zookeeper',
  // A server's or a Java application's text log is mostly other lines (a ZooKeeper server's start-up
  // alone is ~100); the JSON worker logs it reads are not.
  sparse: 'text',
  parse: 'log4j',
  fields: {
    ...APP_FIELDS,
    leaseId: [...APP_FIELDS.leaseId!, 'session', 'sessionId', 'session_id'],
    fenceToken: [...APP_FIELDS.fenceToken!, 'czxid'],
  },
  match: [
    // The server (ZooKeeperServer.java, 3.4 to 3.9): "Expiring session 0x{}, timeout of {}ms exceeded".
    { when: { '@message': re(`\\bExpiring session ${ZK_SESSION}, timeout of`) }, type: 'expire', scope: 'lease', set: { observer: 'authority' } },
    { when: { '@message': re(`\\bforcibly expiring session ${ZK_SESSION}`) }, type: 'expire', scope: 'lease', set: { observer: 'authority' } },
    // The Java client (ClientCnxn.java): the session is gone, or the client has not heard from the server.
    { when: { '@message': re(`\\bUnable to reconnect to ZooKeeper service, session ${ZK_SESSION} has expired`) }, type: 'expire', scope: 'lease', set: { observer: 'worker' } },
    { when: { '@message': re(`\\bClient session timed out, have not heard from server in \\d+ ?ms for session id ${ZK_SESSION}`) }, type: 'keepalive', set: { result: 'failed', observer: 'worker' } },
    // Curator (ConnectionStateManager, ConnectionState): these name neither the session nor the
    // lock, so they take the ones last named in the same file (carry).
    { when: { '@message': re('\\bState change: SUSPENDED\\b') }, type: 'keepalive', set: { result: 'failed', observer: 'worker' } },
    { when: { '@message': re('\\bState change: RECONNECTED\\b') }, type: 'keepalive', set: { observer: 'worker' } },
    { when: { '@message': re('\\bState change: LOST\\b') }, type: 'expire', scope: 'lease', set: { observer: 'worker' } },
    { when: { '@message': re('\\bSession expired event received\\b') }, type: 'expire', scope: 'lease', set: { observer: 'worker' } },
    { when: { '@message': re('\\bSession timeout has elapsed while SUSPENDED\\b') }, type: 'expire', scope: 'lease', set: { observer: 'worker' } },
    ...APP_RULES,
  ],
  normalize: { leaseId: 'zk-session' },
  carry: ['resource', 'ownerId', 'leaseId'],
  // A Java application's text log names no owner on its lines: the instance that writes the file.
  defaults: { ownerId: '{$file}', observer: 'worker' },
};
