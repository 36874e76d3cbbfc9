#!/usr/bin/env bash
# Builds the local control plane used by podtrace's integration tests and demo:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler (module hack/kube)
# and kwok (module hack/kwok), into _output/bin. Sources come from the Go module
# proxy only.
#
# The build is skipped when a stamp file holds the hash of hack/kube/go.{mod,sum},
# hack/kwok/go.{mod,sum} and this script, and every binary exists: the binaries
# are rebuilt only when the pinned versions (or the way they are built) change.
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
    sha256sum hack/kube/go.mod hack/kube/go.sum hack/kwok/go.mod hack/kwok/go.sum hack/build.sh
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

# The version the servers report (component-base) and put in their user agents
# (client-go): without it they say v0.0.0-master+$Format:%H$, which kubectl and
# client-go discovery cannot parse, and kube-scheduler/v0.0.0 in audit logs.
KUBE_VERSION=$(cd "${ROOT}/hack/kube" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
if [[ ! "${KUBE_VERSION}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
  echo "hack/build.sh: cannot parse k8s.io/kubernetes version ${KUBE_VERSION:-<empty>} from hack/kube/go.mod" >&2
  exit 1
fi
KUBE_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  KUBE_LDFLAGS+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=${BASH_REMATCH[1]} -X ${pkg}.gitMinor=${BASH_REMATCH[2]}"
done

# build NAME MODULE_DIR PACKAGE [LDFLAGS]: go build PACKAGE in MODULE_DIR into $BIN/NAME.
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:--s -w}
  local log="${LOGS}/${name}.log"
  # Build next to the target and rename, so a failed build never leaves a
  # half-written binary behind. progress.sh says every 30 s that it runs.
  if ! (cd "${ROOT}/${dir}" && "${ROOT}/hack/progress.sh" "building ${name} from ${pkg}" "${log}" go build -trimpath -ldflags "${ldflags}" -o "${BIN}/.${name}.tmp" "${pkg}"); then
    rm -f "${BIN}/.${name}.tmp"
    echo "hack/build.sh: building ${name} (${pkg}) failed" >&2
    exit 1
  fi
  mv -f "${BIN}/.${name}.tmp" "${BIN}/${name}"
}

total=${SECONDS}
echo "building cluster binaries (Kubernetes ${KUBE_VERSION}) into ${BIN#"${ROOT}/"}: 10 to 20 minutes on 2 cores with a cold Go cache"
build etcd hack/kube go.etcd.io/etcd/server/v3
for b in "${KUBE_BINARIES[@]}"; do
  build "${b}" hack/kube "k8s.io/kubernetes/cmd/${b}" "${KUBE_LDFLAGS}"
done
build kwok hack/kwok sigs.k8s.io/kwok/cmd/kwok

echo "${want}" >"${STAMP}"
echo "built ${ALL_BINARIES[*]} in $((SECONDS - total))s"
