#!/usr/bin/env bash
# Run HERE (the Debian machine) before tools/device/gpu_check.sh: packs into .gpu-deps/ (ignored
# by git, carried to the GPU machine; ~25 MB, under the 64 MiB a run may carry) what a GPU
# machine with only a pip PyTorch lacks:
#   - the header-only libraries (nlohmann/json, CLI11);
#   - nvJPEG (nvjpeg.h and libnvjpeg.so.13 from the nvidia-nvjpeg wheel of tools/cuda_build.sh's
#     venv), in case PyTorch's wheels there do not bring it;
#   - a pre-decoded uint8 .npy of real photos (the GPU machine may have no OpenCV C++ library,
#     so it cannot decode image files itself), and the JPEGs themselves (jpegs/) for the
#     decode runs where it can.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
mkdir -p .gpu-deps/include
cp -r /usr/include/nlohmann /usr/include/CLI .gpu-deps/include/
VENV=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/torch-cuda
NV=$(ls -d "$VENV"/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -n 1)
if [ -n "$NV" ] && [ -f "$NV/include/nvjpeg.h" ]; then
  mkdir -p .gpu-deps/nvjpeg/include .gpu-deps/nvjpeg/lib
  cp "$NV/include/nvjpeg.h" .gpu-deps/nvjpeg/include/
  cp "$NV"/lib/libnvjpeg.so* .gpu-deps/nvjpeg/lib/
else
  echo "pack_deps: no nvJPEG wheel in $VENV (run tools/cuda_build.sh first): the GPU build uses the machine's own"
fi
mkdir -p .gpu-deps/jpegs
cp /usr/share/doc/opencv-doc/examples/data/*.jpg .gpu-deps/jpegs/
list=$(mktemp)
ls /usr/share/doc/opencv-doc/examples/data/*.jpg | head -n 40 > "$list"
"$BUILD/vecbench" predecode --images "$list" --out .gpu-deps/real_photos.npy --resize tf-legacy
rm -f "$list"
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
du -sh .gpu-deps
