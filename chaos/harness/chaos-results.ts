// The figures of each scenario: one line on the console, `chaos <scenario>: acknowledged=… inDatabase=…
// lost=… duplicated=…`, and one entry appended to chaos/results/latest.json (a JSON array, emptied by the
// global setup at the start of each run), from which a report can be written later.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InvariantFigures } from './invariant.js';

export const RESULTS_FILE = fileURLToPath(new URL('../results/latest.json', import.meta.url));

export interface ScenarioResult extends InvariantFigures {
  scenario: string;
  database: string;
  /** Wall time of the scenario's test, in ms. */
  durationMs: number;
  /** Figures particular to the scenario (batches, ledger rows, rounds, …). */
  details: Record<string, unknown>;
  /** Set when recorded. */
  recordedAt?: string;
}

export function resetResults(): void {
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, '[]\n');
}

export function recordResult(result: ScenarioResult): void {
  const { scenario, acknowledged, inDatabase, lost, duplicated, uncertain, backwards, durationMs } = result;
  const extras = Object.entries(result.details)
    .filter(([, value]) => typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string')
    .map(([name, value]) => ` ${name}=${String(value)}`)
    .join('');
  console.log(
    `chaos ${scenario}: acknowledged=${acknowledged} inDatabase=${inDatabase} lost=${lost} duplicated=${duplicated}` +
      ` uncertain=${uncertain} backwards=${backwards}${extras} (${(durationMs / 1000).toFixed(1)} s)`,
  );
  const results = existsSync(RESULTS_FILE) ? (JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as ScenarioResult[]) : [];
  results.push({ ...result, recordedAt: new Date().toISOString() });
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
}
