#!/usr/bin/env bash
# The README's test command: set up, build (Release), run the whole ctest suite, the CUDA build
# (linked, its suite run without a GPU), the sanitizer builds of the pipeline tests, and the
# short regression stage. Exits non-zero on any failure.
#   tools/test.sh            everything
#   STAGES="ctest" tools/test.sh     only some stages (setup format layers build ctest cuda-build sanitizers regression)
set -euo pipefail
cd "$(dirname "$0")/.."
STAGES=${STAGES:-"setup format layers build ctest cuda-build sanitizers regression"}
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
stage() { echo; echo "=== $1 ($(( $(date +%s) - t0 )) s)"; }

if has setup; then
  stage setup
  tools/setup.sh
  # TensorFlow (pinned, in a venv outside the tree, kept between runs) for the TF fidelity test
  tools/peers_setup.sh tensorflow
fi
if has format; then stage format; tools/check_format.sh; fi
if has layers; then stage layers; python3 tools/check_layers.py --self-test; python3 tools/check_sizes.py --self-test; fi
if has build; then
  stage build
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" -j"$JOBS"
fi
if has ctest; then
  stage ctest
  (cd "$BUILD" && ctest --output-on-failure -j1)
fi
# The CUDA build (PyPI's torch 2.11 / CUDA 13.0 and nvJPEG), linked, with the whole suite run on it.
if has cuda-build; then stage cuda-build; tools/cuda_build.sh "$BUILD-cuda"; fi
if has sanitizers; then stage sanitizers; tools/sanitizers.sh; fi
if has regression; then stage regression; tools/regression.sh "$BUILD"; fi
stage "all stages passed"
