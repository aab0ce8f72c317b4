#!/usr/bin/env bash
# Downloads what the project's Go modules require before anything is
# built, trying each module's set up to three times (hack/retry.sh): a build
# that downloads as it goes fails at the first refused or timed-out fetch
# from the module proxy, and a fresh machine fetches about 600 MB. The
# modules download side by side; on a machine that has them, in a second.
#
# Usage: hack/download.sh [DIR...] (the folders of the go.mod files; every
# one that make test and make verify build from when none is given).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

dirs=("$@")
((${#dirs[@]})) || dirs=(. hack/controlplane hack/realnode hack/objectstore hack/promtool)

pids=()
for dir in "${dirs[@]}"; do
  (cd "$dir" && "$root/hack/retry.sh" go mod download) &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
