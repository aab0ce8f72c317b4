#!/usr/bin/env bash
# Builds the node of the local cluster's real-node profile into OUT_DIR:
# kubelet, kube-proxy, metrics-server and CoreDNS (from the module of the
# cluster's components, hack/controlplane/go.mod, whose packages the
# control plane's build has mostly compiled already), containerd with its
# runc shim and ctr, runc and the image registry (pinned in this folder's
# go.mod), and the images the cluster's registry serves (hack/nodeimages; etcd's next minor is the
# control plane's etcd, from CONTROLPLANE_DIR). What is already there is reused; the images are
# rebuilt when hack/nodeimages or the control plane's etcd changes.
#
# Needs root (the profile runs only as root): as root it installs, when
# missing, Debian's libseccomp-dev (for runc's seccomp support), the CNI
# plugins and iptables. Anyone else gets a message and nothing is built.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUT_DIR CONTROLPLANE_DIR}
etcd=${2:?usage: build.sh OUT_DIR CONTROLPLANE_DIR}/etcd

if [[ $(id -u) -ne 0 ]]; then
  echo "Real-node profile: not root, nothing built (its tests skip)."
  exit 0
fi

# Debian packages: build and run-time needs.
missing=()
for pkg in libseccomp-dev containernetworking-plugins iptables; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})) && ! command -v apt-get >/dev/null; then
  echo "Real-node profile: ${missing[*]} missing and no apt-get to install them: nothing built (its tests skip)."
  exit 0
fi
if ((${#missing[@]})); then
  echo "Real-node profile: installing ${missing[*]} with apt-get"
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

mkdir -p "$out"
k8s=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2}' "$repo/hack/controlplane/go.mod")
containerd=$(awk '$1 == "github.com/containerd/containerd/v2" && $2 ~ /^v/ {print $2}' "$here/go.mod")
minor=${k8s#v1.}
minor=${minor%%.*}
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1"
k8s_ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

containerd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd"

# build names… -- dir cgo tags ldflags packages…: one go build of the
# packages (in the module of dir) into $out, each binary under its name,
# skipping those already there. One go build compiles each package once,
# and links one binary while it compiles the next.
build() {
  local names=() name
  while [[ $1 != -- ]]; do names+=("$1"); shift; done
  shift
  local dir=$1 cgo=$2 tags=$3 ldflags=$4
  shift 4
  local pkgs=("$@") todo=() todo_pkgs=() i
  for i in "${!names[@]}"; do
    if [[ -x "$out/${names[$i]}" ]]; then
      echo "${names[$i]}: cached in $out"
    else
      todo+=("${names[$i]}")
      todo_pkgs+=("${pkgs[$i]}")
    fi
  done
  ((${#todo[@]})) || return 0
  echo "${todo[*]}: building"
  local start=$SECONDS tmp="$out/.build-${todo[0]}"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$dir" && CGO_ENABLED=$cgo go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/" "${todo_pkgs[@]}")
  for i in "${!todo[@]}"; do
    # go build names a binary after the last element of its package.
    mv "$tmp/$(basename "${todo_pkgs[$i]}")" "$out/${todo[$i]}"
  done
  rm -rf "$tmp"
  echo "${todo[*]}: built in $((SECONDS - start))s"
}

# The images, keyed by the sources that define them.
images() {
  local sum start
  sum=$({
    find "$repo/hack/nodeimages" -type f \( -name "*.go" -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs cat
    "$etcd" --version
  } | sha256sum | cut -c1-16)
  if [[ -f "$out/images/.source" && $(cat "$out/images/.source") == "$sum" ]]; then
    echo "images: cached in $out/images"
    return
  fi
  echo "images: building from Debian packages (apt-get download), the pause program and etcd"
  start=$SECONDS
  # apt-get download needs the package lists, which a fresh machine may lack.
  apt-cache show nginx memcached >/dev/null 2>&1 || apt-get update -qq
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/pause" ./hack/nodeimages/pause)
  (cd "$repo" && go run ./hack/nodeimages --debs="$out/debs" --pause="$out/pause" --etcd-cache="$out/etcd" --etcd="$etcd" --output="$out/images")
  echo "$sum" >"$out/images/.source"
  echo "images: built in $((SECONDS - start))s"
}

# The groups are independent (each its own module, or its own build
# settings): they build side by side, filling the time one spends linking
# or downloading.
jobs=()
build kubelet kube-proxy -- "$repo/hack/controlplane" 0 "" "$k8s_ldflags" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy &
jobs+=($!)
# The storage tags are containerd's; the registry has no file they select.
build containerd containerd-shim-runc-v2 ctr registry -- "$here" 0 "no_btrfs no_devmapper no_zfs" "$containerd_ldflags" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr github.com/app-operator/app-operator/hack/realnode/registry &
jobs+=($!)
build runc -- "$here" 1 seccomp "-s -w" github.com/opencontainers/runc &
jobs+=($!)
build metrics-server coredns -- "$repo/hack/controlplane" 0 "" "-s -w" \
  sigs.k8s.io/metrics-server/cmd/metrics-server github.com/app-operator/app-operator/hack/controlplane/coredns &
jobs+=($!)
images &
jobs+=($!)
failed=0
for job in "${jobs[@]}"; do
  wait "$job" || failed=1
done
((failed == 0)) || { echo "Real node: a build failed (above)"; exit 1; }
echo "Real node ready in $out"
