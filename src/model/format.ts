/** Small display helpers shared by rules and reporters. */

export function formatToken(token: bigint | undefined): string {
  return token === undefined ? 'none' : token.toString();
}
