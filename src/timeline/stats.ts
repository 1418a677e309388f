/** Bounded statistics: a deterministic reservoir of samples, for percentiles without holding every value. */

export class Reservoir {
  readonly samples: number[] = [];
  seen = 0;
  /** The true maximum of every value added, not only of the kept samples. */
  maxSeen = -Infinity;
  private seed: number;

  constructor(readonly capacity = 64, seed = 0x9e3779b9) {
    this.seed = seed >>> 0;
  }

  add(value: number): void {
    this.seen++;
    if (value > this.maxSeen) this.maxSeen = value;
    if (this.samples.length < this.capacity) {
      this.samples.push(value);
      return;
    }
    // Algorithm R with a small deterministic generator, so the same input gives the same report.
    this.seed = (Math.imul(this.seed, 1664525) + 1013904223) >>> 0;
    const j = this.seed % this.seen;
    if (j < this.capacity) this.samples[j] = value;
  }

  /** p in [0, 1]; nearest-rank on the kept samples. */
  percentile(p: number): number | undefined {
    if (this.samples.length === 0) return undefined;
    const sorted = this.samples.slice().sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  }

  summary(): { count: number; p50?: number; p95?: number; max?: number } {
    if (this.seen === 0) return { count: 0 };
    return { count: this.seen, p50: this.percentile(0.5), p95: this.percentile(0.95), max: this.maxSeen };
  }
}
