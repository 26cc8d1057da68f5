/** Durations of single operations, in milliseconds, for percentiles. */
export class LatencyRecorder {
  private samples = new Float64Array(1 << 16);
  private size = 0;

  get count(): number {
    return this.size;
  }

  record(ms: number): void {
    if (this.size === this.samples.length) {
      const grown = new Float64Array(this.samples.length * 2);
      grown.set(this.samples);
      this.samples = grown;
    }
    this.samples[this.size++] = ms;
  }

  /** The nearest-rank percentile (`p` in 0..100); NaN with no samples. */
  percentile(p: number): number {
    if (this.size === 0) return Number.NaN;
    const sorted = this.samples.slice(0, this.size).sort();
    const rank = Math.min(this.size - 1, Math.max(0, Math.ceil((p / 100) * this.size) - 1));
    return sorted[rank];
  }
}
