#!/usr/bin/env bash
# Run HERE (the Debian machine) before tools/device/gpu_check.sh: packs into .gpu-deps/ (ignored
# by git, carried to the GPU machine; ~25 MB, under the 64 MiB a run may carry) what a GPU
# machine with only a pip PyTorch lacks:
#   - the header-only libraries (nlohmann/json, CLI11, xxHash);
#   - nvJPEG (nvjpeg.h and libnvjpeg.so.13 from the nvidia-nvjpeg wheel of tools/cuda_build.sh's
#     venv), in case PyTorch's wheels there do not bring it;
#   - libjpeg-turbo and libpng with their headers (Debian's libjpeg.so.62 and libpng16.so.16, and
#     zlib's headers, which CMake's FindPNG wants) in codec/{include,lib}: a build without OpenCV
#     still decodes JPEG and PNG files with them (VECBENCH_CODEC_ROOT);
#   - a pre-decoded uint8 .npy of real photos (the GPU machine may have no OpenCV C++ library),
#     and the JPEGs themselves (jpegs/) for the decode runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
mkdir -p .gpu-deps/include
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/xxhash.h .gpu-deps/include/
VENV=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/torch-cuda
NV=$(ls -d "$VENV"/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -n 1)
if [ -n "$NV" ] && [ -f "$NV/include/nvjpeg.h" ]; then
  mkdir -p .gpu-deps/nvjpeg/include .gpu-deps/nvjpeg/lib
  cp "$NV/include/nvjpeg.h" .gpu-deps/nvjpeg/include/
  cp "$NV"/lib/libnvjpeg.so* .gpu-deps/nvjpeg/lib/
else
  echo "pack_deps: no nvJPEG wheel in $VENV (run tools/cuda_build.sh first): the GPU build uses the machine's own"
fi
CODEC=.gpu-deps/codec
ARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
rm -rf "$CODEC" && mkdir -p "$CODEC/include" "$CODEC/lib"
for h in jpeglib.h jmorecfg.h jerror.h png.h pngconf.h pnglibconf.h zlib.h zconf.h; do
  cp -L "/usr/include/$h" "$CODEC/include/"
done
cp -L "/usr/include/$ARCH/jconfig.h" "$CODEC/include/"  # Debian keeps it in the multiarch folder
LIB=/usr/lib/$ARCH
# Plain copies under each name the build and the loader look for (no symbolic links, which a
# carried folder may not keep). zlib: FindPNG wants it; the GPU machine has libz.so.1 anyway.
for name in libjpeg.so libjpeg.so.62 libpng.so libpng16.so libpng16.so.16 libz.so libz.so.1; do
  cp -L "$LIB/$name" "$CODEC/lib/"
done
mkdir -p .gpu-deps/jpegs
cp /usr/share/doc/opencv-doc/examples/data/*.jpg .gpu-deps/jpegs/
list=$(mktemp)
ls /usr/share/doc/opencv-doc/examples/data/*.jpg | head -n 40 > "$list"
"$BUILD/vecbench" predecode --images "$list" --out .gpu-deps/real_photos.npy --resize tf-legacy
rm -f "$list"
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
du -sh .gpu-deps
