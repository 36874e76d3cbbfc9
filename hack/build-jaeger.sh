#!/usr/bin/env bash
# Builds Jaeger v2 (module hack/jaeger: github.com/jaegertracing/jaeger's
# cmd/jaeger, an OpenTelemetry Collector with Jaeger's storage and query
# service) into _output/bin, for the e2e tests of podtrace's OTLP export.
# Sources come from the Go module proxy only. The module carries no UI
# assets: the binary serves the query API (/api/..., /api/v3/...) and a
# placeholder page instead of the UI.
#
# The build is skipped when a stamp file holds the hash of hack/jaeger's
# files and this script, and the binary exists: it is a large build (the
# Collector with every storage backend), done once and reused.
#
# Environment:
#   PODTRACE_CLUSTER_BIN  output directory (default: <repo>/_output/bin)
#   FORCE=1               rebuild even if the stamp matches
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${PODTRACE_CLUSTER_BIN:-${ROOT}/_output/bin}
LOGS=${BIN}/.build-logs
STAMP=${BIN}/.stamp-jaeger

want=$(cd "${ROOT}" && sha256sum hack/jaeger/go.mod hack/jaeger/go.sum hack/build-jaeger.sh | sha256sum | cut -d' ' -f1)
if [[ "${FORCE:-}" != 1 && -f "${STAMP}" && "$(cat "${STAMP}")" == "${want}" && -x "${BIN}/jaeger" ]]; then
  echo "jaeger in ${BIN#"${ROOT}/"} is up to date"
  exit 0
fi

mkdir -p "${BIN}" "${LOGS}"
rm -f "${STAMP}"
VERSION=$(cd "${ROOT}/hack/jaeger" && go list -m -f '{{.Version}}' github.com/jaegertracing/jaeger)
log="${LOGS}/jaeger.log" start=${SECONDS}
printf 'building %-24s from %s ... ' jaeger "github.com/jaegertracing/jaeger/cmd/jaeger ${VERSION}"
# Next to the target and renamed, so a failed build never leaves a
# half-written binary behind.
if ! (cd "${ROOT}/hack/jaeger" && go build -trimpath -ldflags "-s -w" -o "${BIN}/.jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger) >"${log}" 2>&1; then
  echo "FAILED"
  rm -f "${BIN}/.jaeger.tmp"
  echo "hack/build-jaeger.sh: building jaeger failed; last lines of ${log}:" >&2
  tail -n 30 "${log}" >&2
  exit 1
fi
mv -f "${BIN}/.jaeger.tmp" "${BIN}/jaeger"
echo "done ($((SECONDS - start))s)"
echo "${want}" >"${STAMP}"
