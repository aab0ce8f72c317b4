#!/usr/bin/env bash
# Runs a command that fetches from the Go module proxy up to three times:
# one refused or timed-out fetch fails a whole build on a fresh machine.
#
# Usage: hack/retry.sh COMMAND [ARG...]
set -uo pipefail

for attempt in 1 2 3; do
  "$@" && exit 0
  ((attempt < 3)) || break
  echo "retry: '$*' failed (attempt $attempt of 3); again in $((attempt * 15))s" >&2
  sleep $((attempt * 15))
done
exit 1
