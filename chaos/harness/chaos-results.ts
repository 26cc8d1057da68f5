// The figures of each scenario: one line on the console, `chaos <scenario>: acknowledged=… inDatabase=…
// lost=… duplicated=…`, and one entry appended to chaos/results/latest.json (a JSON array, emptied by the
// global setup at the start of each run), from which a report can be written later. A run on another
// server than redis-server (COUNTER_REDIS_SERVER=valkey-server) has a file of its own,
// latest-valkey-server.json, so that it leaves the last run on Redis in place for the report.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_BINARY } from '../../support/redis-server.js';
import type { InvariantFigures } from './invariant.js';

const serverName = basename(SERVER_BINARY);
export const RESULTS_FILE = fileURLToPath(
  new URL(`../results/${serverName === 'redis-server' ? 'latest' : `latest-${serverName}`}.json`, import.meta.url),
);

/** Read once, when the first result is recorded. */
let recordedServer: string | undefined;

/** The server and version the scenarios run on, as `--version` gives them: "Redis 7.0.15", "Valkey 8.0.1". */
function serverVersion(): string {
  try {
    const version = execFileSync(SERVER_BINARY, ['--version'], { encoding: 'utf8' });
    const [, name, number] = /^(\S+) server v=(\S+)/.exec(version) ?? [];
    return name ? `${name} ${number}` : serverName;
  } catch {
    return serverName;
  }
}

export interface ScenarioResult extends InvariantFigures {
  scenario: string;
  database: string;
  /** Wall time of the scenario's test, in ms. */
  durationMs: number;
  /** Figures particular to the scenario (batches, ledger rows, rounds, …). */
  details: Record<string, unknown>;
  /** Set when recorded. */
  recordedAt?: string;
  /** The server the scenario ran on ("Valkey 8.0.1"), set when recorded. */
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
  results.push({ ...result, recordedAt: new Date().toISOString(), server: (recordedServer ??= serverVersion()) });
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
}
