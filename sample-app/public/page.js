// The sample app's page: plain JavaScript, no framework, no build step. Whatever users typed reaches
// the DOM only as text nodes (append, textContent), never as markup.

const OVERVIEW_EVERY_MS = 2000;
const STATUS_EVERY_MS = 1000;

const state = {
  userId: Number(localStorage.getItem('judge.userId')) || 1,
  liked: { solution: new Set(), comment: new Set() },
  shape: '',
  // Bumped by every change this page makes: a refresh that started before it shows older counts.
  changes: 0,
};

/** An element with attributes, listeners (`on…`) and children; strings become text nodes. */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  node.append(...children.flat().filter((child) => child !== null && child !== undefined));
  return node;
}

async function api(method, path, body) {
  const headers = { 'X-User-Id': String(state.userId) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.message ?? `${method} ${path}: ${response.status}`);
  return data;
}

function showError(error) {
  const box = document.getElementById('error');
  box.textContent = error ? error.message : '';
  box.hidden = !error;
}

/** A live count: `<span data-count="solution:1:likeCount">`, updated in place by later refreshes. */
const count = (type, id, field, value) =>
  h('span', { class: 'count', 'data-count': `${type}:${id}:${field}` }, String(value));

function likeButton(type, id) {
  return h('button', {
    type: 'button',
    class: 'like',
    'data-like': `${type}:${id}`,
    onclick: (event) => toggleLike(type, id, event.currentTarget),
  });
}

function renderComment(comment, replies) {
  return h(
    'li',
    { class: 'comment', id: `comment-${comment.id}` },
    h('p', { class: 'content' }, comment.content),
    h(
      'span',
      { class: 'counts' },
      likeButton('comment', comment.id),
      ' ',
      count('comment', comment.id, 'likeCount', comment.likeCount),
      ' likes · ',
      count('comment', comment.id, 'replyCount', comment.replyCount),
      ' replies',
    ),
    (replies.get(comment.id) ?? []).length === 0
      ? null
      : h(
          'ul',
          { class: 'replies' },
          replies.get(comment.id).map((reply) => renderComment(reply, replies)),
        ),
  );
}

function renderSolution(solution) {
  const replies = new Map();
  for (const comment of solution.comments) {
    const siblings = replies.get(comment.parentId) ?? [];
    siblings.push(comment);
    replies.set(comment.parentId, siblings);
  }
  return h(
    'section',
    { class: 'solution', id: `solution-${solution.id}` },
    h('h3', { class: 'title' }, solution.title),
    h('p', { class: 'content' }, solution.content),
    h(
      'p',
      { class: 'counts' },
      likeButton('solution', solution.id),
      ' ',
      count('solution', solution.id, 'likeCount', solution.likeCount),
      ' likes · ',
      count('solution', solution.id, 'viewCount', solution.viewCount),
      ' views · ',
      count('solution', solution.id, 'commentCount', solution.commentCount),
      ' comments',
    ),
    h(
      'ul',
      { class: 'comments' },
      (replies.get(null) ?? []).map((comment) => renderComment(comment, replies)),
    ),
    h(
      'form',
      { class: 'comment-form', 'data-solution': solution.id, onsubmit: (event) => postComment(event, solution.id) },
      h('textarea', { name: 'content', required: '', maxlength: 5000, placeholder: 'Add a comment' }),
      h('button', { type: 'submit' }, 'Comment'),
    ),
  );
}

function renderProblem(problem) {
  return h(
    'article',
    { class: 'problem', id: `problem-${problem.id}` },
    h('h2', { class: 'title' }, problem.title),
    h('p', { class: 'statement' }, problem.statement),
    h(
      'p',
      { class: 'counts' },
      count('problem', problem.id, 'submissionCount', problem.submissionCount),
      ' submissions · ',
      count('problem', problem.id, 'passedCount', problem.passedCount),
      ' passed · ',
      count('problem', problem.id, 'solutionCount', problem.solutionCount),
      ' solutions',
    ),
    problem.solutions.map(renderSolution),
  );
}

/** Which rows the page shows: when it changes the page is drawn anew, else only counts are updated. */
const shapeOf = (problems) =>
  JSON.stringify(problems.map((p) => [p.id, p.solutions.map((s) => [s.id, s.comments.map((c) => c.id)])]));

function render(problems) {
  // Keep what the user is typing across a redraw.
  const drafts = new Map(
    [...document.querySelectorAll('.comment-form')].map((f) => [f.dataset.solution, f.content.value]),
  );
  const focused = document.activeElement?.closest?.('.comment-form')?.dataset.solution;
  document.getElementById('problems').replaceChildren(...problems.map(renderProblem));
  for (const form of document.querySelectorAll('.comment-form')) {
    form.content.value = drafts.get(form.dataset.solution) ?? '';
    if (form.dataset.solution === focused) form.content.focus();
  }
}

function updateCounts(problems) {
  const set = (type, row, fields) => {
    for (const field of fields) {
      const node = document.querySelector(`[data-count="${type}:${row.id}:${field}"]`);
      if (node) node.textContent = String(row[field]);
    }
  };
  for (const problem of problems) {
    set('problem', problem, ['submissionCount', 'passedCount', 'solutionCount']);
    for (const solution of problem.solutions) {
      set('solution', solution, ['likeCount', 'viewCount', 'commentCount']);
      for (const comment of solution.comments) set('comment', comment, ['likeCount', 'replyCount']);
    }
  }
}

function updateLikeButtons() {
  for (const button of document.querySelectorAll('button[data-like]')) {
    const [type, id] = button.dataset.like.split(':');
    const liked = state.liked[type].has(Number(id));
    button.textContent = liked ? '♥ Unlike' : '♡ Like';
    button.setAttribute('aria-pressed', String(liked));
  }
}

async function refresh() {
  const changes = state.changes;
  const [{ problems }, liked] = await Promise.all([api('GET', '/overview'), api('GET', '/likes')]);
  if (changes !== state.changes) return;
  state.liked = { solution: new Set(liked.solution), comment: new Set(liked.comment) };
  const shape = shapeOf(problems);
  if (shape !== state.shape) render(problems);
  else updateCounts(problems);
  state.shape = shape;
  updateLikeButtons();
}

async function toggleLike(type, id, button) {
  const liked = state.liked[type].has(id);
  state.changes++;
  button.disabled = true;
  try {
    const result = await api(liked ? 'DELETE' : 'POST', `/${type}s/${id}/like`);
    if (result.liked) state.liked[type].add(id);
    else state.liked[type].delete(id);
    document.querySelector(`[data-count="${type}:${id}:likeCount"]`).textContent = String(result.like_count);
    updateLikeButtons();
    showError(null);
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}

async function postComment(event, solutionId) {
  event.preventDefault();
  const form = event.currentTarget;
  state.changes++;
  try {
    await api('POST', `/solutions/${solutionId}/comments`, { content: form.content.value });
    form.content.value = '';
    showError(null);
    await refresh();
  } catch (error) {
    showError(error);
  }
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function refreshStatus() {
  const status = await api('GET', '/health/counters');
  const text = (id, value) => (document.getElementById(id).textContent = value);
  text('status-redis', status.redisAvailable ? 'up' : 'down');
  text('status-pending', String(status.pendingRows));
  text('status-oldest', status.oldestPendingAgeMs === null ? '—' : seconds(status.oldestPendingAgeMs));
  const last = status.lastSuccessfulFlushAt;
  text('status-last-flush', last ? `${seconds(Math.max(0, Date.now() - Date.parse(last)))} ago` : 'never');
  text('status-failures', String(status.consecutiveFailedFlushes));
}

/** Runs `task` now and every `ms`, one run at a time, showing its failure. */
function every(ms, task) {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await task();
    } catch (error) {
      showError(error);
    } finally {
      running = false;
    }
  };
  void run();
  setInterval(run, ms);
}

async function start() {
  const users = await api('GET', '/users');
  if (!users.some((user) => user.id === state.userId)) state.userId = users[0]?.id ?? 1;
  const select = document.getElementById('user');
  select.replaceChildren(...users.map((user) => h('option', { value: user.id }, user.name)));
  select.value = String(state.userId);
  select.addEventListener('change', () => {
    state.userId = Number(select.value);
    localStorage.setItem('judge.userId', select.value);
    state.changes++;
    void refresh().catch(showError);
  });
  every(OVERVIEW_EVERY_MS, refresh);
  every(STATUS_EVERY_MS, refreshStatus);
}

start().catch(showError);
