#!/usr/bin/env bash
# Builds helm (module hack/helm, helm.sh/helm/v4 at the version its go.mod
# pins) into _output/bin, for the test of the Helm chart in deploy/helm
# (test/deploy). Sources come from the Go module proxy only.
#
# The build is skipped when a stamp file holds the hash of hack/helm's files
# and this script, and the binary exists.
#
# Environment:
#   PODTRACE_CLUSTER_BIN  output directory (default: <repo>/_output/bin)
#   FORCE=1               rebuild even if the stamp matches
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${PODTRACE_CLUSTER_BIN:-${ROOT}/_output/bin}
LOGS=${BIN}/.build-logs
STAMP=${BIN}/.stamp-helm

want=$(cd "${ROOT}" && sha256sum hack/helm/go.mod hack/helm/go.sum hack/build-helm.sh | sha256sum | cut -d' ' -f1)
if [[ "${FORCE:-}" != 1 && -f "${STAMP}" && "$(cat "${STAMP}")" == "${want}" && -x "${BIN}/helm" ]]; then
  echo "helm in ${BIN#"${ROOT}/"} is up to date"
  exit 0
fi

mkdir -p "${BIN}" "${LOGS}"
rm -f "${STAMP}"
VERSION=$(cd "${ROOT}/hack/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
if [[ ! "${VERSION}" =~ ^v4\.[0-9]+\.[0-9]+$ ]]; then
  echo "hack/build-helm.sh: cannot parse helm.sh/helm/v4 version ${VERSION:-<empty>} from hack/helm/go.mod" >&2
  exit 1
fi
LDFLAGS="-s -w -X helm.sh/helm/v4/internal/version.version=${VERSION}"
log="${LOGS}/helm.log"
# progress.sh says every 30 s that it runs.
if ! (cd "${ROOT}/hack/helm" && "${ROOT}/hack/progress.sh" "building helm from helm.sh/helm/v4 ${VERSION}" "${log}" go build -trimpath -ldflags "${LDFLAGS}" -o "${BIN}/.helm.tmp" helm.sh/helm/v4/cmd/helm); then
  rm -f "${BIN}/.helm.tmp"
  echo "hack/build-helm.sh: building helm failed" >&2
  exit 1
fi
mv -f "${BIN}/.helm.tmp" "${BIN}/helm"
echo "${want}" >"${STAMP}"
