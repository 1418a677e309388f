/**
 * "Did you mean …?" for mistyped commands and options. yargs' own `.recommendCommands()` is
 * skipped when there is a default command (ours: `stalewrite [files..]` is `analyze`), and yargs
 * suggests nothing for options, so both are done here.
 */

/** Edit distance with adjacent transpositions counted as one edit (`fial` → `fail` is 1). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate nearest to `typed`, when it is near enough to be what was meant: at most 1 edit
 * for short words, 2 from 5 characters, 3 from 9; or the only candidate that starts with it
 * (`--fail` → `--fail-on`). Ties go to the first candidate.
 */
export function nearest(typed: string, candidates: readonly string[]): string | undefined {
  const limit = typed.length >= 9 ? 3 : typed.length >= 5 ? 2 : typed.length >= 3 ? 1 : 0;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(typed.toLowerCase(), c.toLowerCase());
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  if (best !== undefined) return best;
  const prefixed = typed.length >= 3 ? candidates.filter((c) => c.startsWith(typed)) : [];
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

const camel = (s: string) => s.replace(/-+([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * The options in `argv` that are none of `known` (names and aliases as yargs lists them), each as
 * typed (`--fial-on`, `-z`), in order. Stops at `--`; ignores values such as `-` and `-0.5`, and
 * accepts `--no-X`, `--X=v` and camelCase spellings of known options, as yargs does.
 */
export function unknownOptions(argv: readonly string[], known: Iterable<string>): string[] {
  const names = new Set<string>();
  for (const k of known) {
    names.add(k);
    names.add(camel(k));
  }
  const out: string[] = [];
  for (const token of argv) {
    if (token === '--') break;
    if (token === '-' || !token.startsWith('-') || /^-\.?\d/.test(token)) continue;
    if (token.startsWith('--')) {
      const name = token.slice(2).split('=')[0]!;
      if (name === '' || names.has(name) || (name.startsWith('no-') && names.has(name.slice(3)))) continue;
      out.push(`--${name}`);
    } else {
      for (const letter of token.slice(1).split('=')[0]!) if (!names.has(letter) && /[a-zA-Z]/.test(letter)) out.push(`-${letter}`);
    }
  }
  return [...new Set(out)];
}

/** "Unknown option --fial-on; did you mean --fail-on?", one clause per unknown option. */
export function unknownOptionsMessage(unknown: readonly string[], known: Iterable<string>): string {
  const longNames = [...new Set(known)].filter((k) => k.length > 1 && !/[A-Z]/.test(k));
  return unknown
    .map((u) => {
      const guess = u.startsWith('--') ? nearest(u.slice(2), longNames) : undefined;
      return `Unknown option ${u}${guess !== undefined ? `; did you mean --${guess}?` : ''}`;
    })
    .join('\n');
}

/** `stalewrite anlyze`: a mistyped command reaches the default command as a file name. */
export class UnknownCommandError extends Error {}

/**
 * When the default command (`stalewrite [files..]`) got, as its first file, a word that is no
 * file but is near a command name, the command that was meant; throws UnknownCommandError then.
 * Paths (with a `/`, `\` or `.`) and files that exist are left alone.
 */
export function checkMistypedCommand(files: readonly string[] | undefined, commands: readonly string[], exists: (path: string) => boolean): void {
  const first = files?.[0];
  if (first === undefined || first === '-' || /[./\\]/.test(first) || exists(first)) return;
  const guess = nearest(first, commands);
  if (guess !== undefined) throw new UnknownCommandError(`Unknown command ${first}; did you mean ${guess}?`);
}
