#!/usr/bin/env bash
# Runs a command with the suites pointed at Valkey (scripts/on-server.sh valkey-server): a standalone
# valkey-server, a Valkey cluster on 127.0.0.1:7100-7105 (VALKEY_CLUSTER_PORTS moves it), and
# COUNTER_REDIS_SERVER=valkey-server. scripts/ensure-valkey.sh installs Valkey 8 on Debian 12.
# Usage: scripts/on-valkey.sh [command…]   (default: npx vitest run --project unit --project integration)
set -euo pipefail
ON_SERVER_CLUSTER_DIR=${VALKEY_CLUSTER_DIR:-${TMPDIR:-/tmp}/nestjs-counter-valkey-cluster} \
  exec "$(dirname "$0")/on-server.sh" valkey-server "$@"
