#!/usr/bin/env bash
# Builds OLM v1, operator-controller and catalogd, from source at the version
# pinned by this folder's go.mod, into OUT_DIR, and copies the CRDs of its
# APIs (ClusterCatalog, ClusterExtension) from the module beside them. What
# is already there is reused, so only the first run pays for the build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
module=github.com/operator-framework/operator-controller
version=$(awk -v m="$module" '$1 == m && $2 ~ /^v/ {print $2}' "$here/go.mod")
ldflags="-s -w -X $module/internal/shared/version.version=$version"

# One go build for both: it compiles their shared packages once.
names=() pkgs=()
for name in operator-controller catalogd; do
  if [[ -x "$out/$name" ]]; then
    echo "OLM: $name cached in $out"
  else
    names+=("$name")
    pkgs+=("$module/cmd/$name")
  fi
done
if ((${#names[@]})); then
  echo "OLM: building ${names[*]} $version"
  start=$SECONDS
  rm -rf "$out/.build" && mkdir -p "$out/.build"
  # containers_image_openpgp: image signatures checked in Go, without gpgme.
  (cd "$here" && CGO_ENABLED=0 go build -trimpath -tags containers_image_openpgp -ldflags "$ldflags" -o "$out/.build/" "${pkgs[@]}")
  for name in "${names[@]}"; do mv "$out/.build/$name" "$out/$name"; done
  rm -rf "$out/.build"
  echo "OLM: ${names[*]} built in $((SECONDS - start))s"
fi

dir=$(cd "$here" && go list -m -f '{{.Dir}}' "$module")
mkdir -p "$out/crds"
cp "$dir/config/base/catalogd/crd/bases/olm.operatorframework.io_clustercatalogs.yaml" \
  "$dir/config/base/operator-controller/crd/bases/olm.operatorframework.io_clusterextensions.yaml" "$out/crds/"
chmod 644 "$out/crds/"*.yaml
echo "OLM ready in $out"
