#!/usr/bin/env bash
# Installs Debian's chromium for `npm run test:browser` when /usr/bin/chromium is missing. Needs apt-get
# and root (or sudo). The browser test runs it through puppeteer-core, which downloads no browser.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  echo "ensure-chromium: $CHROMIUM is installed"
  exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "ensure-chromium: installing chromium needs root or sudo" >&2; exit 1; }
  SUDO=sudo
fi
echo "ensure-chromium: installing chromium with apt-get"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "ensure-chromium: apt-get installed chromium, but $CHROMIUM is missing" >&2; exit 1; }
echo "ensure-chromium: installed $CHROMIUM"
