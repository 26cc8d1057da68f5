import type { BenchRun } from './bench-results.js';

// PLACEHOLDER: being written.
export function throughputLatencyChart(_run: BenchRun): string {
  return '<svg xmlns="http://www.w3.org/2000/svg"/>';
}
