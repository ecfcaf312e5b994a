# shellcheck shell=bash
# The GPU machine's build and run settings, in one place (sourced, not run):
#   - tools/cuda_build.sh (CI's cuda-build stage) configures with them and makes the prebuilt GPU
#     binary, .gpu-deps/prebuilt/ (tools/device/prebuilt.sh);
#   - tools/device/gpu_check.sh runs that binary on the GPU machine, and builds with the same
#     settings there only when it was made from other sources (gpu_prebuilt_stale) or does not start.
# The GPU machine has a pip PyTorch (torch 2.11.0+cu130 and its nvidia-* wheels), nvcc, CMake and
# GCC, and nothing of Debian's -dev packages: no OpenCV, MPI, oneDNN, OpenBLAS/LAPACKE or libxxhash.
# What the build needs beyond that travels in .gpu-deps (tools/device/pack_deps.sh): the header-only
# libraries, nvJPEG, libjpeg/libpng/libdeflate.

# gpu_cmake_args ROOT TORCH_PREFIX NVCC PYTHON: the configure arguments, one a line
#   (mapfile -t args < <(gpu_cmake_args ...)). sm_90 (H100/H200) only: the lent machines' kind.
gpu_cmake_args() {
  local root=$1 torch=$2 nvcc=$3 py=$4
  printf '%s\n' -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$torch" "-DCMAKE_CUDA_COMPILER=$nvcc" \
    -DVECBENCH_CUDA_ARCHITECTURES=90 "-DVECBENCH_DEPS_INCLUDE=$root/.gpu-deps/include" "-DVECBENCH_PYTHON=$py" \
    -DVECBENCH_WITH_MPI=OFF -DVECBENCH_WITH_OPENCV=OFF -DVECBENCH_WITH_ONEDNN=OFF -DVECBENCH_WITH_FID=OFF \
    -DVECBENCH_WITH_XXH_DISPATCH=OFF -DVECBENCH_BUILD_BENCH=OFF -DVECBENCH_HEADER_TESTS=OFF
  if [ -f "$root/.gpu-deps/nvjpeg/include/nvjpeg.h" ]; then echo "-DVECBENCH_NVJPEG_ROOT=$root/.gpu-deps/nvjpeg"; fi
  if [ -d "$root/.gpu-deps/codec" ]; then echo "-DVECBENCH_CODEC_ROOT=$root/.gpu-deps/codec"; fi
}

# gpu_source_hash ROOT: a hash of the names and contents of every file the GPU binary is made
# from: its sources (CMakeLists.txt, src/, include/, the embedded quick.json, tools/vecbench.cpp,
# tools/build_info.cmake) and its build settings (this file, tools/cuda_build.sh,
# tools/device/prebuilt.sh). prebuilt.sh records it; gpu_check.sh uses the prebuilt binary only
# when the tree it runs in hashes the same. The files are those that travel (gpu_travelling_files).
GPU_SOURCE_PATHS="CMakeLists.txt experiments/quick.json tools/vecbench.cpp tools/build_info.cmake
  tools/device/gpu_env.sh tools/cuda_build.sh tools/device/prebuilt.sh src include"
gpu_source_hash() {
  # shellcheck disable=SC2086  # the paths, one word each
  gpu_travelling_files "$1" $GPU_SOURCE_PATHS | LC_ALL=C sort -z | (cd "$1" && xargs -0 sha256sum) | sha256sum |
    cut -c1-16
}

# gpu_travelling_files ROOT [PATH...]: the files under the PATHs (default: all) that travel to the
# GPU machine with the tree, relative to ROOT, NUL-separated: git's list where there is a
# repository (tracked, and untracked but not ignored: what the device tool sends), else every file.
gpu_travelling_files() {
  local root=$1
  shift
  (cd "$root" && if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- "$@"
  else
    find "${@:-.}" \( -type f -o -type l \) -print0
  fi)
}

# gpu_tree_kib ROOT: the KiB of the tree that travels (gpu_travelling_files; .gpu-deps is carried
# beside it, and counted by the callers).
gpu_tree_kib() {
  gpu_travelling_files "$1" | (cd "$1" && xargs -0 stat -c %s 2> /dev/null) | awk '{s += $1} END {print int(s / 1024)}'
}

# gpu_prebuilt_field DIR KEY: a string field of DIR/prebuilt.json (empty when it has none).
gpu_prebuilt_field() {
  sed -n "s/.*\"$2\": \"\([^\"]*\)\".*/\1/p" "$1/prebuilt.json" 2> /dev/null
}

# gpu_prebuilt_stale ROOT [DIR]: prints why and returns 0 when the prebuilt binary in DIR (default
# ROOT/.gpu-deps/prebuilt) was not made from the tree at ROOT (its recorded gpu_source_hash
# differs, or none is recorded); returns 1 when it was.
gpu_prebuilt_stale() {
  local dir=${2:-$1/.gpu-deps/prebuilt} made here commit
  made=$(gpu_prebuilt_field "$dir" sources)
  here=$(gpu_source_hash "$1")
  [ -n "$made" ] && [ "$made" = "$here" ] && return 1
  commit=$(gpu_prebuilt_field "$dir" commit)
  echo "the prebuilt binary was made from other sources (commit ${commit:0:10}, sources ${made:-unrecorded};" \
    "this tree's $here): run tools/cuda_build.sh and carry .gpu-deps again"
  return 0
}

# gpu_configure_verdict LOG ALLOW_NO_NVJPEG: what a configure log (gpu_cmake_args) says of the
# build, the one set of checks tools/cuda_build.sh (CI's cuda-build) and gpu_check.sh's build_here
# (on the GPU machine) share. Prints why and returns 1 when CUDA is off, or nvJPEG missing and
# ALLOW_NO_NVJPEG is 0; prints why and returns 2 when the codecs are missing (files cannot be
# read: cuda_build fails, gpu_check warns); 0 when all is there.
gpu_configure_verdict() {
  local log=$1 allow_no_nvjpeg=$2
  if ! grep -q "vecbench: LibTorch .*CUDA: ON" "$log"; then
    echo "CMake did not enable CUDA (LibTorch without CUDA?)"; return 1
  fi
  if ! grep -q "vecbench: nvJPEG: ON" "$log" && [ "$allow_no_nvjpeg" = 0 ]; then
    echo "CMake did not find nvJPEG (carry .gpu-deps with nvjpeg/, or --allow-no-nvjpeg)"; return 1
  fi
  if ! grep -q "image decoding: JPEG+PNG" "$log"; then
    echo "CMake did not find the carried codecs (.gpu-deps/codec): this build cannot read JPEG or PNG files"; return 2
  fi
  return 0
}

# gpu_lib_path ROOT PYTHON: the LD_LIBRARY_PATH that the prebuilt binary runs with: the pip
# PyTorch's own libraries (libtorch*, libc10*), its nvidia-* wheels' (libcudart, cuDNN, cuBLAS, ...),
# then the carried nvJPEG and codecs. Empty when PYTHON has no torch.
gpu_lib_path() {
  local root=$1 py=$2 dirs
  dirs=$(timeout 60 "$py" - 2>/dev/null <<'PY'
import glob, os, torch
sp = os.path.dirname(os.path.dirname(torch.__file__))
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
dirs += sorted(d for d in glob.glob(os.path.join(sp, "nvidia", "*", "lib")) if os.path.isdir(d))
print(":".join(dirs))
PY
) || return 0
  [ -n "$dirs" ] || return 0
  local d
  for d in "$root/.gpu-deps/nvjpeg/lib" "$root/.gpu-deps/codec/lib"; do
    [ -d "$d" ] && dirs="$dirs:$d"
  done
  echo "$dirs"
}

# The libraries the prebuilt binary and its LibTorch plugin may need (readelf -d): the C/C++
# runtime, the carried codecs and nvJPEG, zlib, and the pip PyTorch's CUDA 13 libraries.
GPU_ALLOWED_NEEDED="libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libdl.so.2 libpthread.so.0 librt.so.1
  ld-linux-x86-64.so.2 libz.so.1 libjpeg.so.62 libpng16.so.16 libdeflate.so.0 libnvjpeg.so.13 libcudart.so.13
  libtorch.so libtorch_cpu.so libtorch_cuda.so libc10.so libc10_cuda.so"
