/**
 * A long analysis on one thread keeps V8's young generation at 8 MB semi-spaces instead of its
 * 16 MB maximum (CLI only: a library does not touch its host's V8 flags).
 *
 * V8 doubles the semi-spaces each time as many bytes as they hold have survived scavenges since
 * the last doubling. Over a long run every batch of events in flight adds to that count, so the
 * semi-spaces reach their maximum (two of 16 MB on 64-bit) whatever a batch holds: 16 MB of the
 * peak that buys no speed (the run at 8 MB takes the same CPU time; at 4 or 2, more objects reach
 * the old space and the peak rises). `--max-semi-space-size` is read only when V8 starts, but the
 * growth factor is read at each doubling: once the semi-spaces hold 8 MB, a factor of 1 stops
 * them there. A run whose NODE_OPTIONS or flags size the young generation itself is left alone.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** The semi-space size the young generation is held at. */
export const SEMI_SPACE_CAP_MB = 8;
/** How often the young generation's size is looked at (it doubles at most once per many scavenges). */
const POLL_MS = 25;
/** V8's default growth factor, given back when the run is over. */
const DEFAULT_GROWTH_FACTOR = 2;

/**
 * The V8 the cap was measured on (11: Node 20). Another is left alone: an unknown flag is
 * answered on stderr, and later V8s may hold the factor at 2 or more (a flag implication), where
 * setting it at run time was never measured.
 */
export function knownV8(version = process.versions.v8): boolean {
  return Number(version.split('.')[0]) === 11;
}

/** Whether the process's own flags size the young generation (then they are left to do so). */
export function sizedByUser(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--(max[-_]semi[-_]space[-_]size|min[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|max[-_]young[-_]generation[-_]size)/.test(a));
}

/** The young generation's size (both semi-spaces), in bytes. */
function youngBytes(): number {
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space') return s.space_size;
  return 0;
}

/**
 * Hold the young generation at `capMb` semi-spaces from now until the returned function is
 * called (it gives back V8's default growth). Checked on an unreferenced timer: it never keeps
 * the process alive.
 */
export function capYoungGeneration(capMb = SEMI_SPACE_CAP_MB): () => void {
  if (!knownV8() || sizedByUser()) return () => {};
  const cap = 2 * capMb * 1024 * 1024;
  let capped = false;
  // Looked at all along: should V8 shrink the young generation (a pause in the input), it may
  // grow again up to the cap.
  // A failure here (a runtime whose V8 answers otherwise) must not end the analysis: the cap
  // stops and V8 is left as it is.
  const check = (): void => {
    try {
      const at = youngBytes() >= cap;
      if (at === capped) return;
      setFlagsFromString(`--semi-space-growth-factor=${at ? 1 : DEFAULT_GROWTH_FACTOR}`);
      capped = at;
    } catch {
      clearInterval(timer);
    }
  };
  const timer: ReturnType<typeof setInterval> = setInterval(check, POLL_MS);
  timer.unref();
  check();
  return () => {
    clearInterval(timer);
    if (capped) setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  };
}
