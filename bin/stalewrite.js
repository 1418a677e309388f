#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

main().catch((err) => {
  process.stderr.write(`stalewrite: internal error: ${err && err.stack ? err.stack : err}\n`);
  process.exit(2);
});
