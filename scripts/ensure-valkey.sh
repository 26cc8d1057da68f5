#!/usr/bin/env bash
# Installs Valkey (valkey-server and valkey-cli) when valkey-server is missing, for the suite's runs on
# Valkey (.ci/run, CONTRIBUTING.md). Debian 12 has it only in bookworm-backports (8.0.x): the suite is
# added to apt's Debian source if it is not there yet, and the package installed from it. Needs apt-get
# and root (or sudo). Exits non-zero when Valkey is still missing; .ci/run decides whether that fails
# the run (it does in CI).
set -euo pipefail

if command -v valkey-server >/dev/null && command -v valkey-cli >/dev/null; then
  echo "ensure-valkey: $(valkey-server --version | head -n 1)"
  exit 0
fi
command -v apt-get >/dev/null || { echo "ensure-valkey: valkey-server is missing and there is no apt-get" >&2; exit 1; }
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "ensure-valkey: installing valkey-server needs root or sudo" >&2; exit 1; }
  SUDO=sudo
fi

# shellcheck source=/dev/null
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$CODENAME" ] || { echo "ensure-valkey: /etc/os-release names no Debian release" >&2; exit 1; }
BACKPORTS=$CODENAME-backports
DEB822=/etc/apt/sources.list.d/debian.sources
CLASSIC=/etc/apt/sources.list

# Whether some apt source already lists the backports suite (run twice, this script adds it once).
has_backports() {
  grep -qsE "^[[:space:]]*(Suites:.*[[:space:]]|deb[[:space:]].*[[:space:]])$BACKPORTS([[:space:]]|$)" \
    "$DEB822" "$CLASSIC" /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
}

# The deb822 stanza of deb.debian.org/debian (not debian-security) gets the suite on its Suites: line.
add_to_deb822() {
  local updated
  updated=$(mktemp)
  awk -v suite="$BACKPORTS" '
    BEGIN { RS = "" }
    {
      n = split($0, lines, "\n")
      debian = 0
      for (i = 1; i <= n; i++)
        if (lines[i] ~ /^URIs:/ && lines[i] ~ /deb\.debian\.org\/debian\/?([ \t]|$)/) debian = 1
      out = ""
      for (i = 1; i <= n; i++) {
        if (debian && lines[i] ~ /^Suites:/) lines[i] = lines[i] " " suite
        out = out (i > 1 ? "\n" : "") lines[i]
      }
      printf "%s%s\n", (NR > 1 ? "\n" : ""), out
    }' "$DEB822" >"$updated"
  if cmp -s "$DEB822" "$updated"; then
    rm -f "$updated"
    return 1
  fi
  $SUDO cp "$updated" "$DEB822"
  rm -f "$updated"
}

# A classic sources.list: a line for the suite, with the URI and components of the release's own line.
add_to_classic() {
  local line
  line=$(grep -sE "^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?https?://deb\.debian\.org/debian/?[[:space:]]+$CODENAME[[:space:]]" "$CLASSIC" | head -n 1)
  [ -n "$line" ] || return 1
  echo "${line/ $CODENAME / $BACKPORTS }" | $SUDO tee -a "$CLASSIC" >/dev/null
}

if ! has_backports; then
  if [ -f "$DEB822" ] && add_to_deb822; then
    echo "ensure-valkey: added $BACKPORTS to $DEB822"
  elif [ -f "$CLASSIC" ] && add_to_classic; then
    echo "ensure-valkey: added $BACKPORTS to $CLASSIC"
  else
    echo "ensure-valkey: no deb.debian.org/debian source in $DEB822 or $CLASSIC to add $BACKPORTS to" >&2
    exit 1
  fi
fi
echo "ensure-valkey: installing valkey-server from $BACKPORTS with apt-get"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t "$BACKPORTS" valkey-server >/dev/null
command -v valkey-server >/dev/null && command -v valkey-cli >/dev/null ||
  { echo "ensure-valkey: apt-get installed valkey-server, but valkey-server or valkey-cli is missing" >&2; exit 1; }
echo "ensure-valkey: installed $(valkey-server --version | head -n 1)"
