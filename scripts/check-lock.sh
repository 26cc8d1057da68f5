#!/usr/bin/env bash
# Fails when package-lock.json is out of sync with package.json. `npm ci` installs from a lock whose
# root peer ranges are stale (package.json's `ioredis` raised to ^5.4.1, the lock still ^5.4.0), and
# the next `npm install` rewrites the lock in a user's fresh clone. The lock is put back as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

SAVED=$(mktemp)
trap 'cp "$SAVED" package-lock.json; rm -f "$SAVED"' EXIT
cp package-lock.json "$SAVED"

npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
if ! diff -u "$SAVED" package-lock.json --label 'package-lock.json (committed)' \
  --label 'package-lock.json (as npm install writes it)'; then
  echo "check-lock: package-lock.json is out of sync with package.json (above: what npm install would change)." >&2
  echo "check-lock: run \`npm install\` and commit package-lock.json." >&2
  exit 1
fi
echo "check-lock: package-lock.json matches package.json"
