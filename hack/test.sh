#!/usr/bin/env bash
# Runs every test (make test): builds what each suite needs, and runs the
# suites as soon as what they need is there.
#
# The real-pods suite (test/realpods) takes the longest, and spends most of
# it waiting for pods; it starts as soon as the control plane, the real
# node and the object store are built. Beside it, one lane builds the tools
# the other packages need (Helm, promtool, OLM), then runs those packages
# one at a time: the real-pods suite never shares the machine with more
# than one other test package. The tests on three nodes run in
# `make test-nodes`.
#
# Usage: hack/test.sh (from make test, which passes GO_TEST_FLAGS and
# the tools' paths: HELM, PROMTOOL, WEED).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAKE=make
: "${GO_TEST_FLAGS:=-count=1 -timeout=40m}" "${HELM:?}" "${PROMTOOL:?}" "${WEED:?}"
export HELM PROMTOOL WEED
read -r -a flags <<<"$GO_TEST_FLAGS"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The suites' summary lines (such as "bad inputs refused X/X") go to a file
# too, printed at the end: go test shows a passing package's output only
# with -v.
export APP_OPERATOR_TEST_SUMMARY=$work/summary
touch "$APP_OPERATOR_TEST_SUMMARY"

# Every package needs the control plane; build it first.
$MAKE --no-print-directory controlplane

realpods_lane() {
  $MAKE --no-print-directory realnode seaweedfs
  touch "$work/realnode-built"
  echo "test: the real-pods suite started; its output follows the other packages'"
  go test "${flags[@]}" ./test/realpods
}

others_lane() {
  $MAKE --no-print-directory helm promtool olm
  # test/install runs on the real node: wait for it to be built.
  while [[ ! -e "$work/realnode-built" ]]; do
    kill -0 "$realpods" 2>/dev/null || return 1
    sleep 5
  done
  mapfile -t packages < <(go list ./... | grep -v '/test/realpods$')
  go test "${flags[@]}" -p 1 "${packages[@]}"
}

realpods_lane >"$work/realpods.log" 2>&1 &
realpods=$!
status=0
others_lane || status=$?
wait "$realpods" || status=$?
cat "$work/realpods.log"
cat "$APP_OPERATOR_TEST_SUMMARY"
exit "$status"
