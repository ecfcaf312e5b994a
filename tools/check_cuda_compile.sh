#!/usr/bin/env bash
# Compile-checks the CUDA code path of src/engine/torch_model.cpp (guarded by VECBENCH_WITH_CUDA)
# against LibTorch's c10/cuda headers and the CUDA toolkit headers in /usr/local/cuda, on a
# machine without a GPU or a CUDA LibTorch. Syntax and types only: nothing is linked or run.
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/cuda_runtime_api.h" ]; then
  echo "check_cuda_compile: no CUDA headers in $CUDA_HOME: skipped"
  exit 0
fi
if [ ! -f /usr/include/c10/cuda/CUDAStream.h ]; then
  echo "check_cuda_compile: LibTorch has no c10/cuda headers: skipped"
  exit 0
fi
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
# Debian's libtorch-dev ships c10/cuda without this generated header.
printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
${CXX:-g++} -std=c++17 -fsyntax-only -Wall -Wextra -DVECBENCH_WITH_CUDA=1 -Iinclude -I"$stub" \
  -I/usr/include/torch/csrc/api/include -I"$CUDA_HOME/include" src/engine/torch_model.cpp
echo "check_cuda_compile: the CUDA path of src/engine/torch_model.cpp compiles"
