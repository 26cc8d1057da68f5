// The sample app's page: plain JavaScript modules, no framework, no build step. Each panel reads its own
// route and is refreshed on a timer; the buttons refresh what they change at once.

import { api, every, session } from './api.js';
import { refreshBurst, startBurst } from './burst.js';
import { h } from './dom.js';
import { onFlushChange, refreshFlush, refreshStatus, wireFlushButtons } from './flush-panel.js';
import { listSolutions, refreshInspector, renderInspector, selectSolution } from './inspector.js';
import { onOpen, openSolution, refreshProblems, userChanged } from './problems.js';
import { refreshTrending } from './trending.js';

const PROBLEMS_EVERY_MS = 2000;
const PANELS_EVERY_MS = 1000;
const BURST_EVERY_MS = 500;

async function signIn() {
  const users = await api('GET', '/users');
  if (!users.some((user) => user.id === session.userId)) session.userId = users[0]?.id ?? 1;
  const select = document.getElementById('user');
  select.replaceChildren(...users.map((user) => h('option', { value: user.id }, user.name)));
  select.value = String(session.userId);
  return select;
}

async function start() {
  const select = await signIn();
  renderInspector();
  wireFlushButtons();
  onOpen((id) => selectSolution(id));

  const problems = every(PROBLEMS_EVERY_MS, async () => listSolutions(await refreshProblems()));
  const inspector = every(PANELS_EVERY_MS, () => refreshInspector());
  const status = every(PANELS_EVERY_MS, refreshStatus);
  every(PANELS_EVERY_MS, refreshFlush);
  const trending = every(PANELS_EVERY_MS, refreshTrending);
  const burst = every(BURST_EVERY_MS, refreshBurst);
  onFlushChange(() => Promise.all([inspector(), status(), trending(), burst()]));

  select.addEventListener('change', () => {
    session.userId = Number(select.value);
    localStorage.setItem('judge.userId', select.value);
    userChanged();
    void problems();
  });
  // Opening a solution from the picker counts a view, as its title's link does; a burst goes to it.
  const picker = document.getElementById('inspect-solution');
  picker.addEventListener('change', () => void openSolution(Number(picker.value)));
  document.getElementById('burst-start').addEventListener('click', () =>
    startBurst(Number(picker.value), async () => {
      await burst();
      await inspector();
    }),
  );
}

start().catch((error) => {
  document.getElementById('error').textContent = error.message;
  document.getElementById('error').hidden = false;
});
