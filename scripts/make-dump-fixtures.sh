#!/usr/bin/env bash
# Writes the golden DUMP payloads of test/fixtures/dumps/ from real servers (see the generator's header,
# test/fixtures/dumps/make-dump-fixtures.ts). Give the server binaries oldest first: the newest of each
# server is the one a derived format (Valkey's RDB 80, Redis's RDB 13) is made from. Each runs on a
# loopback port from 6400 and is stopped afterwards; no binary or source is kept in the repository.
# Usage: scripts/make-dump-fixtures.sh [[version=]server-binary…]   (default: redis-server valkey-server)
# e.g. scripts/make-dump-fixtures.sh redis-server valkey-server 8.0-m01=/work/build/redis/src/redis-server
set -euo pipefail
cd "$(dirname "$0")/.."

binaries=("$@")
if [[ ${#binaries[@]} -eq 0 ]]; then binaries=(redis-server valkey-server); fi

out=test/fixtures/dumps/dist
rm -rf "$out"
npx tsc --outDir "$out" --rootDir . --target ES2022 --module NodeNext --moduleResolution NodeNext \
  --strict --skipLibCheck --types node test/fixtures/dumps/make-dump-fixtures.ts
node "$out/test/fixtures/dumps/make-dump-fixtures.js" test/fixtures/dumps "${binaries[@]}"
rm -rf "$out"
npx prettier --log-level warn --write 'test/fixtures/dumps/*.json'
