/** Small display helpers shared by rules and reporters. */

export function formatToken(token: bigint | undefined): string {
  return token === undefined ? 'none' : token.toString();
}

/** "1 finding", "2 findings". */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
