#!/usr/bin/env bash
# Runs every test (make test): builds what each suite needs, and runs the
# suites as soon as what they need is there.
#
# The packages that run on the real node (one real node per machine at a
# time) run one after another in one lane: the real-pods suite, the
# install tests and the demo's test. That lane takes the longest, spending
# most of it waiting for pods; it starts as soon as the control plane, the
# real node and the object store are built. Beside it, on the processor
# time it leaves (hack/background.sh), the other lane builds Helm (for the
# real-node lane's install tests) and kwok, runs the other packages two at
# a time, then builds promtool and runs the package of the alerts' tests and
# the dashboards' check (hack/promtool/dashboards):
# the real-node lane gets the processors first (the pods too: the real
# node's cgroup is beyond the reach of nice). The tests on three nodes run in
# `make test-nodes`, the install from a catalog by OLM in `make test-olm`
# (OLM's build is a set of Kubernetes libraries of its own).
#
# Usage: hack/test.sh (from make test, which passes GO_TEST_FLAGS and
# the tools' paths: HELM, PROMTOOL, OBJECTSTORE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAKE=make
: "${GO_TEST_FLAGS:=-count=1 -timeout=55m}" "${HELM:?}" "${PROMTOOL:?}" "${OBJECTSTORE:?}"
export HELM PROMTOOL OBJECTSTORE
read -r -a flags <<<"$GO_TEST_FLAGS"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The suites' summary lines (such as "bad inputs refused X/X") go to a file
# too, printed at the end: go test shows a passing package's output only
# with -v.
export APP_OPERATOR_TEST_SUMMARY=$work/summary
touch "$APP_OPERATOR_TEST_SUMMARY"

# The modules the first builds need, then, while the control plane builds,
# the others' (see hack/download.sh).
hack/download.sh . hack/controlplane
hack/download.sh hack/realnode hack/objectstore hack/promtool >"$work/download.log" 2>&1 &
# The browser the console's tests drive (hack/chromium.sh), installed
# while the builds run; the lanes wait for it before their first tests.
(hack/chromium.sh >"$work/chromium.log" 2>&1; touch "$work/chromium-done") &

# browser_ready waits for that install to end, and prints what it said.
browser_ready() {
  while [[ ! -e "$work/chromium-done" ]]; do sleep 2; done
  cat "$work/chromium.log"
}

# Every package needs the control plane; build it first. The clusters with
# real pods need no kwok: the other lane builds it.
$MAKE --no-print-directory controlplane CONTROLPLANE_PARTS=kubernetes

# The packages that start a real node; the first needs only the node and
# the object store, the others Helm too.
realnode_packages=(./test/realpods ./test/install ./hack/localcluster)
# Left to make test-olm.
olm_test='^TestOLMInstallUpgradeUninstall$'
# The package that runs promtool (the alerts' tests).
promtool_package=./test/manifests

realnode_lane() {
  local rc=0
  # Waits for the download begun above, if it has not ended.
  hack/download.sh hack/realnode hack/objectstore || return
  $MAKE --no-print-directory -j2 -Otarget realnode objectstore CONTROLPLANE_PARTS=kubernetes || return
  browser_ready
  echo "test: the real-node packages started; their output follows the other packages'"
  go test "${flags[@]}" "${realnode_packages[0]}" || rc=$?
  while [[ ! -e "$work/tools-built" ]]; do
    kill -0 "$others" 2>/dev/null || return 1
    sleep 5
  done
  go test "${flags[@]}" -p 1 -skip "$olm_test" "${realnode_packages[@]:1}" || rc=$?
  return "$rc"
}

others_lane() {
  # Below the real-node lane's priority: that lane is the longest, and
  # its cells wait on the operator; this one fills the time it leaves.
  hack/background.sh --pid "$BASHPID"
  # Helm first: the real-node lane's install tests wait for it. Then kwok
  # (e2e, chaos and the benchmark's clusters), from the packages the
  # control plane compiled.
  $MAKE --no-print-directory helm || return
  touch "$work/tools-built"
  $MAKE --no-print-directory controlplane || return
  # Two packages at a time: alone, they wait on their clusters most of
  # the time (the machine was busy 16 % of a minute that ran only them).
  # promtool, whose build is the longest here, only for the package that
  # runs it, last.
  local skip rc=0
  skip=$(printf '%s$|' "${realnode_packages[@]#.}" "${promtool_package#.}")
  mapfile -t packages < <(go list ./... | grep -Ev "(${skip%|})")
  browser_ready
  go test "${flags[@]}" -p 2 "${packages[@]}" || rc=$?
  hack/download.sh hack/promtool && $MAKE --no-print-directory promtool || return
  go test "${flags[@]}" "$promtool_package" || rc=$?
  # The dashboards' queries, parsed by the same Prometheus module.
  (cd hack/promtool && go test "${flags[@]}" ./dashboards) || rc=$?
  return "$rc"
}

others_lane &
others=$!
status=0
realnode_lane >"$work/realnode.log" 2>&1 || status=$?
wait "$others" || status=$?
cat "$work/realnode.log"
cat "$APP_OPERATOR_TEST_SUMMARY"
exit "$status"
