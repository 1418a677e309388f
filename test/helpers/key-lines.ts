/**
 * Lines for the partition key reader's tests (test/partition.test.ts against full parsing,
 * test/key-scan.test.ts against readKey): lines it reads, escapes, non-ASCII and nested values
 * among them, and lines it must decline, so that only the full parse decides.
 */
const t = '"ts":"2026-03-01T10:00:00.000Z","type":"write","result":"accepted"';

/** Lines the key reader reads. */
export const KEY_READABLE: readonly string[] = [
  `{${t},"resource":"orders\\/42"}`,
  `{${t},"resource":"\\u006frders/42"}`,
  `{${t},"resource":"caf\\u00e9"}`,
  `{${t},"resource":"café"}`,
  `{${t},"resource":"\\ud83d\\ude00 x"}`,
  `{${t},"resource":"\\ud800"}`,
  `{${t},"resource":"a\\"b"}`,
  `{${t},"resource":"a\\\\"}`,
  `{${t},"resource":"r","msg":"say \\"hi\\" \\/ \\u00e9 ✓"}`,
  `{${t},"resource":"r","meta":{"resource":"other","a":[1,{"b":"}"}]}}`,
  `{"meta":{"resource":"other"},${t},"resource":"r"}`,
  `{${t},"resource":"r","list":[1,2,"]"]}`,
  `{${t},"resource":"r","hostname":"app-1"}`,
  `{${t},"resource":"r","hostname":"","host.name":"node-9"}`,
  `{${t},"resource":"r","host.name":"node-9","hostname":"app-1"}`,
  `{${t},"resource":"r","hostname":7,"host.name":"n"}`,
  `{${t},"resource":"r","source":"db","hostname":"app-1"}`,
  `{${t},"resource":"r","source":"d\\u0062"}`,
  `{${t},"resource":"r","host":"web"}`,
  `{"ts":1772359200000,"type":"acquire","resource":"r"}`,
  `{"ts":1772359200000.5,"type":"acquire","resource":"r"}`,
  `{"ts":1.7723592e12,"type":"acquire","resource":"r"}`,
  `{"ts":"2026-03-01T11:00:00+01:00","type":"acquire","resource":"r"}`,
  `{"ts":"2026-03-01T10:00:00\\u002e5Z","type":"acquire","resource":"r"}`,
  ` { "ts" : "2026-03-01T10:00:00Z" , "type" : "acquire" , "resource" : "r" } `,
  `{"resource":"r","type":"acquire","ts":"2026-03-01T10:00:00Z","fenceToken":"99999999999999999999"}`,
  `{"resource":"","type":"acquire","ts":"2026-03-01T10:00:00Z"}`, // invalid, but read: the key's partition counts it
  `{"resource":"r","type":"grab","ts":"2026-03-01T10:00:00Z"}`,
  `{"resource":"r","type":"acquire","ts":"2026-03-01T10:00:00Z","x":tru}`,
];

/** Lines the key reader declines. */
export const KEY_DECLINED: readonly string[] = [
  `{${t},"res\\u006furce":"x"}`,
  `{${t},"resource":"r","res\\u006furce":"x"}`,
  `{${t},"resource":"r","resource":"r2"}`,
  `{${t},"resource":"r","ts":"2026-03-01T10:00:01Z"}`,
  `{${t},"resource":1}`,
  `{${t},"resource":{"id":"r"}}`,
  `{${t},"resource":"r","source":""}`,
  `{${t},"resource":"r","source":7}`,
  `{${t},"resource":"r","source":"a","source":"b"}`,
  `{${t},"resource":"r","hostname":"a","hostname":"b"}`,
  `{${t},"resource":"r","host":{"name":"n"}}`,
  `{${t},"resource":"r","ts\\u0000":1}`.replace('"ts\\u0000":1', '"t\\u0073":"x"'),
  `{"type":"acquire","resource":"r"}`,
  `{"ts":"yesterday","type":"acquire","resource":"r"}`,
  `{"ts":true,"type":"acquire","resource":"r"}`,
  `{"ts":"2026-03-01T10:00:00Z","type":"acquire"}`,
  `{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r"`,
  `{"ts":"2026-03-01T10:00:00Z",\t"type":"acquire","resource":"r"}`,
  `[{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r"}]`,
  `{"ts":"2026-03-01T10:00:00Z","type":"acquire","resource":"r"} x`,
  '{}',
  'not json',
];
