// The flush over the last minute, in plain SVG: changes per second (line), rows flushed per second
// (bars) and rows pending (steps), each scaled to its own peak, which the legend gives.

import { h, number, s } from './dom.js';

const SECONDS = 60;
const WIDTH = 360;
const HEIGHT = 110;
const TOP = 6;
const BOTTOM = 96;
const SLOT = WIDTH / SECONDS;

const SERIES = [
  { key: 'changes', label: 'changes/s', className: 'changes' },
  { key: 'rowsFlushed', label: 'rows flushed/s', className: 'flushed' },
  { key: 'pendingRows', label: 'pending rows', className: 'pending' },
];

const y = (value, peak) => BOTTOM - ((BOTTOM - TOP) * value) / peak;

/** Draws `samples` (oldest first, one a second) into the #flush-chart figure. */
export function drawChart(samples) {
  const offset = SECONDS - samples.length;
  const x = (index) => (offset + index) * SLOT;
  const peaks = Object.fromEntries(
    SERIES.map(({ key }) => [key, Math.max(0, ...samples.map((sample) => sample[key] ?? 0))]),
  );
  const scale = (key) => Math.max(1, peaks[key]);

  const bars = samples.map((sample, index) =>
    s('rect', {
      class: 'flushed',
      x: x(index) + 1,
      y: y(sample.rowsFlushed, scale('rowsFlushed')),
      width: SLOT - 2,
      height: BOTTOM - y(sample.rowsFlushed, scale('rowsFlushed')),
    }),
  );
  const line = (key, step) => {
    const points = samples.flatMap((sample, index) => {
      const value = y(sample[key] ?? 0, scale(key));
      return step ? [`${x(index)},${value}`, `${x(index) + SLOT},${value}`] : [`${x(index) + SLOT / 2},${value}`];
    });
    return s('polyline', { class: key === 'changes' ? 'changes' : 'pending', points: points.join(' ') });
  };

  const svg = s(
    'svg',
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': 'The flush over the last minute' },
    s('line', { class: 'axis', x1: 0, y1: BOTTOM, x2: WIDTH, y2: BOTTOM }),
    ...bars,
    line('pendingRows', true),
    line('changes', false),
    s('text', { x: 0, y: HEIGHT - 2 }, '−60 s'),
    s('text', { x: WIDTH, y: HEIGHT - 2, 'text-anchor': 'end' }, 'now'),
  );
  const legend = h(
    'ul',
    { class: 'legend' },
    SERIES.map(({ key, label, className }) =>
      h('li', { class: className }, h('span', { class: 'swatch' }), `${label} (peak ${number(peaks[key])})`),
    ),
  );
  document.getElementById('flush-chart').replaceChildren(svg, legend);
}
