// The flush: its status (CounterService.status()), the last flush that wrote rows, the chart and the
// log of the last flushes (GET /flush), and the buttons that pause, resume and run it.

import { api, showError } from './api.js';
import { drawChart } from './chart.js';
import { clock, h, number, noun, seconds } from './dom.js';

const LOG_SHOWN = 6;

const state = { paused: false, lastWrite: null, refreshed: [] };

/** Called after the buttons changed something, so that other panels catch up at once. */
export function onFlushChange(listener) {
  state.refreshed.push(listener);
}

const text = (id, value) => (document.getElementById(id).textContent = value);

/** "12:43:51 — 3 rows, 1 batch, 4 ms, 5 SQL statements" */
const describe = (entry) =>
  `${clock(entry.at)} — ${number(entry.rows)} ${noun(entry.rows, 'row')}, ${entry.batches} ${noun(entry.batches, 'batch', 'batches')}, ` +
  `${Math.round(entry.durationMs)} ms, ${entry.statements} SQL ${noun(entry.statements, 'statement')}`;

export async function refreshStatus() {
  const status = await api('GET', '/health/counters');
  text('status-redis', status.redisAvailable ? 'up' : 'down');
  text('status-pending', status.pendingRows === null ? '—' : number(status.pendingRows));
  text('status-oldest', status.oldestPendingAgeMs === null ? '—' : seconds(status.oldestPendingAgeMs));
  text('status-failures', String(status.consecutiveFailedFlushes));
  showLastWrite();
}

function showLastWrite() {
  const entry = state.lastWrite;
  const ago = entry && seconds(Math.max(0, Date.now() - Date.parse(entry.at)));
  text('status-last-write', entry ? `${describe(entry)} (${ago} ago)` : 'none yet');
}

export async function refreshFlush() {
  const flush = await api('GET', '/flush');
  state.paused = flush.paused;
  state.lastWrite = flush.log[0] ?? null;
  const toggle = document.getElementById('flush-toggle');
  toggle.textContent = flush.paused ? 'Resume flushing' : 'Pause flushing';
  toggle.setAttribute('aria-pressed', String(flush.paused));
  text('flush-schedule', flush.paused ? 'paused' : `every ${seconds(flush.intervalMs)}`);
  document.getElementById('flush').classList.toggle('paused', flush.paused);
  document
    .getElementById('flush-log')
    .replaceChildren(...flush.log.slice(0, LOG_SHOWN).map((entry) => h('li', {}, describe(entry))));
  drawChart(flush.timeline);
  showLastWrite();
}

async function act(button, path) {
  button.disabled = true;
  try {
    await api('POST', path);
    showError(null);
    await refreshFlush();
    await Promise.all(state.refreshed.map((listener) => listener()));
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}

export function wireFlushButtons() {
  const toggle = document.getElementById('flush-toggle');
  toggle.addEventListener('click', () => act(toggle, state.paused ? '/flush/resume' : '/flush/pause'));
  const now = document.getElementById('flush-now');
  now.addEventListener('click', () => act(now, '/flush/now'));
}
