// "Trending today": the solutions liked most over the last 24 hours (GET /solutions/trending, from
// CounterService.top over like_count's rolling window), live: a like shows here before it is flushed.

import { api } from './api.js';
import { h, noun, signed } from './dom.js';

const state = { drawn: null };

/** "+3 likes in 24 h" */
const describe = (likes) => `${signed(likes)} ${noun(likes, 'like')} in 24 h`;

export async function refreshTrending() {
  const solutions = await api('GET', '/solutions/trending');
  const drawn = JSON.stringify(solutions);
  if (drawn === state.drawn) return;
  state.drawn = drawn;
  const list = document.getElementById('trending-list');
  list.replaceChildren(
    ...solutions.map(({ id, title, likes }) =>
      h(
        'li',
        { 'data-solution': id, 'data-likes': likes },
        h('span', { class: 'title' }, title),
        ' ',
        h('span', { class: 'likes' }, describe(likes)),
      ),
    ),
  );
  // An empty list says nothing to a screen reader: the sentence stands in for it.
  list.hidden = solutions.length === 0;
  document.getElementById('trending-empty').hidden = solutions.length > 0;
}
