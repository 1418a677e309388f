#!/usr/bin/env node
// The authority's view of expiries. Redis logs nothing about keys, but with
// `notify-keyspace-events Ex` it publishes the name of every key it expires on the channel
// `__keyevent@<db>__:expired`, at the moment it removes the key (when its active expiry cycle
// finds it, or when a command touches it: possibly later than the TTL). This subscriber logs each
// such message as it comes, through pino: the channel and the key, nothing else (Redis tells
// nothing else: not the value the key held).
//
//   node subscriber.mjs --redis 127.0.0.1:6379 --log keyspace.log --run MARKER
//
// Prints "READY" on stdout once subscribed; exits on SIGTERM or SIGINT.
import { parseArgs } from 'node:util';
import pino from 'pino';
import { Redis } from 'ioredis';

const { values: args } = parseArgs({
  options: { redis: { type: 'string' }, log: { type: 'string' }, db: { type: 'string', default: '0' }, run: { type: 'string' } },
});
for (const k of ['redis', 'log']) if (!args[k]) throw new Error(`--${k} is required`);

const log = pino({ base: { pid: process.pid, hostname: 'redis-keyspace' } }, pino.destination({ dest: args.log, sync: true }));
const [host, port] = args.redis.split(':');
const sub = new Redis({ host, port: Number(port) });
const channel = `__keyevent@${args.db}__:expired`;
sub.on('message', (ch, key) => log.info({ channel: ch, key }, 'expired'));
await sub.subscribe(channel);
log.info({ subscribedTo: channel }, 'subscribed');
process.stdout.write('READY\n');

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    sub.disconnect();
    process.exit(0);
  });
}
