#!/usr/bin/env bash
# The CUDA build, linked and tested on a machine without a GPU (CI's `cuda-build` stage):
#   1. a virtual environment with the PyTorch the GPU machine carries (torch 2.11.0, CUDA 13.0
#      on PyPI) and its nvidia-* runtime wheels, nvJPEG included (cuda-toolkit[nvjpeg]), kept in
#      $VECBENCH_VENVS/torch-cuda (default ~/.cache/vecbench/venvs) and reused while the pins match;
#   2. vecbench configured against that LibTorch with CUDA (nvcc from $CUDA_HOME, default
#      /usr/local/cuda) and nvJPEG, every target built and linked (header self-tests off: the
#      main build compiles them);
#   3. the whole ctest suite run with those binaries: CUDA calls fail cleanly without a GPU
#      (tests/torch/test_gpu_decode_cli.cpp checks `vecbench devices`, --devices cuda and
#      --decode gpu there).
#   tools/cuda_build.sh [BUILD_DIR]    (default build-cuda)
#   CUDA_BUILD_TESTS=0 tools/cuda_build.sh   build and link only
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-cuda}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
VENVS=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}
PINS="torch==2.11.0 cuda-toolkit[nvjpeg]==13.0.2"
JOBS=${JOBS:-$(nproc)}
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
log=$(mktemp)
if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" \
  -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" -DVECBENCH_HEADER_TESTS=OFF > "$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep -E "^-- vecbench" "$log" || true
# The point of this build: refuse to pass if CUDA or nvJPEG silently dropped out.
grep -q "vecbench: LibTorch .*CUDA: ON" "$log" || { echo "cuda_build: CMake did not enable CUDA" >&2; exit 1; }
grep -q "vecbench: nvJPEG: ON" "$log" || { echo "cuda_build: CMake did not find nvJPEG" >&2; exit 1; }
rm -f "$log"
cmake --build "$BUILD" -j"$JOBS"
"$BUILD/vecbench" devices
if [ "${CUDA_BUILD_TESTS:-1}" = 1 ]; then
  (cd "$BUILD" && ctest --output-on-failure -j1)
fi
echo "cuda_build: the CUDA build links and its tests pass"
