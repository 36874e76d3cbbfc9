#!/usr/bin/env bash
# Builds the parts of the local cluster's real node into _output/bin: the
# kubelet (module hack/kube, the control plane's release), containerd, its
# runc shim and ctr (module hack/containerd, static), the pause program and
# node-images.tar, the images the node runs (a static busybox and pause, built
# without a container engine by hack/image/nodeimages). Go sources come from
# the Go module proxy only; runc, the CNI plugins and busybox are Debian
# packages that hack/ensure-node-packages.sh installs first.
#
# The build is skipped when a stamp file (.stamp-node, apart from the control
# plane's .stamp, so that neither forces the other's rebuild) holds the hash
# of the modules' go.{mod,sum}, the image sources, busybox, this script and
# hack/build-lib.sh, and every output exists.
#
# Environment:
#   PODTRACE_CLUSTER_BIN  output directory (default: <repo>/_output/bin)
#   FORCE=1               rebuild even if the stamp matches
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${PODTRACE_CLUSTER_BIN:-${ROOT}/_output/bin}
LOGS=${BIN}/.build-logs
STAMP=${BIN}/.stamp-node
SCRIPT=hack/build-node.sh
BUSYBOX=/bin/busybox

OUTPUTS=(kubelet containerd containerd-shim-runc-v2 ctr pause node-images.tar)

if [[ "$(uname -s)" != Linux || "$(id -u)" != 0 ]]; then
  # A real node needs Linux and root: its tests skip, and say so.
  echo "not building the real node's parts: a real node needs Linux and root (this is $(uname -s), uid $(id -u)); the tests that need one skip"
  exit 0
fi
"${ROOT}/hack/ensure-node-packages.sh"

stamp() {
  (
    cd "${ROOT}"
    sha256sum hack/kube/go.mod hack/kube/go.sum hack/containerd/go.mod hack/containerd/go.sum \
      hack/image/go.mod hack/image/go.sum hack/image/pause/*.go hack/image/nodeimages/*.go \
      hack/build-node.sh hack/build-lib.sh "${BUSYBOX}"
  ) | sha256sum | cut -d' ' -f1
}

want=$(stamp)
if [[ "${FORCE:-}" != 1 && -f "${STAMP}" && "$(cat "${STAMP}")" == "${want}" ]]; then
  missing=0
  for b in "${OUTPUTS[@]}"; do
    [[ -f "${BIN}/${b}" ]] || missing=1
  done
  if [[ ${missing} == 0 ]]; then
    echo "real node parts in ${BIN#"${ROOT}/"} are up to date (${OUTPUTS[*]})"
    exit 0
  fi
fi

mkdir -p "${BIN}" "${LOGS}"
rm -f "${STAMP}"
# shellcheck source=build-lib.sh
source "${ROOT}/hack/build-lib.sh"
kube_ldflags

total=${SECONDS}
echo "building the real node's parts (kubelet ${KUBE_VERSION}, containerd, images) into ${BIN#"${ROOT}/"}"
echo "(1.5 minutes on 2 cores with a cold Go build cache, up to 10 on a busy machine, most of it containerd: the kubelet shares its packages with the control plane)"
build kubelet hack/kube k8s.io/kubernetes/cmd/kubelet "${KUBE_LDFLAGS}"

# containerd as its release builds it without cgo: no btrfs, devmapper or zfs
# snapshotters (overlayfs and native are enough).
CTR_VERSION=$(cd "${ROOT}/hack/containerd" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
CTR_LDFLAGS="-s -w -X github.com/containerd/containerd/v2/version.Version=${CTR_VERSION}"
export CGO_ENABLED=0
for b in containerd containerd-shim-runc-v2 ctr; do
  build "${b}" hack/containerd "github.com/containerd/containerd/v2/cmd/${b}" "${CTR_LDFLAGS}" -tags "no_btrfs no_devmapper no_zfs"
done

build pause hack/image ./pause
log="${LOGS}/node-images.log"
printf 'building %-24s from %s (log: %s) ... ' node-images.tar "${BUSYBOX} and pause" "${log#"${ROOT}/"}"
if ! (cd "${ROOT}/hack/image" && go run ./nodeimages -busybox "${BUSYBOX}" -pause "${BIN}/pause" -tar "${BIN}/.node-images.tar.tmp") >"${log}" 2>&1; then
  echo "FAILED"
  echo "${SCRIPT}: building the node images failed; last lines of ${log}:" >&2
  tail -n 30 "${log}" >&2
  exit 1
fi
mv -f "${BIN}/.node-images.tar.tmp" "${BIN}/node-images.tar"
echo "done"

echo "${want}" >"${STAMP}"
echo "built ${OUTPUTS[*]} in $((SECONDS - total))s"
