import type { BenchRow, BenchRun, Figures, ScenarioResult, TargetCheck } from './bench-results.js';
import { formatRatio, ratio } from './bench-results.js';

const WIDTH = 960;
const MARGIN = 20;
const FONT = `-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif`;
/** Average advance of an 11 px glyph of that font stack: enough to truncate text before it overflows. */
const CHAR_PX = 6.2;
const BAR = 11;
const BAR_STEP = BAR + 3;
const ROW_LABEL = 16;
const ROW_GAP = 8;
const CHECK_LINE = 16;
/** Beyond this max/min, a linear scale would shrink the small bars to nothing. */
const LOG_ABOVE = 50;
const COLOUR = { library: '#2563eb', baseline: '#ea7c00', other: '#6b7280', ok: '#15803d', missed: '#b91c1c' };

interface Segment {
  value: number;
  colour: string;
  faint?: boolean;
}
/** One bar (drawn as overlapping segments, longest first) and the text after it. */
interface Line {
  segments: Segment[];
  label: string;
}
/** A column of a panel; `rows[i]` holds the bar lines of the scenario's row i. */
interface Part {
  x: number;
  width: number;
  heading: string;
  rows: Line[][];
}
interface Scale {
  length: (value: number) => number;
  ticks: number[];
  log: boolean;
}

const measured = (value: number | undefined): value is number => typeof value === 'number' && Number.isFinite(value);
const px = (value: number) => (Number.isFinite(value) ? String(Math.round(value * 10) / 10) : '0');
const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const truncate = (text: string, chars: number) =>
  text.length <= chars ? text : `${text.slice(0, Math.max(0, chars - 1)).trimEnd()}…`;
const fits = (widthPx: number) => Math.floor(widthPx / CHAR_PX);

function significant(value: number): string {
  const size = Math.abs(value);
  if (Number.isInteger(value)) return String(value);
  return size >= 100
    ? value.toFixed(0)
    : size >= 10
      ? value.toFixed(1)
      : size >= 1
        ? value.toFixed(2)
        : String(Number(value.toPrecision(2)));
}

/** 61234 as "61.2k": the tables in latest.md carry the exact figures. */
function compact(value: number): string {
  const size = Math.abs(value);
  const [divisor, suffix] = size >= 1e9 ? [1e9, 'G'] : size >= 1e6 ? [1e6, 'M'] : size >= 1e3 ? [1e3, 'k'] : [1, ''];
  return `${significant(value / divisor)}${suffix}`;
}

const ms = (value: number) => `${significant(value)} ms`;

/** `pieces` are [text, class] pairs, each escaped here so that no caller can forget to. */
function text(
  x: number,
  y: number,
  pieces: Array<[string, string?]>,
  anchor: 'start' | 'middle' | 'end' = 'start',
): string {
  const body = pieces
    .map(([content, cls]) => `<tspan${cls ? ` class="${cls}"` : ''}>${escapeXml(content)}</tspan>`)
    .join('');
  return `<text x="${px(x)}" y="${px(y)}" text-anchor="${anchor}">${body}</text>`;
}

function rect(x: number, y: number, width: number, height: number, colour: string, opacity = 1): string {
  return `<rect x="${px(x)}" y="${px(y)}" width="${px(width)}" height="${px(height)}" fill="${colour}"${opacity < 1 ? ` fill-opacity="${opacity}"` : ''}/>`;
}

function niceStep(rough: number): number {
  const power = 10 ** Math.floor(Math.log10(rough));
  return ([1, 2, 5, 10].find((factor) => factor * power >= rough) ?? 10) * power;
}

/** Linear from 0 to the largest value, or logarithmic from the power of ten below the smallest. */
function scaleFor(values: number[], lengthPx: number): Scale {
  const positive = values.filter((value) => value > 0);
  const max = positive.length > 0 ? Math.max(...positive) : 1;
  const min = positive.length > 0 ? Math.min(...positive) : 1;
  if (max / min <= LOG_ABOVE) {
    const step = niceStep(max / 4);
    const ticks =
      positive.length === 0 ? [0] : Array.from({ length: Math.floor(max / step) + 1 }, (_, index) => index * step);
    return { length: (value) => (Math.max(0, value) / max) * lengthPx, ticks, log: false };
  }
  const lowPower = Math.floor(Math.log10(min));
  const low = 10 ** lowPower;
  const decades = Math.log10(max / low);
  const ticks = Array.from({ length: Math.floor(decades) + 1 }, (_, index) => 10 ** (lowPower + index));
  // A value at the bottom of the scale still gets a visible sliver.
  const length = (value: number) => (value > 0 ? Math.max(2, (Math.log10(value / low) / decades) * lengthPx) : 0);
  return { length, ticks, log: true };
}

function sides(row: BenchRow): Array<[Figures, string]> {
  return row.baseline
    ? [
        [row.library, COLOUR.library],
        [row.baseline, COLOUR.baseline],
      ]
    : [[row.library, COLOUR.library]];
}

function throughputLine([figures, colour]: [Figures, string]): Line {
  const perSecond = figures.perSecond;
  return measured(perSecond)
    ? { segments: [{ value: perSecond, colour }], label: `${compact(perSecond)}/s` }
    : { segments: [], label: '' };
}

/** p99 as a faint bar, p50 as a solid one over it. */
function latencyLine([figures, colour]: [Figures, string]): Line {
  const p99 = measured(figures.p99Ms) ? [{ value: figures.p99Ms, colour, faint: true }] : [];
  const p50 = measured(figures.p50Ms) ? [{ value: figures.p50Ms, colour }] : [];
  const label = [
    ...(p50.length ? [`p50 ${ms(p50[0]!.value)}`] : []),
    ...(p99.length ? [`p99 ${ms(p99[0]!.value)}`] : []),
  ];
  return { segments: [...p99, ...p50], label: label.join(' · ') };
}

function extraLines(row: BenchRow): Line[] {
  return Object.entries(row.extra ?? {})
    .filter((entry): entry is [string, number] => measured(entry[1]))
    .map(([name, value]) => {
      const colour = /baseline/i.test(name) ? COLOUR.baseline : /library/i.test(name) ? COLOUR.library : COLOUR.other;
      return { segments: [{ value, colour }], label: `${name}: ${compact(value)}` };
    });
}

const hasFigures = (scenario: ScenarioResult) =>
  scenario.rows.some((row) => sides(row).some(([side]) => [side.perSecond, side.p50Ms, side.p99Ms].some(measured)));

function partsOf(scenario: ScenarioResult): Part[] {
  const full = WIDTH - 2 * MARGIN;
  if (!hasFigures(scenario))
    return [{ x: MARGIN, width: full, heading: scenario.unit, rows: scenario.rows.map(extraLines) }];
  const leftWidth = Math.round(full * 0.56);
  return [
    {
      x: MARGIN,
      width: leftWidth,
      heading: `throughput, ${scenario.unit}/s`,
      rows: scenario.rows.map((row) => sides(row).map(throughputLine)),
    },
    {
      x: MARGIN + leftWidth + 30,
      width: full - leftWidth - 30,
      heading: 'latency, ms (p50 solid, p99 light)',
      rows: scenario.rows.map((row) => sides(row).map(latencyLine)),
    },
  ];
}

function renderPart(part: Part, top: number, rowHeights: number[]): string[] {
  const lines = part.rows.flat();
  const values = lines.flatMap((line) => line.segments.map((segment) => segment.value));
  if (values.length === 0) return [text(part.x, top - 8, [[`${part.heading}: not measured`, 'muted']])];
  const labelRoom = Math.min(part.width / 2, Math.max(...lines.map((line) => line.label.length)) * CHAR_PX + 8);
  const scale = scaleFor(values, part.width - labelRoom);
  const bottom = top + rowHeights.reduce((sum, height) => sum + height, 0);
  const out = [
    text(part.x, top - 8, [
      [part.heading, 'heading'],
      ...(scale.log ? [[' · log scale', 'muted'] as [string, string]] : []),
    ]),
  ];
  for (const tick of scale.ticks) {
    const x = part.x + scale.length(tick);
    out.push(`<line x1="${px(x)}" y1="${px(top)}" x2="${px(x)}" y2="${px(bottom - ROW_GAP)}" class="grid"/>`);
    out.push(text(x, bottom + 6, [[compact(tick), 'tick']], tick === scale.ticks[0] ? 'start' : 'middle'));
  }
  let rowTop = top;
  part.rows.forEach((rowLines, rowIndex) => {
    rowLines.forEach((line, lineIndex) => {
      if (line.segments.length === 0) return;
      const y = rowTop + ROW_LABEL + lineIndex * BAR_STEP;
      for (const segment of line.segments)
        out.push(rect(part.x, y, scale.length(segment.value), BAR, segment.colour, segment.faint ? 0.35 : 1));
      const end = Math.max(...line.segments.map((segment) => scale.length(segment.value)));
      out.push(text(part.x + end + 4, y + BAR - 2, [[line.label, 'value']]));
    });
    rowTop += rowHeights[rowIndex] ?? 0;
  });
  return out;
}

/** Row labels span the first part; the ratio library / baseline sits at its right edge. */
function renderRowLabels(scenario: ScenarioResult, part: Part, top: number, rowHeights: number[]): string[] {
  let rowTop = top;
  return scenario.rows.flatMap((row, index) => {
    const y = rowTop + 12;
    rowTop += rowHeights[index] ?? 0;
    const value = ratio(row.library.perSecond, row.baseline?.perSecond);
    const ratioText = Number.isFinite(value) ? `${formatRatio(value)} baseline` : '';
    const label = truncate(row.label, fits(part.width - ratioText.length * CHAR_PX - 12));
    return [
      text(part.x, y, [[label, 'row']]),
      ...(ratioText ? [text(part.x + part.width, y, [[ratioText, 'ratio']], 'end')] : []),
    ];
  });
}

function renderCheck(check: TargetCheck, y: number): string {
  const actual = truncate(check.actual, 40);
  const target = truncate(check.target, fits(WIDTH - 2 * MARGIN - 60) - actual.length - 6);
  return text(MARGIN, y, [
    [check.met ? '✓ ' : '✗ ', check.met ? 'ok' : 'missed'],
    [target, 'row'],
    [` — ${actual}`, 'muted'],
  ]);
}

function renderPanel(scenario: ScenarioResult, top: number): { svg: string; height: number } {
  const parts = partsOf(scenario);
  const rowHeights = scenario.rows.map(
    (_, index) => ROW_LABEL + Math.max(0, ...parts.map((part) => part.rows[index]?.length ?? 0)) * BAR_STEP + ROW_GAP,
  );
  const rowsTop = top + 54;
  const rowsBottom = rowsTop + rowHeights.reduce((sum, height) => sum + height, 0);
  const checksTop = rowsBottom + 30;
  const height = checksTop - top + scenario.checks.length * CHECK_LINE;
  const title = truncate(`${scenario.id}. ${scenario.title}`, 70);
  const body = [
    `<rect x="${MARGIN / 2}" y="${px(top)}" width="${WIDTH - MARGIN}" height="${px(height)}" rx="6" class="panel"/>`,
    text(MARGIN, top + 24, [
      [title, 'title'],
      [`  unit: ${truncate(scenario.unit, 40)}`, 'muted'],
    ]),
    ...parts.flatMap((part) => renderPart(part, rowsTop, rowHeights)),
    ...renderRowLabels(scenario, parts[0]!, rowsTop, rowHeights),
    ...scenario.checks.map((check, index) => renderCheck(check, checksTop + index * CHECK_LINE)),
  ];
  return { svg: body.join('\n'), height };
}

function renderHeader(run: BenchRun): string[] {
  const started = new Date(run.startedAt);
  const when = Number.isNaN(started.getTime())
    ? run.startedAt
    : `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const m = run.machine;
  const machine = `${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB · Node ${m.node} · Redis ${m.redis} · PostgreSQL ${m.postgres} · MariaDB ${m.mariadb} · SQLite ${m.sqlite}`;
  const legendX = WIDTH - MARGIN - 150;
  return [
    text(MARGIN, 30, [
      ['Benchmark results', 'title'],
      [`  ${when}`, 'muted'],
      ...(run.quick ? [['  quick run: figures are indicative only', 'missed'] as [string, string]] : []),
    ]),
    text(MARGIN, 50, [[truncate(machine, fits(WIDTH - 2 * MARGIN)), 'muted']]),
    rect(legendX, 21, 12, 11, COLOUR.library),
    text(legendX + 16, 30, [['library', 'row']]),
    rect(legendX + 75, 21, 12, 11, COLOUR.baseline),
    text(legendX + 91, 30, [['baseline', 'row']]),
  ];
}

/** The run as one self-contained SVG: a panel per scenario with its bars and its checked targets. */
export function throughputLatencyChart(run: BenchRun): string {
  const out = renderHeader(run);
  let y = 68;
  for (const scenario of run.scenarios) {
    const panel = renderPanel(scenario, y);
    out.push(panel.svg);
    y += panel.height + 16;
  }
  const style = [
    `text { font-family: ${FONT}; font-size: 11px; fill: #1f2937; }`,
    '.title { font-size: 15px; font-weight: 600; } .heading { font-weight: 600; } .muted, .tick { fill: #6b7280; }',
    `.ratio { font-weight: 600; } .ok { fill: ${COLOUR.ok}; font-weight: 700; } .missed { fill: ${COLOUR.missed}; font-weight: 700; }`,
    '.panel { fill: #fafafa; stroke: #e5e7eb; } .grid { stroke: #e5e7eb; stroke-width: 1; }',
  ].join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${px(y)}" viewBox="0 0 ${WIDTH} ${px(y)}">`,
    `<style>\n${style}\n</style>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}
