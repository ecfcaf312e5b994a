#!/usr/bin/env bash
# The CUDA build, linked and tested on a machine without a GPU (CI's `cuda-build` stage), in one
# configuration: the GPU machine's (tools/device/gpu_env.sh), so that what it builds is the
# prebuilt GPU binary that tools/device/gpu_check.sh carries there:
#   1. a virtual environment with the PyTorch the GPU machine carries (torch 2.11.0, CUDA 13.0
#      on PyPI) and its nvidia-* runtime wheels, nvJPEG included (cuda-toolkit[nvjpeg]), kept in
#      $VECBENCH_VENVS/torch-cuda (default ~/.cache/vecbench/venvs) and reused while the pins match;
#   2. .gpu-deps/ packed (tools/device/pack_deps.sh: the header-only libraries, nvJPEG, the codecs,
#      the photos), and vecbench configured as on the GPU machine: that LibTorch with CUDA (nvcc from
#      $CUDA_HOME, default /usr/local/cuda), sm_90, nvJPEG and the codecs from .gpu-deps, no OpenCV,
#      MPI, oneDNN or FID (the GPU machine has none of Debian's libraries); built: the CLI, its
#      LibTorch plugin and the tests below (no benchmarks, no header self-tests: the main build
#      compiles those), with the main build's exported models ($MAIN_BUILD/models, default
#      build/models: the same python3-torch exports them either way) instead of exporting again;
#   3. the tests whose code differs between the two builds (ctest label `cuda`, tests/CMakeLists.txt):
#      - DeviceDecode.*, DecodeSetting.* (core tests): the nvJPEG decoder is built in here;
#      - Cuda.*, DecodeGpu.*: `vecbench devices`, --devices cuda and --decode gpu fail cleanly
#        without a GPU (tests/torch/test_gpu_decode_cli.cpp);
#      - Route.*: the route asks the CUDA driver, then LibTorch, for GPUs;
#      - Model.*, Features.*, Strategies.*, Tune.*, Vectorize.*, EngineNone.*: LibTorch 2.11 with
#        CUDA runs the TorchScript engine and builds the engines (src/engine/torch_plugin.cpp,
#        engines.cpp are compiled with CUDA).
#      Not here, because their code is the same in both builds (the main build's ctest runs them):
#      the other core tests (no LibTorch), the store, host decoding (DecodeGpuRouting.* included:
#      header code), shards, progress, MPI, the oneDNN engine (OneDnn.*: not in the GPU binary,
#      whose machine has no libdnnl) and the Python tests.
#   4. the prebuilt binary (tools/device/prebuilt.sh): `vecbench` and `libvecbench_torch.so`
#      stripped into .gpu-deps/prebuilt/, their needed libraries and the carried size checked, and
#      started as the GPU machine will start it; then the GPU check's own command line in its
#      dry-run mode (cpu devices) takes the GPU machine's path with it: the prebuilt binary
#      started, the model exported by this venv's torch 2.11 (which has neither torchvision nor
#      NumPy, as on the GPU machine), the smoke test run on both (--stage smoke: the later stages
#      are py.gpu_check_dry's; the 240 s deadline only bounds a hang: the check ends after smoke).
#   tools/cuda_build.sh [BUILD_DIR]     (default build-cuda)
#   tools/cuda_build.sh --venv          only step 1 (tools/test.sh fetches it while the main build runs)
#   CUDA_BUILD_TESTS=0 tools/cuda_build.sh     build, link and the prebuilt binary; no tests
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
[ "${1:-}" = --venv ] && exit 0
TORCH_CMAKE=$("$venv/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
"$venv/bin/python" -c 'import torch; print("cuda_build: torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null
MODELS=()
if [ -f "$MAIN_BUILD/models/inception_tf2015_seed0.pt" ] && [ -f "$MAIN_BUILD/models/inception_tf2015_seed0_fused.pt" ]; then
  MODELS=(-DVECBENCH_MODEL_DIR="$(cd "$MAIN_BUILD/models" && pwd)")
fi
tools/device/pack_deps.sh
# shellcheck source=tools/device/gpu_env.sh
source tools/device/gpu_env.sh
sources=$(gpu_source_hash "$PWD")  # what the build below is made from (prebuilt.json records it)
mapfile -t GPU_ARGS < <(gpu_cmake_args "$PWD" "$TORCH_CMAKE" "$CUDA_HOME/bin/nvcc" "$venv/bin/python")
# Only the test files that hold the tests above.
CORE_FILES="test_device_decode.cpp;test_resize_formula.cpp"
TORCH_FILES="test_gpu_decode_cli.cpp;test_route.cpp;test_vectorize.cpp;test_progress_cli.cpp"
log=$(mktemp)
export TORCH_CUDA_ARCH_LIST=9.0  # LibTorch's cmake would otherwise list old architectures
# The tests' Python is Debian's (NumPy for the reference tests), not the venv's.
if ! cmake -S . -B "$BUILD" "${GPU_ARGS[@]}" -DVECBENCH_BUILD_TESTS=ON -DVECBENCH_PYTHON=/usr/bin/python3 \
  -DVECBENCH_CORE_TEST_FILES="$CORE_FILES" -DVECBENCH_TORCH_TEST_FILES="$TORCH_FILES" \
  "${MODELS[@]}" > "$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep -E "^-- vecbench" "$log" || true
# The point of this build: refuse to pass if CUDA, nvJPEG or the codecs silently dropped out (the
# checks gpu_check.sh's build_here makes on the GPU machine, where only the codecs are a warning).
if ! why=$(gpu_configure_verdict "$log" 0); then
  echo "cuda_build: $why" >&2
  exit 1
fi
rm -f "$log"
targets=(vecbench vecbench_torch)
[ "$TESTS" = 0 ] || targets+=(vecbench_core_tests vecbench_torch_tests)
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}"
"$BUILD/vecbench" devices
VECBENCH_SOURCES_HASH=$sources tools/device/prebuilt.sh "$BUILD" "$venv/bin/python"
# The hand-over, rehearsed: the GPU check's own command line in its dry-run mode (cpu devices),
# without --vecbench, so that it takes the GPU machine's path: the prebuilt binary started with
# gpu_lib_path, the model exported in the background by torch 2.11 (no torchvision, no NumPy),
# the smoke test on that binary and model (the later stages: tests/py/gpu_check_dry.py).
scratch=$(mktemp -d)
PYTHON="$venv/bin/python" tools/device/gpu_check.sh --devices cpu --stage smoke --deadline 240 --work "$scratch/work" "$scratch/out" \
  > /dev/null || true
if ! grep -q "^build	ok	[0-9]*	prebuilt: [0-9a-f]\{10\} started" "$scratch/work/stages.tsv" || ! grep -q "^smoke	ok" "$scratch/work/stages.tsv"; then
  cat "$scratch/out/gpu_check.md" "$scratch/work/logs/export.txt" 2>/dev/null; tail -n 40 "$scratch/out/gpu_check.log"
  echo "cuda_build: the GPU check's dry run did not start the prebuilt binary with a model exported by torch 2.11" >&2
  exit 1
fi
cut -f1-3 "$scratch/work/stages.tsv" | tr '\t' ' ' | sed 's/^/cuda_build: gpu_check dry run: /'
rm -rf "$scratch"
echo "cuda_build: the prebuilt GPU binary is .gpu-deps/prebuilt (tools/device/gpu_check.sh starts it first)"
if [ "$TESTS" = 0 ]; then
  echo "cuda_build: the CUDA build links"
else
  (cd "$BUILD" && ctest --output-on-failure -j"$JOBS" -L cuda)
  echo "cuda_build: the CUDA build links and its tests (label cuda) pass"
fi
