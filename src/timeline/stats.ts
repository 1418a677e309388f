/** Bounded statistics: a deterministic reservoir of samples, for percentiles without holding every value. */

export class Reservoir {
  /** The kept samples: the first `kept` slots, in a typed array grown as samples come (doubling, up to capacity). */
  private buf = new Float64Array(4);
  private kept = 0;
  seen = 0;
  /** The true maximum of every value added, not only of the kept samples. */
  maxSeen = -Infinity;
  private seed: number;

  constructor(readonly capacity = 64, seed = 0x9e3779b9) {
    this.seed = seed >>> 0;
  }

  /** The kept samples (a copy). */
  get samples(): number[] {
    return Array.from(this.buf.subarray(0, this.kept));
  }

  add(value: number): void {
    this.seen++;
    if (value > this.maxSeen) this.maxSeen = value;
    if (this.kept < this.capacity) {
      if (this.kept === this.buf.length) {
        const b = new Float64Array(Math.min(this.capacity, this.buf.length * 2));
        b.set(this.buf);
        this.buf = b;
      }
      this.buf[this.kept++] = value;
      return;
    }
    // Algorithm R with a small deterministic generator, so the same input gives the same report.
    this.seed = (Math.imul(this.seed, 1664525) + 1013904223) >>> 0;
    const j = this.seed % this.seen;
    if (j < this.capacity) this.buf[j] = value;
  }

  /** p in [0, 1]; nearest-rank on the kept samples. */
  percentile(p: number): number | undefined {
    if (this.kept === 0) return undefined;
    const sorted = this.buf.slice(0, this.kept).sort();
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  }

  summary(): { count: number; p50?: number; p95?: number; max?: number } {
    if (this.seen === 0) return { count: 0 };
    return { count: this.seen, p50: this.percentile(0.5), p95: this.percentile(0.95), max: this.maxSeen };
  }
}
