#!/usr/bin/env bash
# Writes the golden DUMP payloads of test/fixtures/dumps/ from real servers (see the generator's header,
# test/fixtures/dumps/make-dump-fixtures.ts). Each binary runs on a loopback port from 6400 and is
# stopped afterwards; no binary or source is kept in the repository.
# Usage: scripts/make-dump-fixtures.sh [[version=]server-binary…]   (default: redis-server valkey-server)
# The committed files came from Debian's redis-server 7.0.15 and valkey-server 8.0.1 (bookworm and its
# backports), Redis 8.6 and Valkey 9.1 from Debian experimental and sid (scripts/debian-binaries.sh
# redis-8, valkey-9), and two builds of development branches:
#   scripts/make-dump-fixtures.sh "$(scripts/debian-binaries.sh redis-8)/redis-server" \
#     "$(scripts/debian-binaries.sh valkey-9)/valkey-server" 8.0-m01=/work/build/redis/src/redis-server
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
