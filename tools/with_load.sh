#!/usr/bin/env bash
# Runs a command beside N busy loops (a loaded machine, as a shared CI host is): the tests must
# pass with their verdicts unchanged, none of them read from a duration or a sleep (issue #63).
#   tools/with_load.sh N CMD [ARGS...]       e.g. tools/with_load.sh 2 ctest -R 'Progress|StoreCli'
#   VECBENCH_CTEST_LOAD=N tools/test.sh      the ctest stage under N busy loops (tools/test.sh)
# Each loop is a shell spinning at the default priority (nice 0, the tests' own); they are ended
# (by their process ids) when the command ends, fails or is interrupted. Exits with CMD's status.
set -uo pipefail
n=${1:?usage: tools/with_load.sh N CMD [ARGS...]}
shift
case "$n" in '' | *[!0-9]*) echo "with_load: N must be a whole number, not '$n'" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "usage: tools/with_load.sh N CMD [ARGS...]" >&2; exit 2; }
pids=()
stop_load() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT
trap 'stop_load; exit 143' TERM
for ((i = 0; i < n; i++)); do
  nice -n 0 bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "with_load: $n busy loop(s) (pids ${pids[*]:-none}) beside: $*" >&2
"$@"
rc=$?
stop_load
echo "with_load: the busy loops ended; the command exited $rc" >&2
exit "$rc"
