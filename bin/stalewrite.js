#!/usr/bin/env node
// The CLI, bundled by scripts/build.mjs (scripts/bundle.mjs): one module to compile at start-up.
import { main } from '../dist/bundle/stalewrite.js';

main().catch((err) => {
  process.stderr.write(`stalewrite: internal error: ${err && err.stack ? err.stack : err}\n`);
  process.exit(2);
});
