#!/usr/bin/env bash
# The README's test command: set up, build (Release), run the whole ctest suite in parallel, the
# CUDA build (linked, the tests whose code differs in it run without a GPU), the sanitizer builds
# of the core tests, and the short regression stage. Exits non-zero on any failure, and prints
# each stage's time at the end (results/ci/stage-times.md).
#   tools/test.sh            everything
#   STAGES="ctest" tools/test.sh     only some stages (setup format layers build ctest cuda-build sanitizers regression)
#   CTEST_ARGS="-L core" tools/test.sh   arguments for the ctest stage (labels: tests/CMakeLists.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
STAGES=${STAGES:-"setup format layers build ctest cuda-build sanitizers regression"}
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
has() { [[ " $STAGES " == *" $1 "* ]]; }
# Compiles cached between runs (ccache for the objects, CMakeLists.txt's VECBENCH_CCACHE; the header
# self-tests' checks, tools/syntax_only.sh), keyed on paths relative to the clone so that a clean
# clone in another folder finds what the last run compiled. A new machine starts with both empty.
CACHE_ROOT=${VECBENCH_CACHE_ROOT:-$HOME/.cache/vecbench}
export CCACHE_DIR=${CCACHE_DIR:-$CACHE_ROOT/ccache} CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1} CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
export VECBENCH_SYNTAX_CACHE=${VECBENCH_SYNTAX_CACHE-$CACHE_ROOT/syntax-ok}
ccache_counts() {  # "HITS MISSES" of ccache's statistics (nothing without ccache)
  command -v ccache >/dev/null || return 0
  ccache --print-stats 2>/dev/null | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ {h += $2}
    $1 == "cache_miss" {m = $2} END {print h + 0, m + 0}'
}
ccache_start="" ct_s=""
t0=$(date +%s)
times=()
current="" t_stage=$t0
stage() {  # stage NAME: closes the previous stage's clock and opens NAME's
  local now
  now=$(date +%s)
  [ -n "$current" ] && times+=("$current $(( now - t_stage ))")
  current=$1 t_stage=$now
  echo; echo "=== $1 ($(( now - t0 )) s)"
}

if has setup; then
  stage setup
  tools/setup.sh
  # TensorFlow (pinned, in a venv outside the tree, kept between runs) for the TF fidelity test
  tools/peers_setup.sh tensorflow
fi
ccache_start=$(ccache_counts)  # after set-up, which installs ccache on a new machine
if has format; then stage format; tools/check_format.sh; fi
if has layers; then stage layers; python3 tools/check_layers.py --self-test; python3 tools/check_sizes.py --self-test; python3 tools/check_links.py; fi
if has build; then
  stage build
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" -j"$JOBS"
fi
# ctest, cuda-build and sanitizers are independent, and each leaves a core idle much of its time
# (the suite's long Python tests hold one core for minutes: the FID tools, TensorFlow; the builds
# configure, link and, warm, mostly read ccache): the suite runs in the background while the other
# two run here (OVERLAP=0: one after the other). Its RUN_SERIAL tests (labels mpi and timing:
# mpirun's processes, the replica set-up's overlap) run after, alone, and the regression stage on
# a quiet machine after that.
ctest_suite() {  # ctest_suite [ARGS...]: the main build's suite, in parallel
  (cd "$BUILD" && ctest --output-on-failure -j"$JOBS" "$@")
}
SERIAL_LABELS="mpi|timing"
bg_pid=""
if has ctest; then
  if [ "${OVERLAP:-1}" = 1 ] && [ -z "${CTEST_ARGS:-}" ] && { has cuda-build || has sanitizers; }; then
    stage "ctest-started"
    echo "ctest: the suite less its RUN_SERIAL tests in the background (its output when it ends)"
    bg_log=$(mktemp)
    # its own process group (setsid), so that a failure here stops every test it started
    setsid bash -c 't=$(date +%s); cd "$1" && ctest --output-on-failure -j"$2" -LE "$3" > "$4" 2>&1
                    echo "$? $(( $(date +%s) - t ))" > "$4.rc"' _ "$BUILD" "$JOBS" "$SERIAL_LABELS" "$bg_log" &
    bg_pid=$!
    trap '[ -z "$bg_pid" ] || kill -- -"$bg_pid" 2>/dev/null || true' EXIT
  else
    stage ctest
    # shellcheck disable=SC2086
    ctest_suite ${CTEST_ARGS:-}
  fi
fi
# The CUDA build (PyPI's torch 2.11 / CUDA 13.0 and nvJPEG), linked, with the tests whose code
# differs in it run on it (tools/cuda_build.sh says which and why).
if has cuda-build; then stage cuda-build; MAIN_BUILD="$BUILD" tools/cuda_build.sh "$BUILD-cuda"; fi
if has sanitizers; then stage sanitizers; tools/sanitizers.sh; fi
if [ -n "$bg_pid" ]; then
  stage ctest-wait
  rc=0
  wait "$bg_pid" || rc=$?
  bg_pid=""
  cat "$bg_log"
  read -r ct_rc ct_s < "$bg_log.rc" || { ct_rc=$rc ct_s=0; }
  rm -f "$bg_log" "$bg_log.rc"
  times+=("ctest-suite $ct_s")
  if [ "$ct_rc" != 0 ]; then echo "ctest: the suite failed (exit $ct_rc): its output is above" >&2; exit 1; fi
  stage ctest-serial
  ctest_suite -L "$SERIAL_LABELS"
fi
if has regression; then stage regression; tools/regression.sh "$BUILD"; fi
stage "all stages passed"
echo "stage times (s):"
for t in "${times[@]}"; do printf '  %-14s %5s\n' ${t% *} ${t##* }; done
printf '  %-14s %5s\n' total $(( $(date +%s) - t0 ))
[ -z "$ct_s" ] || echo "  (ctest-suite ran in the background from ctest-started to ctest-wait's end: beside cuda-build and sanitizers)"
if [ -n "$ccache_start" ]; then
  read -r h0 m0 <<< "$ccache_start"
  read -r h1 m1 <<< "$(ccache_counts)"
  echo "ccache ($CCACHE_DIR): $(( h1 - h0 )) hits, $(( m1 - m0 )) misses in this run"
fi
