#!/usr/bin/env bash
# hack/progress.sh LABEL LOG COMMAND [ARG...]
#
# Runs COMMAND with its output in LOG and says what it does: LABEL and where
# LOG is first, then every PROGRESS_EVERY seconds (default 30) how long it has
# run, then done or FAILED with the time; on failure, the last lines of LOG on
# standard error. Exits with COMMAND's status. A long build (kube-apiserver,
# cold: several minutes) never looks hung.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: hack/progress.sh LABEL LOG COMMAND [ARG...]" >&2
  exit 2
fi
label=$1 log=$2
shift 2
every=${PROGRESS_EVERY:-30}
mkdir -p "$(dirname "${log}")"

# elapsed SECONDS: 45s, 3m05s.
elapsed() {
  local s=$1
  if ((s < 60)); then
    printf '%ds' "${s}"
  else
    printf '%dm%02ds' $((s / 60)) $((s % 60))
  fi
}

start=${SECONDS}
echo "${label} (log: ${log})"
"$@" >"${log}" 2>&1 &
pid=$!
# Interrupted: end the command this script started, by its pid.
trap 'kill "${pid}" 2>/dev/null; exit 130' INT TERM
next=$((start + every))
while kill -0 "${pid}" 2>/dev/null; do
  sleep 1
  if ((SECONDS >= next)) && kill -0 "${pid}" 2>/dev/null; then
    echo "  ... $(elapsed $((SECONDS - start))) (log: ${log})"
    next=$((next + every))
  fi
done
status=0
wait "${pid}" || status=$?
trap - INT TERM
if ((status != 0)); then
  echo "  FAILED after $(elapsed $((SECONDS - start))); last lines of ${log}:" >&2
  tail -n 30 "${log}" >&2
  exit "${status}"
fi
echo "  done in $(elapsed $((SECONDS - start)))"
