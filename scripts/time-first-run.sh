#!/usr/bin/env bash
# Times a new user's first run: a fresh clone of this repository's HEAD, `npm install`, `npm start`,
# until GET / answers 200; then stops the app with SIGINT (Ctrl-C) and removes the clone and, on a
# shared Redis, the app's keys. Prints each step's seconds and the total.
#   scripts/time-first-run.sh               the npm cache as it is
#   scripts/time-first-run.sh --cold-cache  an empty npm cache of its own (every package downloaded)
# PORT picks the app's port (default: a free one); REDIS_URL and DATABASE_URL pass through to the app.
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nestjs-counter-first-run.XXXXXX")
CLONE=$WORK/clone
LOG=$WORK/start.log
if [ "${1:-}" = --cold-cache ]; then export npm_config_cache=$WORK/npm-cache; fi
PORT=${PORT:-$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => {
  console.log(s.address().port); s.close(); })")}
export PORT

APP=
stop_app() {
  [ -n "$APP" ] || return 0
  # Ctrl-C reaches the whole process group (npm, sh, node): send it the same way.
  kill -INT -- "-$APP" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 -- "-$APP" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$APP" 2>/dev/null || true
  APP=
}
clean_up() {
  stop_app
  rm -rf "$WORK"
}
trap clean_up EXIT

now_ms() { date +%s%3N; }
seconds_since() { echo $((($(now_ms) - $1 + 500) / 1000)); }
started=$(now_ms)

step=$(now_ms)
git clone --quiet "$SOURCE" "$CLONE"
clone_s=$(seconds_since "$step")

step=$(now_ms)
(cd "$CLONE" && npm install --no-audit --no-fund >"$WORK/install.log" 2>&1) ||
  { cat "$WORK/install.log" >&2; echo "time-first-run: npm install failed" >&2; exit 1; }
install_s=$(seconds_since "$step")
[ -z "$(git -C "$CLONE" status --porcelain)" ] ||
  { git -C "$CLONE" status --short >&2; echo "time-first-run: npm install changed the clone" >&2; exit 1; }

step=$(now_ms)
(cd "$CLONE" && exec setsid npm start >"$LOG" 2>&1) &
APP=$!
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")" = 200 ]; do
  if ! kill -0 "$APP" 2>/dev/null; then
    cat "$LOG" >&2
    echo "time-first-run: npm start exited before serving" >&2
    exit 1
  fi
  sleep 0.2
done
start_s=$(seconds_since "$step")
total_s=$(seconds_since "$started")

stop_app
grep -E '^(npm start:|  )' "$LOG" || true
# A shared Redis keeps the demo's keys under the prefix of a database that no longer exists: remove them.
redis=$(sed -n 's/^  Redis  *\([^ ]*\) (shared.*/\1/p' "$LOG")
prefix=$(sed -n 's/^  key prefix  *\([^ ]*\) .*/\1/p' "$LOG")
if [ -n "$redis" ] && [ -n "$prefix" ]; then
  redis-cli -u "$redis" --scan --pattern "$prefix*" | xargs -r redis-cli -u "$redis" del >/dev/null
fi
echo "time-first-run: clone ${clone_s} s, npm install ${install_s} s, npm start to GET / 200 ${start_s} s; total ${total_s} s"
