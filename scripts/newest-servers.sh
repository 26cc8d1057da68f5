#!/usr/bin/env bash
# Runs the specs and chaos scenarios about what newer servers do on the newest Redis and Valkey that
# Debian has, fetched and run without installing them (scripts/debian-binaries.sh: Redis 8 from
# experimental, Valkey 9 from sid), each with a standalone server and a cluster of its own
# (scripts/on-server.sh):
#   - WAITAOF: claims and changes waiting for the fsync (aof-wait specs: a lease outlasting the wait, a
#     cluster replica's AOF), and scenario 14, kill -9 under `appendfsync everysec`, asserted wherever the
#     server's WAITAOF waits for the fsync;
#   - WAIT resent after a reconnection (these servers count a new connection's writes from 0);
#   - DUMP: a claimed batch read from the payload the server writes, and the fallback (dump-fallback);
#   - the script cache flushed under load (script-cache-flush spec, scenario 16), on Redis 8.
# In CI (CI=true) a server that cannot be fetched fails the run; elsewhere it is skipped, saying so.
# Usage: scripts/newest-servers.sh [redis-8|valkey-9…]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything on Redis 8; on Valkey 9 what differs from Valkey 8 (which test-valkey and chaos-valkey run
# whole): its WAITAOF (still early: the AOF specs that need a correct one skip there, and scenario 14
# records what that costs), its WAIT after a reconnection and its DUMP format.
SPECS_VALKEY=(test/integration/aof-wait.spec.ts test/integration/cluster-replica-wait-reconnect.spec.ts
  test/integration/dump-fallback.spec.ts test/integration/claimed-batch.reader.spec.ts)
SPECS_REDIS=("${SPECS_VALKEY[@]}" test/integration/aof-wait-lease.spec.ts test/integration/cluster-aof-wait.spec.ts
  test/integration/script-cache-flush.spec.ts test/integration/script-loading.spec.ts)
SCENARIOS_VALKEY=(chaos/scenarios/aof-everysec-crash.chaos.ts)
SCENARIOS_REDIS=("${SCENARIOS_VALKEY[@]}" chaos/scenarios/script-cache-flush.chaos.ts)

(($# > 0)) || set -- redis-8 valkey-9
for name in "$@"; do
  if ! bin=$(scripts/debian-binaries.sh "$name"); then
    if [ "${CI:-}" = true ]; then
      echo "newest-servers: $name could not be fetched from Debian; CI runs the suites on it" >&2
      exit 1
    fi
    echo "newest-servers: $name could not be fetched from Debian: skipped (CI=true fails instead)" >&2
    continue
  fi
  server=$bin/${name%-*}-server
  if [ "$name" = redis-8 ]; then
    specs=("${SPECS_REDIS[@]}") scenarios=("${SCENARIOS_REDIS[@]}")
  else
    specs=("${SPECS_VALKEY[@]}") scenarios=("${SCENARIOS_VALKEY[@]}")
  fi
  # One standalone server and one cluster for both runs; the scenarios' results go to
  # chaos/results/latest-<server>-<version>.json.
  scripts/on-server.sh "$server" bash -c \
    'npx vitest run "${@:2:$1}" && npx vitest run --config vitest.chaos.config.ts "${@:$(($1 + 2))}"' \
    _ "${#specs[@]}" "${specs[@]}" "${scenarios[@]}"
done
