// A solution's views per hour over the last 24 hours (GET /solutions/:id/views/hourly, from
// CounterService.series): one bar per hour, scaled to the busiest, in plain SVG. The hours are UTC, as
// the counter's buckets are.

import { noun, number, s } from './dom.js';

const BAR = 5;
const GAP = 2;
const HEIGHT = 28;

/** "14:00" for a bucket's start. */
const hourOf = (start) => new Date(start).toISOString().slice(11, 16);

const describe = ({ start, value }) => `${hourOf(start)} UTC: ${number(value)} ${noun(value, 'view')}`;

const state = { drawn: '' };

/** Draws `hours` (oldest first, `[{ start, value }]`) and the last one's text, unless they are what is shown. */
export function drawSparkline(hours) {
  const drawn = JSON.stringify(hours);
  if (drawn === state.drawn) return;
  state.drawn = drawn;
  const peak = Math.max(1, ...hours.map((hour) => hour.value));
  const bars = hours.map((hour, index) => {
    // A quiet hour keeps a 1-unit stub, so that the 24 slots stay visible.
    const height = Math.max(1, Math.round((HEIGHT * Math.max(0, hour.value)) / peak));
    return s(
      'rect',
      {
        class: hour.value > 0 ? 'busy' : 'quiet',
        x: index * (BAR + GAP),
        y: HEIGHT - height,
        width: BAR,
        height,
        'data-start': hour.start,
        'data-value': hour.value,
      },
      s('title', {}, describe(hour)),
    );
  });
  const values = hours.map((hour) => `${hourOf(hour.start)} ${number(hour.value)}`).join(', ');
  const label = `Views per hour over the last 24 hours: ${values} (UTC)`;
  const svg = s(
    'svg',
    { viewBox: `0 0 ${hours.length * (BAR + GAP) - GAP} ${HEIGHT}`, role: 'img', 'aria-label': label },
    ...bars,
  );
  const last = hours.at(-1);
  document.getElementById('views-sparkline').replaceChildren(svg);
  document.getElementById('views-last-hour').textContent = last ? describe(last) : '—';
}
