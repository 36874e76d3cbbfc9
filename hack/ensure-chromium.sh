#!/usr/bin/env bash
# Installs Debian's headless Chromium for the HTML report's browser test when
# it is missing. Needs root (apt-get), as on CI and the development machines.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium is missing and this is not root: install Debian's chromium package (apt-get install chromium), or run the unit tests with 'make unit-test'" >&2
  exit 1
fi
echo "installing chromium (Debian package) for the HTML report's browser test"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
