#!/usr/bin/env bash
# Builds kubectl (module hack/kubectl, k8s.io/kubectl at the control plane's
# release) into _output/bin, for the e2e tests of podtrace serve. Sources come
# from the Go module proxy only.
#
# The build is skipped when a stamp file holds the hash of hack/kubectl's
# files and this script, and the binary exists. It is apart from
# hack/build.sh so that adding it did not rebuild the control plane.
#
# Environment:
#   PODTRACE_CLUSTER_BIN  output directory (default: <repo>/_output/bin)
#   FORCE=1               rebuild even if the stamp matches
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${PODTRACE_CLUSTER_BIN:-${ROOT}/_output/bin}
LOGS=${BIN}/.build-logs
STAMP=${BIN}/.stamp-kubectl

want=$(cd "${ROOT}" && sha256sum hack/kubectl/go.mod hack/kubectl/go.sum hack/kubectl/main.go hack/build-kubectl.sh | sha256sum | cut -d' ' -f1)
if [[ "${FORCE:-}" != 1 && -f "${STAMP}" && "$(cat "${STAMP}")" == "${want}" && -x "${BIN}/kubectl" ]]; then
  echo "kubectl in ${BIN#"${ROOT}/"} is up to date"
  exit 0
fi

mkdir -p "${BIN}" "${LOGS}"
rm -f "${STAMP}"
VERSION=$(cd "${ROOT}/hack/kubectl" && go list -m -f '{{.Version}}' k8s.io/kubectl)
if [[ ! "${VERSION}" =~ ^v0\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "hack/build-kubectl.sh: cannot parse k8s.io/kubectl version ${VERSION:-<empty>} from hack/kubectl/go.mod" >&2
  exit 1
fi
# k8s.io/kubectl v0.N.P is Kubernetes v1.N.P: kubectl version says so.
GIT_VERSION="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${GIT_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${BASH_REMATCH[1]}"
done
log="${LOGS}/kubectl.log"
# progress.sh says every 30 s that it runs.
if ! (cd "${ROOT}/hack/kubectl" && "${ROOT}/hack/progress.sh" "building kubectl from k8s.io/kubectl ${VERSION}" "${log}" go build -trimpath -ldflags "${LDFLAGS}" -o "${BIN}/.kubectl.tmp" .); then
  rm -f "${BIN}/.kubectl.tmp"
  echo "hack/build-kubectl.sh: building kubectl failed" >&2
  exit 1
fi
mv -f "${BIN}/.kubectl.tmp" "${BIN}/kubectl"
echo "${want}" >"${STAMP}"
