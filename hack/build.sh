#!/usr/bin/env bash
# Builds the local control plane used by podtrace's integration tests and demo:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler (module hack/kube)
# and kwok (module hack/kwok), into _output/bin. Sources come from the Go module
# proxy only.
#
# The build is skipped when a stamp file holds the hash of hack/kube/go.{mod,sum},
# hack/kwok/go.{mod,sum}, this script and hack/build-lib.sh, and every binary
# exists: the binaries are rebuilt only when the pinned versions (or the way
# they are built) change.
#
# Environment:
#   PODTRACE_CLUSTER_BIN  output directory (default: <repo>/_output/bin)
#   FORCE=1               rebuild even if the stamp matches
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${PODTRACE_CLUSTER_BIN:-${ROOT}/_output/bin}
LOGS=${BIN}/.build-logs
STAMP=${BIN}/.stamp

KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)
ALL_BINARIES=(etcd "${KUBE_BINARIES[@]}" kwok)

stamp() {
  (
    cd "${ROOT}"
    sha256sum hack/kube/go.mod hack/kube/go.sum hack/kwok/go.mod hack/kwok/go.sum hack/build.sh hack/build-lib.sh
  ) | sha256sum | cut -d' ' -f1
}

want=$(stamp)
if [[ "${FORCE:-}" != 1 && -f "${STAMP}" && "$(cat "${STAMP}")" == "${want}" ]]; then
  missing=0
  for b in "${ALL_BINARIES[@]}"; do
    [[ -x "${BIN}/${b}" ]] || missing=1
  done
  if [[ ${missing} == 0 ]]; then
    echo "cluster binaries in ${BIN#"${ROOT}/"} are up to date (${ALL_BINARIES[*]})"
    exit 0
  fi
fi

mkdir -p "${BIN}" "${LOGS}"
rm -f "${STAMP}"

SCRIPT=hack/build.sh
# shellcheck source=build-lib.sh
source "${ROOT}/hack/build-lib.sh"
kube_ldflags

total=${SECONDS}
echo "building cluster binaries (Kubernetes ${KUBE_VERSION}) into ${BIN#"${ROOT}/"}: 10 to 20 minutes on 2 cores with a cold Go cache"
build etcd hack/kube go.etcd.io/etcd/server/v3
for b in "${KUBE_BINARIES[@]}"; do
  build "${b}" hack/kube "k8s.io/kubernetes/cmd/${b}" "${KUBE_LDFLAGS}"
done
build kwok hack/kwok sigs.k8s.io/kwok/cmd/kwok

echo "${want}" >"${STAMP}"
echo "built ${ALL_BINARIES[*]} in $((SECONDS - total))s"
