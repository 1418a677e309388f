#!/usr/bin/env node
// The CLI as tsc compiled it (dist/cli/main.js), not bundled: what bin/stalewrite.js ran before
// 0.6.0. test/bundle.test.ts runs both and compares them.
import { main } from '../../dist/cli/main.js';

main().catch((err) => {
  process.stderr.write(`stalewrite: internal error: ${err && err.stack ? err.stack : err}\n`);
  process.exit(2);
});
