#!/usr/bin/env bash
# Run HERE (the Debian machine) before tools/device/gpu_check.sh: packs into .gpu-deps/ (ignored
# by git, carried to the GPU machine) what a GPU machine with only a pip PyTorch lacks:
# the header-only libraries (nlohmann/json, CLI11) and a pre-decoded uint8 .npy of real photos
# (the GPU machine may have no OpenCV C++ library, so it cannot decode image files itself).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
mkdir -p .gpu-deps/include
cp -r /usr/include/nlohmann /usr/include/CLI .gpu-deps/include/
list=$(mktemp)
ls /usr/share/doc/opencv-doc/examples/data/*.jpg | head -n 40 > "$list"
"$BUILD/vecbench" predecode --images "$list" --out .gpu-deps/real_photos.npy --resize tf-legacy
rm -f "$list"
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
du -sh .gpu-deps
