# shellcheck shell=bash disable=SC2154
# Shared by the bench scripts that time whole commands (tools/bench_cmmd.sh, tools/bench_metrics.sh):
# source it; they set $tmp (a scratch folder) first.

# bench_measure SCRIPT LINES NAME COMMAND...: runs COMMAND under /usr/bin/time and prints one table
# row "NAME|wall s|peak RSS MB|the last LINES lines of its stdout, joined"; a failure prints its
# stderr, named by SCRIPT, and exits 1.
bench_measure() {
  local script=$1 lines=$2 name=$3
  shift 3
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || {
    echo "$script: $name failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  }
  local wall kb
  read -r wall kb <"$tmp/time"
  echo "$name|$wall|$((kb / 1024))|$(tail -n "$lines" "$tmp/out" | tr '\n' ' ' | sed 's/ $//')"
}
