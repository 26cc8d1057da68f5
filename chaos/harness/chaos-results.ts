// The figures of each scenario: one line on the console, `chaos <scenario>: acknowledged=… inDatabase=…
// lost=… duplicated=…`, and one entry appended to chaos/results/latest.json (a JSON array, emptied by the
// global setup at the start of each run), from which a report can be written later. A run on another
// server than the machine's redis-server (COUNTER_REDIS_SERVER) has a file of its own, named after the
// server's version (latest-valkey-8.0.1.json), so that it leaves the last run on Redis in place.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_BINARY } from '../../support/redis-server.js';
import type { InvariantFigures } from './invariant.js';

/** A server and its version, as `--version` gives them: "Redis 7.0.15", "Valkey 8.0.1". */
export function serverVersion(binary: string): string {
  try {
    const version = execFileSync(binary, ['--version'], { encoding: 'utf8' });
    const [, name, number] = /^(\S+) server v=(\S+)/.exec(version) ?? [];
    return name ? `${name} ${number}` : basename(binary);
  } catch {
    return basename(binary);
  }
}

/** The server the scenarios run on. */
const SERVER = serverVersion(SERVER_BINARY);
export const RESULTS_FILE = fileURLToPath(
  new URL(
    `../results/${SERVER_BINARY === 'redis-server' ? 'latest' : `latest-${SERVER.toLowerCase().replace(/\s+/g, '-')}`}.json`,
    import.meta.url,
  ),
);

export interface ScenarioResult extends InvariantFigures {
  scenario: string;
  database: string;
  /** Wall time of the scenario's test, in ms. */
  durationMs: number;
  /** Figures particular to the scenario (batches, ledger rows, rounds, …). */
  details: Record<string, unknown>;
  /** Set when recorded. */
  recordedAt?: string;
  /** The server the scenario ran on ("Valkey 8.0.1"): the suite's, unless the scenario says. */
  server?: string;
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
  results.push({ ...result, recordedAt: new Date().toISOString(), server: result.server ?? SERVER });
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
}
