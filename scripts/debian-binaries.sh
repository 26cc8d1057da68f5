#!/usr/bin/env bash
# Brings a newer server than Debian 12 packages onto this machine without installing
# anything: the package and the libraries it needs are downloaded from a newer Debian suite with a
# private apt state, unpacked into a folder of their own, and run through that suite's own dynamic
# loader, so the machine's libc and packages stay as they are. Prints the folder of the wrappers.
#   scripts/debian-binaries.sh redis-8     Redis 8.x from experimental (8.6 when this was written)
#   scripts/debian-binaries.sh valkey-9    Valkey 9.x from sid
# (Node.js majors come from the npm registry instead: scripts/official-node.sh.)
# The folder: $COUNTER_DEBIAN_DIR/<name> (default ~/.cache/nestjs-counter/debian/<name>), made once
# and reused; delete it to fetch again. Needs apt-get and the Debian mirror, no root.
set -euo pipefail

NAME=${1:?usage: scripts/debian-binaries.sh redis-8|valkey-9}
case "$NAME" in
  redis-8) SUITES="sid experimental" PACKAGES="redis-server/experimental redis-tools/experimental"
    EXECUTABLES="redis-server redis-cli" MAJOR='^Redis server v=8\.' ;;
  valkey-9) SUITES="sid" PACKAGES="valkey-server valkey-tools"
    EXECUTABLES="valkey-server valkey-cli" MAJOR='^Valkey server v=9\.' ;;
  *) echo "debian-binaries: unknown name $NAME (redis-8 or valkey-9)" >&2; exit 2 ;;
esac

BASE=${COUNTER_DEBIAN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nestjs-counter/debian}
DIR=$BASE/$NAME
BIN=$DIR/bin
FIRST=${EXECUTABLES%% *}

# Already made and working: print it again.
if [ -x "$BIN/$FIRST" ] && "$BIN/$FIRST" --version 2>/dev/null | grep -qE "$MAJOR"; then
  echo "$BIN"
  exit 0
fi
command -v apt-get >/dev/null || { echo "debian-binaries: apt-get is needed" >&2; exit 1; }

rm -rf "$DIR"
mkdir -p "$DIR/apt/sources" "$DIR/apt/lists/partial" "$DIR/apt/cache/archives/partial" "$DIR/debs" "$DIR/root" "$BIN"
touch "$DIR/apt/status"
cat >"$DIR/apt/sources/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $SUITES
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
APT=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$DIR/apt/sources"
  -o "Dir::State::Lists=$DIR/apt/lists" -o "Dir::State::Status=$DIR/apt/status"
  -o "Dir::Cache=$DIR/apt/cache" -o APT::Sandbox::User=root -o Debug::NoLocking=1)

echo "debian-binaries: fetching $PACKAGES from Debian $SUITES into $DIR" >&2
apt-get "${APT[@]}" -qq update >&2
# The packages' runtime libraries (lib*, zlib1g), from the same suite: their maintainer-script tools
# (perl, systemd, adduser) are never run here.
# shellcheck disable=SC2086
LIBRARIES=$(apt-cache "${APT[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances $PACKAGES 2>/dev/null |
  grep -E '^(lib|zlib)' | grep -vE '^(libperl|libpam|libsemanage|libdebian-installer|libdebconf)' | sort -u)
# shellcheck disable=SC2086
(cd "$DIR/debs" && apt-get "${APT[@]}" -qq download $PACKAGES $LIBRARIES >&2)
for deb in "$DIR"/debs/*.deb; do dpkg-deb -x "$deb" "$DIR/root"; done

LIB=$DIR/root/usr/lib/x86_64-linux-gnu
LOADER=$LIB/ld-linux-x86-64.so.2
[ -x "$LOADER" ] || { echo "debian-binaries: no dynamic loader in the fetched libc6 ($LOADER)" >&2; exit 1; }
for name in $EXECUTABLES; do
  target=$DIR/root/usr/bin/$name
  [ -e "$target" ] || { echo "debian-binaries: $target is not in the fetched packages" >&2; exit 1; }
  # exec keeps the wrapper's process id, so a test that kills the "server" kills the server. The
  # program path, not the loader's, is argv[0]: Redis picks server or check-rdb mode from it.
  cat >"$BIN/$name" <<EOF
#!/bin/sh
exec "$LOADER" --library-path "$LIB:$DIR/root/lib/x86_64-linux-gnu" "$target" "\$@"
EOF
  chmod +x "$BIN/$name"
done
"$BIN/$FIRST" --version | head -n 1 | grep -E "$MAJOR" >&2 ||
  { echo "debian-binaries: $BIN/$FIRST is not the expected version" >&2; exit 1; }
echo "$BIN"
