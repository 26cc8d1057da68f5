import type { BenchRow, BenchRun, Figures, ScenarioResult } from './bench-results.js';
import { formatRatio, ratio } from './bench-results.js';

const number = (value: number | undefined, digits = 0) =>
  value === undefined || !Number.isFinite(value)
    ? ''
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const ms = (value: number | undefined) => (value === undefined ? '' : number(value, value < 10 ? 3 : 1));

function figures(side: Figures | undefined): string[] {
  return [number(side?.perSecond), ms(side?.p50Ms), ms(side?.p99Ms)];
}

function rowCells(row: BenchRow, extras: string[]): string[] {
  return [
    row.label,
    ...figures(row.library),
    ...figures(row.baseline),
    formatRatio(ratio(row.library.perSecond, row.baseline?.perSecond)),
    ...extras.map((name) => number(row.extra?.[name], Number.isInteger(row.extra?.[name] ?? 0) ? 0 : 2)),
  ];
}

/** One scenario as Markdown: what it compares, its table, its targets. */
export function scenarioMarkdown(scenario: ScenarioResult): string {
  const extras = [...new Set(scenario.rows.flatMap((row) => Object.keys(row.extra ?? {})))];
  const header = [
    '',
    `library ${scenario.unit}/s`,
    'p50 ms',
    'p99 ms',
    `baseline ${scenario.unit}/s`,
    'p50 ms',
    'p99 ms',
    'ratio',
    ...extras,
  ];
  const lines = [
    `## ${scenario.id}. ${scenario.title}`,
    '',
    `- Library: ${scenario.library}`,
    `- Baseline: ${scenario.baseline}`,
    '',
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...scenario.rows.map((row) => `| ${rowCells(row, extras).join(' | ')} |`),
    '',
    ...(scenario.checks.length === 0
      ? ['_No target is set for this scenario._']
      : [
          '| target | this run | met |',
          '|---|---|---|',
          ...scenario.checks.map((check) => `| ${check.target} | ${check.actual} | ${check.met ? 'yes' : '**no**'} |`),
        ]),
  ];
  if (scenario.notes.length > 0) lines.push('', ...scenario.notes.map((note) => `- ${note}`));
  lines.push('', `_Scenario time: ${(scenario.durationMs / 1000).toFixed(1)} s._`, '');
  return lines.join('\n');
}

export function runMarkdown(run: BenchRun): string {
  const m = run.machine;
  const met = run.scenarios.flatMap((scenario) => scenario.checks).filter((check) => check.met).length;
  const total = run.scenarios.flatMap((scenario) => scenario.checks).length;
  return [
    '# Benchmark results',
    '',
    `Written by \`npm run bench\`${run.quick ? ' --quick (short run: figures are indicative only)' : ''} on ${run.startedAt}.`,
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB; Node ${m.node}; Redis ${m.redis}; PostgreSQL ${m.postgres};`,
    `MariaDB ${m.mariadb}; SQLite ${m.sqlite}. Ratios compare figures of this one run on this one machine.`,
    '',
    `Targets met: ${met} of ${total}. Chart: [latest.svg](latest.svg).`,
    '',
    ...run.scenarios.map(scenarioMarkdown),
  ].join('\n');
}
