#!/usr/bin/env bash
# Builds the node of the local cluster's real-node profile into OUT_DIR:
# kubelet and kube-proxy (from the Kubernetes module pinned in
# hack/controlplane/go.mod), containerd with its runc shim and ctr, runc and
# the image registry (pinned in this folder's go.mod), metrics-server (pinned
# in metrics-server/go.mod), CoreDNS (pinned in coredns/go.mod), and the images the
# cluster's registry serves (hack/nodeimages). What is already there is
# reused; the images are rebuilt when hack/nodeimages changes.
#
# Needs root (the profile runs only as root): as root it installs, when
# missing, Debian's libseccomp-dev (for runc's seccomp support), the CNI
# plugins and iptables. Anyone else gets a message and nothing is built.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUT_DIR}

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

# name, module folder, cgo, tags, ldflags, package
tools=(
  "kubelet|$repo/hack/controlplane|0||$k8s_ldflags|k8s.io/kubernetes/cmd/kubelet"
  "kube-proxy|$repo/hack/controlplane|0||$k8s_ldflags|k8s.io/kubernetes/cmd/kube-proxy"
  "containerd|$here|0|no_btrfs no_devmapper no_zfs|-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd|github.com/containerd/containerd/v2/cmd/containerd"
  "containerd-shim-runc-v2|$here|0|no_btrfs no_devmapper no_zfs|-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
  "ctr|$here|0|no_btrfs no_devmapper no_zfs|-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd|github.com/containerd/containerd/v2/cmd/ctr"
  "runc|$here|1|seccomp|-s -w|github.com/opencontainers/runc"
  "registry|$here|0||-s -w|github.com/distribution/distribution/v3/cmd/registry"
  "metrics-server|$here/metrics-server|0||-s -w|sigs.k8s.io/metrics-server/cmd/metrics-server"
  "coredns|$here/coredns|0||-s -w|github.com/app-operator/app-operator/hack/realnode/coredns"
)
n=$((${#tools[@]} + 1))
i=0
for entry in "${tools[@]}"; do
  i=$((i + 1))
  IFS='|' read -r name dir cgo tags ldflags pkg <<<"$entry"
  if [[ -x "$out/$name" ]]; then
    echo "[$i/$n] $name: cached in $out"
    continue
  fi
  echo "[$i/$n] $name: building $pkg"
  start=$SECONDS
  (cd "$dir" && CGO_ENABLED=$cgo go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "[$i/$n] $name: built in $((SECONDS - start))s"
done

# The images, keyed by the sources that define them.
sum=$(find "$repo/hack/nodeimages" -type f \( -name "*.go" -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
if [[ -f "$out/images/.source" && $(cat "$out/images/.source") == "$sum" ]]; then
  echo "[$n/$n] images: cached in $out/images"
else
  echo "[$n/$n] images: building from Debian packages (apt-get download), the pause program and etcd"
  start=$SECONDS
  # apt-get download needs the package lists, which a fresh machine may lack.
  apt-cache show nginx memcached >/dev/null 2>&1 || apt-get update -qq
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/pause" ./hack/nodeimages/pause)
  (cd "$repo" && go run ./hack/nodeimages --debs="$out/debs" --pause="$out/pause" --etcd-cache="$out/etcd" --output="$out/images")
  echo "$sum" >"$out/images/.source"
  echo "[$n/$n] images: built in $((SECONDS - start))s"
fi
echo "Real node ready in $out"
