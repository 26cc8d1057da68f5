#!/usr/bin/env bash
# Runs a command (default: npm test) on another Node.js major, e.g. 22, the newest stack's (Nest 12 pulls
# file-type 22, which declares node >=22): the official build first on the PATH (scripts/official-node.sh,
# from the npm registry), with better-sqlite3's addon built for it swapped in for the command and the
# checkout's own put back afterwards, so the other stages keep the machine's Node. The addon is built
# once per better-sqlite3 version (about a minute of CPU) and kept beside that Node.
# Usage: scripts/on-node.sh <major> [command…]
set -euo pipefail
cd "$(dirname "$0")/.."

MAJOR=${1:?usage: scripts/on-node.sh <major> [command…]}
shift
BIN=$(scripts/official-node.sh "$MAJOR")
export PATH="$BIN:$PATH"

PACKAGE=node_modules/better-sqlite3
ADDON=$PACKAGE/build/Release/better_sqlite3.node
[ -e "$ADDON" ] || { echo "on-node: $ADDON is missing: run npm ci first" >&2; exit 1; }
VERSION=$(node -p "require('./$PACKAGE/package.json').version")
CACHED=$(dirname "$BIN")/addons/better-sqlite3-$VERSION-abi$(node -p process.versions.modules).node

if [ ! -e "$CACHED" ]; then
  echo "on-node: building better-sqlite3 $VERSION for Node $(node --version) (once)" >&2
  work=$(mktemp -d)
  # A copy of the package, so a failed build leaves the checkout's addon as it was.
  (cd "$PACKAGE" && tar --exclude=./build -cf - .) | (cd "$work" && tar -xf -)
  (cd "$work" && npm_config_nodedir=$(dirname "$BIN") npm run --silent build-release >"$work.log" 2>&1) ||
    { tail -n 30 "$work.log" >&2; echo "on-node: the build failed (log: $work.log)" >&2; exit 1; }
  mkdir -p "$(dirname "$CACHED")"
  cp "$work/build/Release/better_sqlite3.node" "$CACHED.partial" && mv "$CACHED.partial" "$CACHED"
  rm -rf "$work" "$work.log"
fi

SAVED=$(mktemp)
cp "$ADDON" "$SAVED"
trap 'cp "$SAVED" "$ADDON"; rm -f "$SAVED"' EXIT
cp "$CACHED" "$ADDON"
echo "on-node: $(command -v node) $(node --version)" >&2
(($# > 0)) || set -- npm test
"$@"
