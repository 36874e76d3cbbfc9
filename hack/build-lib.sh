# Functions shared by hack/build.sh and hack/build-node.sh; sourced, not run.
# The caller sets ROOT (the repository), BIN (the output directory), LOGS
# (where each build's log goes) and SCRIPT (its name, for error messages).

# kube_ldflags sets KUBE_VERSION and KUBE_LDFLAGS from hack/kube/go.mod: the
# version the servers and the kubelet report (component-base) and put in their
# user agents (client-go). Without it they say v0.0.0-master+$Format:%H$, which
# kubectl and client-go discovery cannot parse, and kube-scheduler/v0.0.0 in
# audit logs.
kube_ldflags() {
  KUBE_VERSION=$(cd "${ROOT}/hack/kube" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
  if [[ ! "${KUBE_VERSION}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
    echo "${SCRIPT}: cannot parse k8s.io/kubernetes version ${KUBE_VERSION:-<empty>} from hack/kube/go.mod" >&2
    exit 1
  fi
  KUBE_LDFLAGS="-s -w"
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBE_LDFLAGS+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=${BASH_REMATCH[1]} -X ${pkg}.gitMinor=${BASH_REMATCH[2]}"
  done
}

# build NAME MODULE_DIR PACKAGE [LDFLAGS [GO BUILD FLAGS...]]: go build PACKAGE
# in MODULE_DIR into $BIN/NAME, its output in $LOGS/NAME.log; hack/progress.sh
# says where the log is and, every 30 s, that it still builds.
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:--s -w}
  shift 4 2>/dev/null || shift $#
  local log="${LOGS}/${name}.log"
  # Build next to the target and rename, so a failed build never leaves a
  # half-written binary behind.
  if ! (cd "${ROOT}/${dir}" && "${ROOT}/hack/progress.sh" "building ${name} from ${pkg}" "${log}" go build -trimpath -ldflags "${ldflags}" "$@" -o "${BIN}/.${name}.tmp" "${pkg}"); then
    rm -f "${BIN}/.${name}.tmp"
    echo "${SCRIPT}: building ${name} (${pkg}) failed" >&2
    exit 1
  fi
  mv -f "${BIN}/.${name}.tmp" "${BIN}/${name}"
}
