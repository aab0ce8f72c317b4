#!/usr/bin/env bash
# Installs Debian's chromium, the browser the console's tests drive
# headless, when the machine has none and can install it (root, apt-get).
# Where it cannot, it says why and succeeds: those tests then skip with a
# message, as they do where Chromium cannot start.
#
# Usage: hack/chromium.sh
set -uo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed, and this machine cannot install it (needs root and apt-get); the browser tests skip" >&2
  exit 0
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive
if ! hack/retry.sh apt-get update -qq || ! hack/retry.sh apt-get install -y -qq chromium; then
  echo "chromium: apt-get could not install it; the browser tests skip" >&2
fi
exit 0
