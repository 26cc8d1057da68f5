#!/usr/bin/env bash
# Runs a command with the suites pointed at Valkey instead of Redis, and stops what it started whatever
# happens (a failure, Ctrl-C):
#   - a standalone valkey-server without persistence on the first free port of 6390-6398, as REDIS_URL
#     (support/redis.ts); not 6399, which the tests use as a port where nothing listens;
#   - a Valkey cluster made by scripts/redis-cluster.sh on VALKEY_CLUSTER_PORTS (default 7100-7105) in
#     a folder of its own, as REDIS_CLUSTER_PORTS (support/local-cluster.ts), beside Redis's on 7000-7005;
#   - COUNTER_REDIS_SERVER=valkey-server, so that the servers the specs and chaos scenarios start
#     themselves (support/redis-server.ts, restarts of cluster nodes included) are Valkey too.
# Usage: scripts/on-valkey.sh [command…]   (default: npx vitest run --project unit --project integration)
# CI runs the suites and the chaos scenarios about the server this way (.ci/run); needs valkey-server and
# valkey-cli (scripts/ensure-valkey.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

HOST=127.0.0.1
CLUSTER_PORTS=${VALKEY_CLUSTER_PORTS:-7100 7101 7102 7103 7104 7105}
CLUSTER_DIR=${VALKEY_CLUSTER_DIR:-${TMPDIR:-/tmp}/nestjs-counter-valkey-cluster}
PORT=
DIR=

port_taken() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
# Whether the server on a port says it is Valkey: a Redis found there would have the suites test Redis.
is_valkey() { valkey-cli -h "$HOST" -p "$1" info server 2>/dev/null | grep -q '^server_name:valkey'; }
cluster_script() {
  COUNTER_REDIS_SERVER=valkey-server REDIS_CLUSTER_PORTS="$CLUSTER_PORTS" REDIS_CLUSTER_DIR="$CLUSTER_DIR" \
    scripts/redis-cluster.sh "$@"
}

stop_standalone() {
  valkey-cli -h "$HOST" -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "${DIR:?}"
}
STOP_CLUSTER=no
stop_all() {
  if [ -n "$DIR" ]; then stop_standalone; fi
  if [ "$STOP_CLUSTER" = yes ]; then cluster_script stop >/dev/null || true; fi
}
trap stop_all EXIT

command -v valkey-server >/dev/null && command -v valkey-cli >/dev/null ||
  { echo "on-valkey: valkey-server and valkey-cli are needed (scripts/ensure-valkey.sh installs them)" >&2; exit 1; }

for port in 6390 6391 6392 6393 6394 6395 6396 6397 6398; do
  if ! port_taken "$port"; then PORT=$port; break; fi
done
[ -n "$PORT" ] || { echo "on-valkey: no free port in 6390-6398 for the standalone Valkey" >&2; exit 1; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/nestjs-counter-valkey-XXXXXX")
valkey-server --port "$PORT" --bind "$HOST" --daemonize yes --save "" --appendonly no \
  --dir "$DIR" --logfile "$DIR/valkey.log" --pidfile "$DIR/valkey.pid"
for _ in $(seq 1 100); do is_valkey "$PORT" && break; sleep 0.1; done
is_valkey "$PORT" || { echo "on-valkey: valkey-server did not answer on $HOST:$PORT (see $DIR/valkey.log)" >&2; exit 1; }

# A cluster already running there (a contributor's) is used and left running; one started here is stopped.
if ! cluster_script status >/dev/null 2>&1; then STOP_CLUSTER=yes; fi
cluster_script start
for port in $CLUSTER_PORTS; do
  is_valkey "$port" || { echo "on-valkey: the cluster node on $HOST:$port is not Valkey" >&2; exit 1; }
done
echo "on-valkey: $(valkey-server --version | head -n 1): $HOST:$PORT, cluster on $HOST:${CLUSTER_PORTS// /,}"

(($# > 0)) || set -- npx vitest run --project unit --project integration
COUNTER_REDIS_SERVER=valkey-server REDIS_URL="redis://$HOST:$PORT" \
  REDIS_CLUSTER_PORTS="$CLUSTER_PORTS" REDIS_CLUSTER_DIR="$CLUSTER_DIR" "$@"
