// The environment `npm test` gives the tools it runs (tsc, vitest, and the tests under it).
// Not on a terminal (CI logs, `npm test 2>&1 | cat`), their output must carry no colour codes.
// FORCE_COLOR=0 does not do that: TypeScript 7's tsc and vitest's colour library (tinyrainbow)
// both turn colours ON when FORCE_COLOR is set at all, whatever its value. NO_COLOR=1 turns them
// off in both. A FORCE_COLOR that asks for colour (1, 2, 3, true) is left as the user set it.
export function plainEnv(env, terminal) {
  const out = { ...env };
  if (terminal) return out;
  const force = out.FORCE_COLOR;
  if (force !== undefined && force !== '' && force !== '0' && force !== 'false') return out;
  delete out.FORCE_COLOR;
  out.NO_COLOR = '1';
  return out;
}
