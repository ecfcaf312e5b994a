#!/usr/bin/env bash
# The CUDA build, linked and tested on a machine without a GPU (CI's `cuda-build` stage):
#   1. a virtual environment with the PyTorch the GPU machine carries (torch 2.11.0, CUDA 13.0
#      on PyPI) and its nvidia-* runtime wheels, nvJPEG included (cuda-toolkit[nvjpeg]), kept in
#      $VECBENCH_VENVS/torch-cuda (default ~/.cache/vecbench/venvs) and reused while the pins match;
#   2. vecbench configured against that LibTorch with CUDA (nvcc from $CUDA_HOME, default
#      /usr/local/cuda) and nvJPEG; only what the tests below need is built: the CLI, its two
#      plugins and the two test executables (no benchmarks, no header self-tests: the main build
#      compiles those), with the main build's exported models ($MAIN_BUILD/models, default
#      build/models: the same python3-torch exports them either way) instead of exporting again;
#   3. the tests whose code differs between the two builds (ctest label `cuda`, tests/CMakeLists.txt):
#      - DeviceDecode.*, DecodeSetting.* (core tests): the nvJPEG decoder is built in here;
#      - Cuda.*, DecodeGpu.*, DecodeGpuRouting.*: `vecbench devices`, --devices cuda and --decode
#        gpu fail cleanly without a GPU (tests/torch/test_gpu_decode_cli.cpp);
#      - Route.*: the route asks the CUDA driver, then LibTorch, for GPUs;
#      - Model.*, Features.*, Strategies.*, Tune.*, Vectorize.*, OneDnn.*, EngineNone.*: LibTorch
#        2.11 with CUDA runs the TorchScript engine, reads the weights for the oneDNN engine and
#        builds the engines (src/engine/torch_plugin.cpp, engines.cpp are compiled with CUDA).
#      Not here, because their code is the same in both builds (the main build's ctest runs them):
#      the other core tests (no LibTorch), the store, host decoding, shards, progress, MPI and the
#      Python tests.
#   4. the GPU check's build (tools/device/gpu_check.sh --stage compile) against the same LibTorch:
#      the GPU machine's settings find CUDA and nvJPEG, build vecbench, export the model.
#   tools/cuda_build.sh [BUILD_DIR]     (default build-cuda)
#   CUDA_BUILD_TESTS=0 tools/cuda_build.sh     build and link only
#   CUDA_BUILD_TESTS=all tools/cuda_build.sh   every target and the whole suite
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-cuda}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
VENVS=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}
PINS="torch==2.11.0 cuda-toolkit[nvjpeg]==13.0.2"
JOBS=${JOBS:-$(nproc)}
MAIN_BUILD=${MAIN_BUILD:-build}
TESTS=${CUDA_BUILD_TESTS:-1}
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
  echo "cuda_build: no nvcc in $CUDA_HOME (set CUDA_HOME): the CUDA build needs the CUDA toolkit" >&2
  exit 1
fi
venv=$VENVS/torch-cuda
if [ "$(cat "$venv/.vecbench-pins" 2>/dev/null)" != "$PINS" ]; then
  echo "cuda_build: installing $PINS into $venv"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $PINS
  echo "$PINS" > "$venv/.vecbench-pins"
fi
TORCH_CMAKE=$("$venv/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
"$venv/bin/python" -c 'import torch; print("cuda_build: torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null
MODELS=()
if [ -f "$MAIN_BUILD/models/inception_tf2015_seed0.pt" ] && [ -f "$MAIN_BUILD/models/inception_tf2015_seed0_fused.pt" ]; then
  MODELS=(-DVECBENCH_MODEL_DIR="$(cd "$MAIN_BUILD/models" && pwd)")
fi
# Only the test files that hold the tests above (all of them with CUDA_BUILD_TESTS=all).
BENCH=OFF
CORE_FILES="test_device_decode.cpp;test_resize_formula.cpp"
TORCH_FILES="test_gpu_decode_cli.cpp;test_decode.cpp;test_route.cpp;test_onednn.cpp;test_vectorize.cpp;test_progress_cli.cpp"
if [ "$TESTS" = all ]; then BENCH=ON CORE_FILES="" TORCH_FILES=""; fi
log=$(mktemp)
if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" \
  -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" -DVECBENCH_HEADER_TESTS=OFF -DVECBENCH_BUILD_BENCH=$BENCH \
  -DVECBENCH_CORE_TEST_FILES="$CORE_FILES" -DVECBENCH_TORCH_TEST_FILES="$TORCH_FILES" \
  "${MODELS[@]}" > "$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep -E "^-- vecbench" "$log" || true
# The point of this build: refuse to pass if CUDA or nvJPEG silently dropped out.
grep -q "vecbench: LibTorch .*CUDA: ON" "$log" || { echo "cuda_build: CMake did not enable CUDA" >&2; exit 1; }
grep -q "vecbench: nvJPEG: ON" "$log" || { echo "cuda_build: CMake did not find nvJPEG" >&2; exit 1; }
rm -f "$log"
if [ "$TESTS" = all ]; then
  cmake --build "$BUILD" -j"$JOBS"
else
  cmake --build "$BUILD" -j"$JOBS" --target vecbench vecbench_core_tests vecbench_torch_tests
fi
"$BUILD/vecbench" devices
# The GPU check's own build, rehearsed: the GPU machine's configure (no OpenCV, MPI off, sm_90,
# the carried headers where .gpu-deps has them) against this venv's LibTorch must find CUDA and
# nvJPEG, build `vecbench`, and export the plain model with this venv's torch 2.11, which has
# neither torchvision nor NumPy (tools/device/gpu_check.sh --stage compile; no GPU needed).
rehearsal=$(mktemp -d)
if ! PYTHON="$venv/bin/python" CUDA_HOME="$CUDA_HOME" BUILD_CAP_S=1500 tools/device/gpu_check.sh --stage compile \
  --deadline 1600 --build-dir "$rehearsal/build" --work "$rehearsal/work" "$rehearsal/out" > /dev/null; then
  tail -n 60 "$rehearsal/out/gpu_check.log" "$rehearsal/work/logs/cmake.log" "$rehearsal/work/logs/build.log" 2>/dev/null
  echo "cuda_build: the GPU check's build failed (above)" >&2
  exit 1
fi
echo "cuda_build: the GPU check's build (GPU machine's configure) builds vecbench and the model"
rm -rf "$rehearsal"
case "$TESTS" in
  0) echo "cuda_build: the CUDA build links" ;;
  all) (cd "$BUILD" && ctest --output-on-failure -j"$JOBS")
       echo "cuda_build: the CUDA build links and its whole suite passes" ;;
  *) (cd "$BUILD" && ctest --output-on-failure -j"$JOBS" -L cuda)
     echo "cuda_build: the CUDA build links and its tests (label cuda) pass" ;;
esac
