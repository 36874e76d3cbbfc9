#!/usr/bin/env bash
# Installs the Debian packages a real node of the local cluster needs when
# one is missing: runc (the OCI runtime containerd's shim runs), the CNI
# plugins (bridge, host-local, loopback, in /usr/lib/cni) and a static busybox
# (the test containers' image, built by hack/build-node.sh). Needs root
# (apt-get), as a real node does anyway.
set -euo pipefail

missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || missing+=(containernetworking-plugins)
# The images need a static busybox (Debian: busybox-static), whatever provides /bin/busybox.
[[ -x /bin/busybox && "$(LC_ALL=C ldd /bin/busybox 2>&1 || true)" == *"not a dynamic executable"* ]] || missing+=(busybox-static)
if [[ ${#missing[@]} == 0 ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "the real node's packages are missing (${missing[*]}) and this is not root: install them (apt-get install ${missing[*]}); a real node needs root anyway" >&2
  exit 1
fi
log=$(mktemp -t podtrace-apt-XXXXXX.log)
echo "installing ${missing[*]} (Debian packages) for the real node; log in ${log}"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"${log}" 2>&1; then
  echo "hack/ensure-node-packages.sh: apt-get install ${missing[*]} failed; last lines of ${log}:" >&2
  tail -n 20 "${log}" >&2
  exit 1
fi
rm -f "${log}"
