#!/usr/bin/env bash
# Runs a command with the suites pointed at another server than the machine's Redis, and stops what it
# started whatever happens (a failure, Ctrl-C):
#   - a standalone server without persistence on the first free port of 6390-6398, as REDIS_URL
#     (support/redis.ts); not 6399, which the tests use as a port where nothing listens;
#   - a cluster of that server made by scripts/redis-cluster.sh on ON_SERVER_CLUSTER_PORTS (default
#     7100-7105) in a folder of its own, as REDIS_CLUSTER_PORTS (support/local-cluster.ts), beside
#     Redis's on 7000-7005;
#   - COUNTER_REDIS_SERVER=<server>, so that the servers the specs and chaos scenarios start themselves
#     (support/redis-server.ts, restarts of cluster nodes included) are that server too.
# Usage: scripts/on-server.sh <server binary> [command…]
#   (default command: npx vitest run --project unit --project integration)
# The binary is a name on the PATH (valkey-server) or a path (scripts/debian-binaries.sh prints the folder
# of Redis 8 and Valkey 9); its client is the -cli beside it (valkey-cli, …/redis-cli).
# scripts/on-valkey.sh is this with valkey-server.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER=${1:?usage: scripts/on-server.sh <server binary> [command…]}
shift
CLI=${SERVER%-server}-cli
NAME=$(basename "$SERVER")

HOST=127.0.0.1
CLUSTER_PORTS=${ON_SERVER_CLUSTER_PORTS:-${VALKEY_CLUSTER_PORTS:-7100 7101 7102 7103 7104 7105}}
CLUSTER_DIR=${ON_SERVER_CLUSTER_DIR:-${TMPDIR:-/tmp}/nestjs-counter-${NAME%-server}-cluster}
PORT=
DIR=

port_taken() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
# Whether the server on a port is the one asked for: another found there would have the suites test it.
VERSION=$("$SERVER" --version | sed -nE 's/.* v=([^ ]+).*/\1/p')
is_ours() { "$CLI" -h "$HOST" -p "$1" info server 2>/dev/null | grep -qE "^(redis|valkey)_version:$VERSION"; }
cluster_script() {
  COUNTER_REDIS_SERVER="$SERVER" REDIS_CLUSTER_PORTS="$CLUSTER_PORTS" REDIS_CLUSTER_DIR="$CLUSTER_DIR" \
    scripts/redis-cluster.sh "$@"
}

stop_standalone() {
  "$CLI" -h "$HOST" -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "${DIR:?}"
}
STOP_CLUSTER=no
stop_all() {
  if [ -n "$DIR" ]; then stop_standalone; fi
  if [ "$STOP_CLUSTER" = yes ]; then cluster_script stop >/dev/null || true; fi
}
trap stop_all EXIT

command -v "$SERVER" >/dev/null && command -v "$CLI" >/dev/null ||
  { echo "on-server: $SERVER and $CLI are needed" >&2; exit 1; }
[ -n "$VERSION" ] || { echo "on-server: $SERVER --version gives no version" >&2; exit 1; }

for port in 6390 6391 6392 6393 6394 6395 6396 6397 6398; do
  if ! port_taken "$port"; then PORT=$port; break; fi
done
[ -n "$PORT" ] || { echo "on-server: no free port in 6390-6398 for the standalone server" >&2; exit 1; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/nestjs-counter-${NAME%-server}-XXXXXX")
"$SERVER" --port "$PORT" --bind "$HOST" --daemonize yes --save "" --appendonly no \
  --dir "$DIR" --logfile "$DIR/server.log" --pidfile "$DIR/server.pid"
for _ in $(seq 1 100); do is_ours "$PORT" && break; sleep 0.1; done
is_ours "$PORT" || { echo "on-server: $NAME $VERSION did not answer on $HOST:$PORT (see $DIR/server.log)" >&2; exit 1; }

# A cluster already running there (a contributor's) is used and left running; one started here is stopped.
if ! cluster_script status >/dev/null 2>&1; then STOP_CLUSTER=yes; fi
cluster_script start
for port in $CLUSTER_PORTS; do
  is_ours "$port" || { echo "on-server: the cluster node on $HOST:$port is not $NAME $VERSION" >&2; exit 1; }
done
echo "on-server: $("$SERVER" --version | head -n 1): $HOST:$PORT, cluster on $HOST:${CLUSTER_PORTS// /,}"

(($# > 0)) || set -- npx vitest run --project unit --project integration
COUNTER_REDIS_SERVER="$SERVER" REDIS_URL="redis://$HOST:$PORT" \
  REDIS_CLUSTER_PORTS="$CLUSTER_PORTS" REDIS_CLUSTER_DIR="$CLUSTER_DIR" "$@"
