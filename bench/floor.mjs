#!/usr/bin/env node
// The parse floor: the project's own line reader plus JSON.parse, doing nothing else.
//   node bench/floor.mjs FILE
import { createReadStream } from 'node:fs';
import { readLines } from '../dist/ingest/lines.js';

let lines = 0;
let objects = 0;
for await (const batch of readLines(createReadStream(process.argv[2], { highWaterMark: 256 * 1024 }))) {
  for (const text of batch.lines) {
    lines++;
    if (text === null || text.length === 0) continue;
    try {
      if (typeof JSON.parse(text) === 'object') objects++;
    } catch {
      // counted as a line only
    }
  }
}
process.stdout.write(JSON.stringify({ lines, objects }) + '\n');
