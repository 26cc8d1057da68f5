import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startLocalCluster, stopLocalCluster } from '../support/local-cluster.js';
import type { BenchContext } from './harness/bench-context.js';
import type { BenchRun } from './harness/bench-results.js';
import { throughputLatencyChart } from './harness/svg-chart.js';
import { machineInfo } from './harness/machine-info.js';
import { runMarkdown, scenarioMarkdown } from './harness/markdown-report.js';
import { SCENARIOS } from './scenarios/index.js';

const RESULTS = fileURLToPath(new URL('../../results/', import.meta.url));

/**
 * `npm run bench [-- --quick] [-- --only increment-path,memory]`: runs the scenarios one after another
 * (never two at once: they would share the two cores), prints each table, writes bench/results/.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const onlyIndex = args.indexOf('--only');
  const only = onlyIndex >= 0 ? args[onlyIndex + 1]?.split(',') : undefined;
  const scenarios = SCENARIOS.filter(
    (scenario) => !only || only.includes(scenario.slug) || only.includes(String(scenario.id)),
  );
  if (scenarios.length === 0)
    throw new Error(`--only ${only?.join(',')}: no such scenario (${SCENARIOS.map((s) => s.slug).join(', ')})`);
  const context: BenchContext = {
    quick,
    durationMs: Number(process.env.BENCH_DURATION_MS ?? (quick ? 1_000 : 5_000)),
    warmupMs: Number(process.env.BENCH_WARMUP_MS ?? (quick ? 300 : 1_500)),
    log: (line) => console.log(`  ${line}`),
  };
  await startLocalCluster();
  try {
    const run: BenchRun = { startedAt: new Date().toISOString(), quick, machine: await machineInfo(), scenarios: [] };
    for (const scenario of scenarios) {
      console.log(`\n▶ ${scenario.id}. ${scenario.title}`);
      const started = performance.now();
      const result = await scenario.run(context);
      run.scenarios.push({
        id: scenario.id,
        title: scenario.title,
        ...result,
        durationMs: performance.now() - started,
      });
      console.log(`\n${scenarioMarkdown(run.scenarios.at(-1)!)}`);
    }
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}latest.json`, `${JSON.stringify(run, null, 2)}\n`);
    writeFileSync(`${RESULTS}latest.md`, runMarkdown(run));
    writeFileSync(`${RESULTS}latest.svg`, throughputLatencyChart(run));
    const missed = run.scenarios.flatMap((s) =>
      s.checks.filter((c) => !c.met).map((c) => `${s.id}. ${c.target}: ${c.actual}`),
    );
    console.log(
      `\nWrote bench/results/latest.{json,md,svg}. Targets missed: ${missed.length === 0 ? 'none' : `\n  ${missed.join('\n  ')}`}`,
    );
  } finally {
    await stopLocalCluster();
  }
}

main().then(
  // Clients a scenario failed to close must not keep the process alive.
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
