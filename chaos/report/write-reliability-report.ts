// `npm run chaos:report` (run compiled, from chaos/dist/chaos/report/): writes the figures of the last chaos run (chaos/results/latest.json) into the
// table of docs/RELIABILITY.md, between its `chaos-results` markers, with those of the last run on each other
// server (latest-valkey-8.0.1.json, …). Run it after `npm run test:chaos`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioResult } from '../harness/chaos-results.js';

const RESULTS = fileURLToPath(new URL('../../../../chaos/results/', import.meta.url));
const REPORT = fileURLToPath(new URL('../../../../docs/RELIABILITY.md', import.meta.url));
const BEGIN = '<!-- chaos-results:begin -->';
const END = '<!-- chaos-results:end -->';

/** Details worth a column: the scenario's own counts, not its seed or timings of no interest. */
const HIDDEN_DETAILS = new Set(['seed']);

function detailsOf(result: ScenarioResult): string {
  return Object.entries(result.details)
    .filter(([name, value]) => !HIDDEN_DETAILS.has(name) && ['number', 'boolean', 'string'].includes(typeof value))
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(', ');
}

export function renderTable(results: ScenarioResult[]): string {
  const lines = [
    '| scenario (what was injected) | server | db | acknowledged | in database | lost | duplicated | uncertain | backwards | time | details |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  // By scenario number; on each server in turn within one (the sort is stable).
  const ordered = [...results].sort((a, b) => Number.parseInt(a.scenario, 10) - Number.parseInt(b.scenario, 10));
  for (const result of ordered) {
    lines.push(
      `| ${result.scenario} | ${result.server ?? '—'} | ${result.database} | ${result.acknowledged} | ${result.inDatabase} | ${result.lost} | ` +
        `${result.duplicated} | ${result.uncertain} | ${result.backwards} | ${(result.durationMs / 1000).toFixed(1)} s | ` +
        `${detailsOf(result).replaceAll('|', '\\|')} |`,
    );
  }
  const run = ordered
    .map((result) => result.recordedAt)
    .filter(Boolean)
    .sort();
  lines.push('', `Run of ${run[0]?.slice(0, 10) ?? 'unknown date'}, ${ordered.length} results.`);
  return lines.join('\n');
}

function main(): void {
  // The run on Redis first, then the others by name.
  const files = readdirSync(RESULTS)
    .filter((name) => /^latest(-.+)?\.json$/.test(name))
    .sort((a, b) => Number(b === 'latest.json') - Number(a === 'latest.json') || a.localeCompare(b));
  const results = files.flatMap((name) => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as ScenarioResult[]);
  if (results.length === 0) throw new Error(`${RESULTS} holds no results: run npm run test:chaos first`);
  const report = readFileSync(REPORT, 'utf8');
  const begin = report.indexOf(BEGIN);
  const end = report.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${REPORT} has no ${BEGIN} … ${END} section`);
  writeFileSync(REPORT, `${report.slice(0, begin + BEGIN.length)}\n${renderTable(results)}\n${report.slice(end)}`);
  console.log(`chaos:report: ${results.length} results written to docs/RELIABILITY.md`);
}

main();
