#!/usr/bin/env bash
# The README's test command: set up, build (Release), run the whole ctest suite in parallel, the
# CUDA build (linked, the tests whose code differs in it run without a GPU), the sanitizer builds
# of the core tests, and the short regression stage. Exits non-zero on any failure, and prints
# each stage's time at the end (results/ci/stage-times.md).
#   tools/test.sh            everything
#   STAGES="ctest" tools/test.sh     only some stages (setup format layers build ctest cuda-build sanitizers regression)
#   CTEST_ARGS="-L core" tools/test.sh   arguments for the ctest stage (labels: tests/CMakeLists.txt)
#   VECBENCH_CTEST_LOAD=2 tools/test.sh  the ctest stage beside 2 busy loops (tools/with_load.sh)
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

# What set-up downloads from PyPI (minutes of network on a new machine, little CPU) is fetched in
# the background while the format, layers and build stages compile; the stage that needs it waits.
fetch_dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$fetch_dir"' EXIT
fetch() {  # fetch NAME CMD...: CMD in the background, its output kept for await NAME
  local name=$1
  shift
  ( rc=0; "$@" > "$fetch_dir/$name.log" 2>&1 || rc=$?; echo "$rc" > "$fetch_dir/$name.rc" ) &
}
await() {  # await NAME: waits for fetch NAME, prints its output; fails as it failed
  local t=$SECONDS
  [ -d "$fetch_dir" ] || return 0
  while [ ! -f "$fetch_dir/$1.rc" ]; do
    [ -n "$(jobs -pr)" ] || break
    sleep 1
  done
  [ -f "$fetch_dir/$1.rc" ] || return 0  # never fetched (its stage not selected with setup)
  sed "s/^/[$1] /" "$fetch_dir/$1.log"
  echo "[$1] waited $(( SECONDS - t )) s for it"
  [ "$(cat "$fetch_dir/$1.rc")" = 0 ] || { echo "test.sh: $1 failed (exit $(cat "$fetch_dir/$1.rc"))" >&2; exit 1; }
}

if has setup; then
  stage setup
  tools/setup.sh
  # TensorFlow and the FID tools (pinned, in venvs outside the tree, kept between runs) for the
  # tool-parity tests; the CUDA build's torch 2.11 venv
  fetch peers tools/peers_setup.sh tensorflow
  has cuda-build && fetch cuda-venv tools/cuda_build.sh --venv
fi
ccache_start=$(ccache_counts)  # after set-up, which installs ccache on a new machine
if has format; then stage format; tools/check_format.sh; fi
if has layers; then stage layers; python3 tools/check_layers.py --self-test; python3 tools/check_sizes.py --self-test; python3 tools/check_skips.py --self-test; python3 tools/check_links.py; fi
if has build; then
  stage build
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" -j"$JOBS"
fi
if has ctest; then
  stage ctest
  await peers
  # In parallel: tests labelled mpi or timing are RUN_SERIAL (tests/CMakeLists.txt). With
  # VECBENCH_CTEST_LOAD=N, beside N busy loops (tools/with_load.sh): no verdict may depend on the
  # machine's load. Then a skipped test fails the stage unless this machine may skip it
  # (tools/check_skips.py: a CPU feature it lacks, no mount, a GPU; never a missing set-up).
  load=()
  [ "${VECBENCH_CTEST_LOAD:-0}" -gt 0 ] && load=("$PWD/tools/with_load.sh" "$VECBENCH_CTEST_LOAD")
  rm -f "$BUILD/ctest-junit.xml"
  # shellcheck disable=SC2086
  (cd "$BUILD" && "${load[@]}" ctest --output-on-failure -j"$JOBS" --output-junit ctest-junit.xml ${CTEST_ARGS:-})
  python3 tools/check_skips.py "$BUILD/ctest-junit.xml"
fi
# The CUDA build (PyPI's torch 2.11 / CUDA 13.0 and nvJPEG), linked, with the tests whose code
# differs in it run on it (tools/cuda_build.sh says which and why).
if has cuda-build; then stage cuda-build; await cuda-venv; MAIN_BUILD="$BUILD" tools/cuda_build.sh "$BUILD-cuda"; fi
if has sanitizers; then stage sanitizers; tools/sanitizers.sh; fi
if has regression; then stage regression; tools/regression.sh "$BUILD"; fi
stage "all stages passed"
echo "stage times (s):"
for t in "${times[@]}"; do printf '  %-12s %5s\n' ${t% *} ${t##* }; done
printf '  %-12s %5s\n' total $(( $(date +%s) - t0 ))
if [ -n "$ccache_start" ]; then
  read -r h0 m0 <<< "$ccache_start"
  read -r h1 m1 <<< "$(ccache_counts)"
  echo "ccache ($CCACHE_DIR): $(( h1 - h0 )) hits, $(( m1 - m0 )) misses in this run"
fi
