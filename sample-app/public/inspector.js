// One solution's counters side by side: the live value (Redis), the value in SQL (read straight from the
// table), and the changes between them that wait for a flush. The SQL value lights up when a flush lands.
// Below them, the solution's views per hour (sparkline.js).

import { api } from './api.js';
import { h, number, setText, signed } from './dom.js';
import { drawSparkline } from './sparkline.js';

const COUNTERS = [
  ['like_count', 'Likes'],
  ['view_count', 'Views'],
  ['comment_count', 'Comments'],
];

const state = { solutionId: Number(localStorage.getItem('judge.solutionId')) || 1 };

/** The rows of the inspector, once: `live 214 · in SQL 212 · +2 pending` per counter. */
export function renderInspector() {
  document
    .getElementById('inspector-values')
    .replaceChildren(
      ...COUNTERS.map(([counter, label]) =>
        h(
          'li',
          { 'data-counter': counter },
          h('span', { class: 'label' }, label),
          h(
            'span',
            { class: 'values' },
            'live ',
            h('span', { class: 'live', 'data-live': counter }, '…'),
            ' · in SQL ',
            h('span', { class: 'sql', 'data-sql': counter }, '…'),
            ' · ',
            h('span', { class: 'pending', 'data-pending': counter }, '…'),
            ' pending',
          ),
        ),
      ),
    );
}

/** The solutions one can pick, from the overview's problems. */
export function listSolutions(problems) {
  const select = document.getElementById('inspect-solution');
  const options = problems.flatMap((problem) =>
    problem.solutions.map((solution) => [String(solution.id), `${problem.title}: ${solution.title}`]),
  );
  const shown = [...select.options].map((option) => [option.value, option.textContent]);
  if (JSON.stringify(shown) !== JSON.stringify(options)) {
    select.replaceChildren(...options.map(([value, text]) => h('option', { value }, text)));
  }
  if (!options.some(([value]) => Number(value) === state.solutionId) && options.length > 0) {
    state.solutionId = Number(options[0][0]);
  }
  select.value = String(state.solutionId);
}

export function selectSolution(id) {
  state.solutionId = id;
  localStorage.setItem('judge.solutionId', String(id));
  document.getElementById('inspect-solution').value = String(id);
  return refreshInspector(true);
}

/**
 * Reads `GET /solutions/:id/counters` and `GET /solutions/:id/views/hourly` (neither counts a view).
 * `fresh`: another solution, nothing flashes.
 */
export async function refreshInspector(fresh = false) {
  // Not before the overview listed the solutions: the one remembered may be gone.
  if (document.getElementById('inspect-solution').options.length === 0) return;
  const id = state.solutionId;
  const [{ counters }, hours] = await Promise.all([
    api('GET', `/solutions/${id}/counters`),
    api('GET', `/solutions/${id}/views/hourly`),
  ]);
  if (id !== state.solutionId) return;
  drawSparkline(hours);
  for (const [counter] of COUNTERS) {
    const { live, sql, pending } = counters[counter];
    const cell = (kind) => document.querySelector(`[data-${kind}="${counter}"]`);
    setText(cell('live'), number(live));
    setText(cell('sql'), number(sql), !fresh);
    setText(cell('pending'), signed(pending));
    cell('pending')
      .closest('li')
      .classList.toggle('has-pending', pending !== 0);
  }
}
