#!/usr/bin/env bash
# Fails when a module whose packages both the operator's tests and the
# cluster's components (hack/controlplane/go.mod: etcd, Kubernetes, kwok,
# metrics-server, CoreDNS, Helm) compile is at different versions in the two
# go.mod files. At the same versions, and built with the same settings (the
# Makefile's CGO_ENABLED and -trimpath), those packages are compiled once:
# the tests reuse what the cluster's build compiled. To fix a difference,
# `go get` the higher version in the other module.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

format='{{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go list -deps -test -f "$format" ./... | sort -u >"$work/operator"
(cd hack/controlplane && go list -deps -f "$format" tool ./...) | sort -u >"$work/cluster"
diff=$(join "$work/operator" "$work/cluster" | awk '$2 != $3 {print "  " $1 ": " $2 " in go.mod, " $3 " in hack/controlplane/go.mod"}')
if [[ -n $diff ]]; then
  echo "Modules both the operator's tests and the cluster's components compile, at different versions:"
  echo "$diff"
  exit 1
fi
