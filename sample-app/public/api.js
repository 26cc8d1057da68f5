// The page's calls to the app, as the signed-in demo user, and the one place errors are shown.

export const session = {
  userId: Number(localStorage.getItem('judge.userId')) || 1,
};

export async function api(method, path, body) {
  const headers = { 'X-User-Id': String(session.userId) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.message ?? `${method} ${path}: ${response.status}`);
  return data;
}

export function showError(error) {
  const box = document.getElementById('error');
  box.textContent = error ? error.message : '';
  box.hidden = !error;
}

/** Runs `task` now and every `ms`, one run at a time, showing its failure. */
export function every(ms, task) {
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
  return run;
}
