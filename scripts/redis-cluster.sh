#!/usr/bin/env bash
# A local Redis Cluster for tests: three masters and three replicas on 127.0.0.1:7000-7005, each node
# with its own directory under a temporary folder. No persistence: the nodes are throwaway.
#
#   scripts/redis-cluster.sh start    start the nodes (if not running), join them, wait for cluster_state:ok
#   scripts/redis-cluster.sh stop     shut the nodes down and remove their directories
#   scripts/redis-cluster.sh status   print cluster_state and the nodes
#
# REDIS_CLUSTER_DIR overrides the folder (default: $TMPDIR/nestjs-counter-cluster), REDIS_CLUSTER_PORTS
# the six ports (default: "7000 7001 7002 7003 7004 7005"; test/integration/cluster-script.spec.ts runs a
# cluster of its own this way, beside the tests' one). COUNTER_REDIS_SERVER names the server binary
# (default redis-server; valkey-server runs the cluster on Valkey), COUNTER_REDIS_CLI its client (default:
# the server's name with -cli for -server).
#
# support/local-cluster.ts runs this script too (for `npm test`, chaos and bench), so the cluster is made
# one way. It stays a shell script: CI runs it before `npm ci`, with nothing but redis-server and redis-cli.
set -euo pipefail

read -r -a PORTS <<<"${REDIS_CLUSTER_PORTS:-7000 7001 7002 7003 7004 7005}"
if [ "${#PORTS[@]}" -ne 6 ]; then
  echo "redis-cluster: REDIS_CLUSTER_PORTS needs six ports (three masters, three replicas)" >&2
  exit 2
fi
SERVER=${COUNTER_REDIS_SERVER:-redis-server}
CLI=${COUNTER_REDIS_CLI:-${SERVER%-server}-cli}
HOST=127.0.0.1
DIR=${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/nestjs-counter-cluster}
# Short enough that a killed master fails over within a chaos scenario, long enough not to flap on a
# busy 2-core machine.
NODE_TIMEOUT_MS=${REDIS_CLUSTER_NODE_TIMEOUT_MS:-3000}

node_up() { "$CLI" -h "$HOST" -p "$1" ping 2>/dev/null | grep -q PONG; }
cluster_ok() { "$CLI" -h "$HOST" -p "${PORTS[0]}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }
# Every node must agree, or a client that asks a slow node for the slot map can still be refused.
all_nodes_ok() {
  for port in "${PORTS[@]}"; do
    "$CLI" -h "$HOST" -p "$port" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || return 1
  done
}

# The replicas are attached a moment after cluster_state:ok, and CLUSTER SLOTS lists them only after
# their first sync (several seconds more). Clients learn the replicas from CLUSTER SLOTS, and a claim
# waits for the replicas it knows of, so the cluster is ready when all six nodes are listed there.
replicas_attached() {
  [ "$("$CLI" -h "$HOST" -p "${PORTS[0]}" cluster nodes 2>/dev/null | grep -c ' slave ')" -eq 3 ] &&
    [ "$("$CLI" -h "$HOST" -p "${PORTS[0]}" cluster slots 2>/dev/null | grep -cxE "$(IFS='|'; echo "${PORTS[*]}")")" -eq 6 ]
}

wait_until() { # seconds, description, command...
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  echo "redis-cluster: $what not reached within ${seconds}s" >&2
  return 1
}

healthy() { cluster_ok && all_nodes_ok && replicas_attached; }
any_node_up() {
  for port in "${PORTS[@]}"; do node_up "$port" && return 0; done
  return 1
}

start() {
  if healthy; then
    echo "redis-cluster: already running on ${HOST}:${PORTS[0]}-${PORTS[-1]}"
    return 0
  fi
  # Nodes left over from an earlier run that never finished (a killed master, a half-made cluster)
  # cannot join a new cluster: give a failover in progress time to finish, then start from scratch.
  if any_node_up; then
    if wait_until 20 "the running nodes to recover" healthy 2>/dev/null; then
      echo "redis-cluster: already running on ${HOST}:${PORTS[0]}-${PORTS[-1]}"
      return 0
    fi
    echo "redis-cluster: nodes on ${HOST}:${PORTS[0]}-${PORTS[-1]} are not a healthy cluster; restarting them"
    stop >/dev/null
  fi
  mkdir -p "$DIR"
  for port in "${PORTS[@]}"; do
    if node_up "$port"; then continue; fi
    # Start from an empty directory, not just without nodes.conf: a replica keeps its last full sync
    # as dump.rdb even with --save "", and a node that loads one left by a run that never reached
    # `stop` (killed, or its machine restored from a snapshot) holds keys, so `--cluster create`
    # refuses it as "not empty".
    rm -rf "${DIR:?}/$port"
    mkdir -p "$DIR/$port"
    "$SERVER" --port "$port" --bind "$HOST" --daemonize yes \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$NODE_TIMEOUT_MS" \
      --dir "$DIR/$port" --logfile "$DIR/$port/redis.log" --pidfile "$DIR/$port/redis.pid" \
      --save "" --appendonly no
  done
  for port in "${PORTS[@]}"; do wait_until 10 "node $port answering" node_up "$port"; done
  if ! cluster_ok; then
    local nodes=()
    for port in "${PORTS[@]}"; do nodes+=("$HOST:$port"); done
    if ! "$CLI" --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1; then
      echo "redis-cluster: creating the cluster failed:" >&2
      cat "$DIR/create.log" >&2
      return 1
    fi
  fi
  wait_until 30 "cluster_state:ok on every node" all_nodes_ok
  wait_until 60 "three replicas attached and listed in CLUSTER SLOTS" replicas_attached
  echo "redis-cluster: up on ${HOST}:${PORTS[0]}-${PORTS[-1]} (directory $DIR)"
}

stop() {
  for port in "${PORTS[@]}"; do
    "$CLI" -h "$HOST" -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  rm -rf "$DIR"
  echo "redis-cluster: stopped"
}

status() {
  "$CLI" -h "$HOST" -p "${PORTS[0]}" cluster info | grep cluster_state
  "$CLI" -h "$HOST" -p "${PORTS[0]}" cluster nodes
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
