/** Minimum and maximum of a list without spreading it into arguments (a long list overflows the stack). */
export function minOf(values: Iterable<number>, empty = Infinity): number {
  let m = empty;
  let first = true;
  for (const v of values) {
    if (first || v < m) m = v;
    first = false;
  }
  return m;
}

export function maxOf(values: Iterable<number>, empty = -Infinity): number {
  let m = empty;
  let first = true;
  for (const v of values) {
    if (first || v > m) m = v;
    first = false;
  }
  return m;
}
