// "Simulate a burst": 1,000 changes from 50 visitors through the app's routes (POST /bursts), then the
// tally once they are all in SQL (GET /bursts/latest): changes accepted, the SQL statements and rows the
// flushes wrote, and what SQL lacks of the accepted changes.

import { api, showError } from './api.js';
import { number, noun, seconds, signed } from './dom.js';

const text = (id, value) => (document.getElementById(id).textContent = value);

function phaseText(burst) {
  if (burst.phase === 'sending')
    return `Sending: ${number(burst.answered)} of ${number(burst.requests)} requests answered…`;
  if (burst.phase === 'flushing') {
    const pending = burst.pending ?? 0;
    return `All ${number(burst.requests)} requests answered; ${number(pending)} ${noun(pending, 'change')} wait for a flush…`;
  }
  const took = seconds(Date.parse(burst.doneAt) - Date.parse(burst.startedAt));
  return `Done: in SQL ${took} after the first request.`;
}

/** Shows the latest burst; returns whether one is still going. */
export async function refreshBurst() {
  const { burst } = await api('GET', '/bursts/latest');
  const box = document.getElementById('burst');
  if (!burst) return false;
  box.dataset.phase = burst.phase;
  text('burst-phase', phaseText(burst));
  text('burst-accepted', number(burst.accepted));
  text(
    'burst-accepted-detail',
    `${number(burst.views)} views, ${signed(burst.likes)} likes, ${number(burst.refused)} refused`,
  );
  text('burst-statements', number(burst.statements));
  text(
    'burst-statements-detail',
    `${number(burst.updates)} ${noun(burst.updates, 'UPDATE')} in ${number(burst.transactions)} ${noun(burst.transactions, 'transaction')}`,
  );
  text('burst-rows', number(burst.rowsWritten));
  text(
    'burst-rows-detail',
    `${number(burst.flushes)} ${noun(burst.flushes, 'flush', 'flushes')}, ${number(burst.batches)} ${noun(burst.batches, 'batch', 'batches')}`,
  );
  text('burst-lost', burst.lost === null ? '…' : number(burst.lost));
  text(
    'burst-lost-detail',
    burst.sql === null
      ? 'once everything is in SQL'
      : `SQL: ${number(burst.sql.like_count)} likes, ${number(burst.sql.view_count)} views`,
  );
  if (burst.refusal) showError(new Error(`A burst request was refused: ${burst.refusal}`));
  return burst.phase !== 'done';
}

/** Starts a burst on `solutionId`; `poll` follows it until its tally is done. */
export async function startBurst(solutionId, poll) {
  const button = document.getElementById('burst-start');
  button.disabled = true;
  try {
    await api('POST', '/bursts', { solutionId });
    showError(null);
    await poll();
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}
