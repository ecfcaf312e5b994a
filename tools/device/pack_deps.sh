#!/usr/bin/env bash
# Run HERE (the Debian machine, a fresh clone will do) before tools/device/gpu_check.sh; CI's
# cuda-build stage (tools/cuda_build.sh) runs it, then adds .gpu-deps/prebuilt/ (the prebuilt GPU
# binary, tools/device/prebuilt.sh). Packs into .gpu-deps/ (ignored by git; every device call must
# name it in carry: [".gpu-deps"]; ~16 MB with the binary, and with the tree under the 48 MiB
# checked there, of the 64 MiB a call may send) what a GPU machine with only a pip PyTorch lacks:
#   - include/: the header-only libraries (nlohmann/json, CLI11, xxHash; Debian's, tools/setup.sh);
#   - nvjpeg/: nvjpeg.h and libnvjpeg.so.13 from the nvidia-nvjpeg wheel of tools/cuda_build.sh's
#     venv, in case the machine's CUDA and PyTorch wheels do not bring it;
#   - codec/: libjpeg-turbo, libpng (and libdeflate, where set up) with their headers (Debian's libjpeg.so.62 and
#     libpng16.so.16, and zlib's headers, which CMake's FindPNG wants): a build without OpenCV
#     still reads JPEG and PNG files with them (VECBENCH_CODEC_ROOT);
#   - jpegs/: real photos (opencv-doc's sample photos), from which the check makes its ~2,000
#     decode inputs and its verification set on the machine.
# Each part it cannot make is skipped with what to run to make it; the exit status is 1 when the
# check could not build there without it (the headers), else 0.
#   tools/device/pack_deps.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
DEPS=.gpu-deps
status=0
say() { echo "pack_deps: $*"; }
mkdir -p "$DEPS"

# Header-only libraries: the check's build fails in seconds without them.
rm -rf "$DEPS/include" && mkdir -p "$DEPS/include"
missing=""
for h in nlohmann CLI xxhash.h; do
  if [ -e "/usr/include/$h" ]; then cp -r "/usr/include/$h" "$DEPS/include/"; else missing="$missing $h"; fi
done
if [ -n "$missing" ]; then
  say "no$missing in /usr/include: run tools/setup.sh (nlohmann-json3-dev, libcli11-dev, libxxhash-dev); the GPU build needs them"
  status=1
fi

# nvJPEG from tools/cuda_build.sh's venv.
VENV=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/torch-cuda
NV=""
for d in "$VENV"/lib/python3*/site-packages/nvidia/cu13; do [ -d "$d" ] && NV=$d && break; done
rm -rf "$DEPS/nvjpeg"
if [ -n "$NV" ] && [ -f "$NV/include/nvjpeg.h" ] && ls "$NV"/lib/libnvjpeg.so* >/dev/null 2>&1; then
  mkdir -p "$DEPS/nvjpeg/include" "$DEPS/nvjpeg/lib"
  cp "$NV/include/nvjpeg.h" "$DEPS/nvjpeg/include/"
  cp -L "$NV"/lib/libnvjpeg.so* "$DEPS/nvjpeg/lib/"
else
  say "skipped nvJPEG: no nvidia-nvjpeg wheel in $VENV. To carry it, run tools/cuda_build.sh first"
  say "  (CUDA_BUILD_TESTS=0 tools/cuda_build.sh: the venv and a link check), then this script again."
  say "  Without it the check's build uses the GPU machine's own nvJPEG, and stops in seconds if there is none"
  say "  (gpu_check.sh --allow-no-nvjpeg builds without GPU decoding instead)."
fi

# libjpeg and libpng with their headers.
CODEC=$DEPS/codec
ARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
LIB=/usr/lib/$ARCH
rm -rf "$CODEC"
codec_ok=1
for f in /usr/include/jpeglib.h /usr/include/jmorecfg.h /usr/include/jerror.h /usr/include/png.h \
         /usr/include/pngconf.h /usr/include/pnglibconf.h /usr/include/zlib.h /usr/include/zconf.h \
         "/usr/include/$ARCH/jconfig.h" "$LIB/libjpeg.so" "$LIB/libpng16.so" "$LIB/libz.so"; do
  [ -e "$f" ] || { codec_ok=0; say "no $f"; }
done
if [ "$codec_ok" = 1 ]; then
  mkdir -p "$CODEC/include" "$CODEC/lib"
  for h in jpeglib.h jmorecfg.h jerror.h png.h pngconf.h pnglibconf.h zlib.h zconf.h; do
    cp -L "/usr/include/$h" "$CODEC/include/"
  done
  cp -L "/usr/include/$ARCH/jconfig.h" "$CODEC/include/"  # Debian keeps it in the multiarch folder
  # Plain copies under each name the build and the loader look for (no symbolic links, which a
  # carried folder may not keep). zlib: FindPNG wants it; the GPU machine has libz.so.1 anyway.
  for name in libjpeg.so libjpeg.so.62 libpng.so libpng16.so libpng16.so.16 libz.so libz.so.1; do
    [ -e "$LIB/$name" ] && cp -L "$LIB/$name" "$CODEC/lib/"
  done
  # libdeflate, where set up (libdeflate-dev): the PNG fast path (src/input/png_fast.cpp); without
  # it the GPU build decodes every PNG with libpng, same pixels.
  if [ -e /usr/include/libdeflate.h ] && [ -e "$LIB/libdeflate.so" ]; then
    cp -L /usr/include/libdeflate.h "$CODEC/include/"
    for name in libdeflate.so libdeflate.so.0; do
      [ -e "$LIB/$name" ] && cp -L "$LIB/$name" "$CODEC/lib/"
    done
  fi
else
  say "skipped codec/: run tools/setup.sh (libjpeg62-turbo-dev, libpng-dev, zlib1g-dev); without it the"
  say "  GPU build reads no image files and the check's decode and verification stages fail"
fi

# Real photos.
PHOTOS=/usr/share/doc/opencv-doc/examples/data
rm -rf "$DEPS/jpegs"
if ls "$PHOTOS"/*.jpg >/dev/null 2>&1; then
  mkdir -p "$DEPS/jpegs"
  cp "$PHOTOS"/*.jpg "$DEPS/jpegs/"
else
  say "skipped jpegs/: no photos in $PHOTOS: run tools/setup.sh (opencv-doc); without them the check"
  say "  skips its decode stage and verifies on synthetic input"
fi
rm -f "$DEPS/real_photos.npy"  # an earlier version's; the check decodes the photos itself now

git check-ignore -q "$DEPS" 2>/dev/null || say "warning: $DEPS is not ignored by git (.gitignore lists /.gpu-deps/)"
size=$(du -sk "$DEPS" | cut -f1)
say "$DEPS: $((size / 1024)) MiB (with the tree, at most 64 MiB travel to the GPU machine)"
if [ "$size" -gt $((48 * 1024)) ]; then
  say "$DEPS is over 48 MiB: too much to carry with the tree"
  status=1
fi
exit "$status"
