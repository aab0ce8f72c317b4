#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok) from source at the versions pinned by
# this folder's go.mod, into OUT_DIR. That module pins every Go component of
# the local cluster (the real node's kubelet, kube-proxy, metrics-server and
# CoreDNS too: hack/realnode/build.sh), so that they build against one set
# of the Kubernetes libraries, compiled once. A binary that is already
# there is reused, so only the first run pays for the build. The parts after
# OUT_DIR pick what is built: kubernetes (etcd and the Kubernetes binaries),
# kwok, or both (the default).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: build.sh OUT_DIR [kubernetes] [kwok]}
shift
parts=" ${*:-kubernetes kwok} "
mkdir -p "$out"

tools=(
  "etcd go.etcd.io/etcd/server/v3"
  "kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler"
  "kubectl k8s.io/kubernetes/cmd/kubectl"
)

# The Kubernetes components report the pinned version (a client such as
# Helm checks a chart's kubeVersion against it), not v0.0.0-master.
k8s=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2}' "$here/go.mod")
etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print substr($2, 2)}' "$here/go.mod")
minor=${k8s#v1.}
minor=${minor%%.*}
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1"
k8s_ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
k8s_ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s -X k8s.io/client-go/pkg/version.gitMajor=1"
k8s_ldflags+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"

# cached reports whether the binary name is in $out and reports the pinned
# version (a binary built from another pin, or before the version was set,
# is built again).
cached() {
  local name=$1 version
  [[ -x "$out/$name" ]] || return 1
  # The whole output first: grep -q stops reading at its match, and a
  # binary still writing would fail the pipe.
  case $name in
  etcd) version=$("$out/$name" --version 2>/dev/null) && grep -qx "etcd Version: $etcd" <<<"$version" ;;
  kube-*) version=$("$out/$name" --version 2>/dev/null) && grep -qF "$k8s" <<<"$version" ;;
  kubectl) version=$("$out/$name" version --client 2>/dev/null) && grep -qF "$k8s" <<<"$version" ;;
  esac
}

# One go build for the Kubernetes binaries and etcd: it compiles each
# package once and links one binary while it compiles the next. kwok
# builds after it, from the packages it compiled (its own linker flags:
# it does not report the Kubernetes version). Linker -X flags naming no
# symbol of a binary (the Kubernetes version, in etcd) are ignored.
names=() pkgs=()
[[ $parts == *" kubernetes "* ]] || tools=()
for entry in "${tools[@]}"; do
  name=${entry%% *}
  if cached "$name"; then
    echo "$name: cached in $out"
  else
    names+=("$name")
    pkgs+=("${entry#* }")
  fi
done
build_kwok() {
  [[ -x "$out/kwok" ]] && { echo "kwok: cached in $out"; return; }
  echo "kwok: building sigs.k8s.io/kwok/cmd/kwok"
  local start=$SECONDS
  (cd "$here" && CGO_ENABLED=0 go build -trimpath "-ldflags=-s -w" -o "$out/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok)
  mv "$out/kwok.tmp" "$out/kwok"
  echo "kwok: built in $((SECONDS - start))s"
}
if ((${#names[@]})); then
  echo "${names[*]}: building (the first build of the control plane takes several minutes)"
  start=$SECONDS
  rm -rf "$out/.build" && mkdir -p "$out/.build"
  (cd "$here" && CGO_ENABLED=0 go build -trimpath "-ldflags=$k8s_ldflags" -o "$out/.build/" "${pkgs[@]}")
  for name in "${names[@]}"; do
    # go build names etcd's binary after its package: server.
    if [[ $name == etcd ]]; then mv "$out/.build/server" "$out/etcd"; else mv "$out/.build/$name" "$out/$name"; fi
  done
  rm -rf "$out/.build"
  echo "${names[*]}: built in $((SECONDS - start))s"
fi
[[ $parts != *" kwok "* ]] || build_kwok

# kwok needs its Stage definitions; they ship inside its module.
if [[ $parts == *" kwok "* && ! -f "$out/kwok-stages.yaml" ]]; then
  dir=$(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  {
    for f in "$dir"/kustomize/stage/node/fast/*.yaml "$dir"/kustomize/stage/node/heartbeat/*.yaml \
      "$dir"/kustomize/stage/pod/fast/*.yaml; do
      [[ $(basename "$f") == kustomization.yaml ]] && continue
      echo "---"
      cat "$f"
    done
  } > "$out/kwok-stages.yaml.tmp"
  mv "$out/kwok-stages.yaml.tmp" "$out/kwok-stages.yaml"
fi
echo "Control plane ready in $out"
