// The problems, their solutions and comments, with live counts (GET /overview, `@LiveCounts()`), like
// buttons and comment forms. A count that another client changed lights up when a refresh brings it.

import { api, showError } from './api.js';
import { h, noun, setText } from './dom.js';

const state = {
  liked: { solution: new Set(), comment: new Set() },
  shape: '',
  // Bumped by every change this page makes: a refresh that started before it shows older counts.
  changes: 0,
  /** Called with a solution's id when the user opens it. */
  onOpen: () => undefined,
};

/** A live count and its noun: `<span data-count="solution:1:likeCount">2</span> likes`, updated in place. */
function stat(type, id, field, value, one, many) {
  const key = `${type}:${id}:${field}`;
  return h(
    'span',
    { class: 'stat' },
    h('span', { class: 'count', 'data-count': key }, String(value)),
    ' ',
    h(
      'span',
      { class: 'unit', 'data-unit': key, 'data-one': one, 'data-many': many ?? `${one}s` },
      noun(value, one, many),
    ),
  );
}

/** Shows a count; `flash` when the change came from elsewhere. */
function showCount(key, value, flash) {
  const node = document.querySelector(`[data-count="${key}"]`);
  if (!node) return;
  setText(node, String(value), flash);
  const unit = document.querySelector(`[data-unit="${key}"]`);
  unit.textContent = noun(Number(value), unit.dataset.one, unit.dataset.many);
}

const joined = (...parts) => parts.flatMap((part, index) => (index === 0 ? [part] : [' · ', part]));

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
    h('p', { class: 'author' }, comment.author?.name ?? 'Anonymous'),
    h('p', { class: 'content' }, comment.content),
    h(
      'span',
      { class: 'counts' },
      likeButton('comment', comment.id),
      ' ',
      ...joined(
        stat('comment', comment.id, 'likeCount', comment.likeCount, 'like'),
        stat('comment', comment.id, 'replyCount', comment.replyCount, 'reply', 'replies'),
      ),
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
    h(
      'h3',
      { class: 'title' },
      h('a', { href: `#solution-${solution.id}`, onclick: () => openSolution(solution.id) }, solution.title),
    ),
    h('p', { class: 'content' }, solution.content),
    h(
      'p',
      { class: 'counts' },
      likeButton('solution', solution.id),
      ' ',
      ...joined(
        stat('solution', solution.id, 'likeCount', solution.likeCount, 'like'),
        stat('solution', solution.id, 'viewCount', solution.viewCount, 'view'),
        stat('solution', solution.id, 'commentCount', solution.commentCount, 'comment'),
      ),
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
      ...joined(
        stat('problem', problem.id, 'submissionCount', problem.submissionCount, 'submission'),
        stat('problem', problem.id, 'passedCount', problem.passedCount, 'passed', 'passed'),
        stat('problem', problem.id, 'solutionCount', problem.solutionCount, 'solution'),
      ),
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
    for (const field of fields) showCount(`${type}:${row.id}:${field}`, row[field], true);
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

/** The problems as `GET /overview` has them now; returns them. */
export async function refreshProblems() {
  const changes = state.changes;
  const [{ problems }, liked] = await Promise.all([api('GET', '/overview'), api('GET', '/likes')]);
  if (changes !== state.changes) return problems;
  state.liked = { solution: new Set(liked.solution), comment: new Set(liked.comment) };
  const shape = shapeOf(problems);
  if (shape !== state.shape) render(problems);
  else updateCounts(problems);
  state.shape = shape;
  updateLikeButtons();
  return problems;
}

/** The signed-in user changed: what they like is drawn anew. */
export function userChanged() {
  state.changes++;
}

export function onOpen(listener) {
  state.onOpen = listener;
}

/** Opens a solution: `GET /solutions/:id` counts a view, and the inspector shows it. */
export async function openSolution(id) {
  state.changes++;
  try {
    const solution = await api('GET', `/solutions/${id}`);
    showCount(`solution:${id}:viewCount`, solution.viewCount, false);
    state.onOpen(id);
    showError(null);
  } catch (error) {
    showError(error);
  }
}

async function toggleLike(type, id, button) {
  const liked = state.liked[type].has(id);
  state.changes++;
  button.disabled = true;
  try {
    const result = await api(liked ? 'DELETE' : 'POST', `/${type}s/${id}/like`);
    if (result.liked) state.liked[type].add(id);
    else state.liked[type].delete(id);
    showCount(`${type}:${id}:likeCount`, result.like_count, false);
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
    await refreshProblems();
  } catch (error) {
    showError(error);
  }
}
