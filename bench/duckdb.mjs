#!/usr/bin/env node
// The DuckDB baseline: the headline answer (accepted stale writes) as one SQL window query over the
// canonical NDJSON file, read with read_json and explicit columns.
//   node bench/duckdb.mjs FILE [--first 3]
// Prints one JSON line: {"acceptedStaleWrites": N, "first": [...], "duckdb": "v1.x"}.
//
// An accepted stale write is an accepted write whose fenceToken is below the highest token accepted
// before it on the same resource (ordered by ts). fenceToken is read as VARCHAR and cast to HUGEINT,
// so tokens above 2^53 stay exact (a token that is not an integer is left out, as NULL).
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';

const { values: a, positionals } = parseArgs({ allowPositionals: true, options: { first: { type: 'string', default: '3' } } });
const file = positionals[0];
if (file === undefined) {
  process.stderr.write('usage: node bench/duckdb.mjs FILE [--first N]\n');
  process.exit(2);
}
const first = Number(a.first);

const QUERY = `
WITH writes AS (
  SELECT resource, ts::TIMESTAMPTZ AS t, TRY_CAST(fenceToken AS HUGEINT) AS token
  FROM read_json($file,
    format = 'newline_delimited',
    ignore_errors = true,
    columns = {ts: 'VARCHAR', type: 'VARCHAR', resource: 'VARCHAR', fenceToken: 'VARCHAR', result: 'VARCHAR'})
  WHERE type = 'write' AND result = 'accepted'
), judged AS (
  SELECT resource, t, token,
    max(token) OVER (PARTITION BY resource ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS highest
  FROM writes
  WHERE token IS NOT NULL
)
SELECT resource, t::VARCHAR AS ts, token::VARCHAR AS token, highest::VARCHAR AS highest, count(*) OVER () AS n
FROM judged
WHERE token < highest
ORDER BY t, resource
LIMIT ${Math.max(1, first)}`;

const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
const version = (await con.runAndReadAll('SELECT version()')).getRows()[0][0];
const rows = (await con.runAndReadAll(QUERY, { file })).getRowObjectsJson();
const count = rows.length === 0 ? 0 : Number(rows[0].n);
process.stdout.write(JSON.stringify({ acceptedStaleWrites: count, first: rows.slice(0, first).map(({ n, ...r }) => r), duckdb: version }) + '\n');
