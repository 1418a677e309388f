/**
 * Checks of the library's numeric and enumerated options, so that `analyze()` and `new Engine()`
 * refuse what the CLI refuses (`busyWindowMs: 0`, `maxFindings: -1`) instead of running on it.
 * Each failure is an OptionError naming the option; the CLI prints it and exits 2.
 */

export class OptionError extends Error {
  /** The option, as the library names it (`busyWindowMs`). */
  readonly option: string;
  constructor(option: string, message: string) {
    super(message);
    this.name = 'OptionError';
    this.option = option;
  }
}

type Bag = Readonly<Record<string, unknown>>;

/** A whole number ≥ min, when given. */
export function checkWhole(options: Bag, names: readonly (readonly [string, number])[]): void {
  for (const [name, min] of names) {
    const v = options[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new OptionError(name, `${name} must be a whole number ≥ ${min} (got ${show(v)})`);
  }
}

/** A finite number ≥ 0 (or > 0 with `positive`), when given. */
export function checkDuration(options: Bag, name: string, positive = false): void {
  const v = options[name];
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (positive && v === 0)) throw new OptionError(name, `${name} must be a ${positive ? 'positive' : 'non-negative'} number of milliseconds (got ${show(v)})`);
}

/** The options the engine takes. */
export function checkEngineOptions(options: Bag): void {
  checkDuration(options, 'clockSkewMs');
  checkDuration(options, 'busyWindowMs', true);
  const t = options.busyThreshold;
  if (t !== undefined && !(typeof t === 'number' && t > 0 && t <= 1)) throw new OptionError('busyThreshold', `busyThreshold must be a number above 0 and at most 1 (got ${show(t)})`);
  checkWhole(options, [['maxFindings', 0], ['maxResources', 1], ['maxOperations', 1], ['busyMinAttempts', 1], ['maxLeaseHolders', 1]]);
}

/** The options analyze() takes beyond the engine's; `known`, when given, is every option it takes (any other given is refused). */
export function checkAnalyzeOptions(options: Bag, known?: readonly string[]): void {
  if (options === null || typeof options !== 'object') throw new OptionError('options', `analyze() takes an object of options (got ${show(options)})`);
  if (known !== undefined) {
    for (const name of Object.keys(options)) {
      if (options[name] !== undefined && !known.includes(name)) throw new OptionError(name, `analyze() has no option ${show(name)}${name === 'ringSize' ? ' (removed in 0.2.0, with the ring buffer)' : ''}; it takes ${known.join(', ')}`);
    }
  }
  checkEngineOptions(options);
  checkWhole(options, [['maxInvalid', 0], ['maxProblems', 0], ['maxLineBytes', 1]]);
  checkDuration(options, 'duplicateWindowMs');
  const w = options.workers;
  if (w !== undefined && w !== 'auto' && w !== 'on' && w !== 'off') throw new OptionError('workers', `workers must be "auto", "on" or "off" (got ${show(w)})`);
  const tl = options.timelines as Bag | undefined;
  if (tl !== undefined) {
    if (tl === null || typeof tl !== 'object') throw new OptionError('timelines', `timelines must be an object (got ${show(tl)})`);
    try {
      checkWhole(tl, [['maxResources', 0], ['perResource', 2]]);
    } catch (err) {
      const e = err as OptionError;
      throw new OptionError(`timelines.${e.option}`, `timelines.${e.message}`);
    }
  }
  const r = options.rules;
  if (r !== undefined && (!Array.isArray(r) || r.some((x) => typeof x !== 'string'))) throw new OptionError('rules', 'rules must be an array of rule ids');
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'bigint') return `${v}n`;
  return String(v);
}
