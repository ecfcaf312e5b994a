#!/usr/bin/env bash
# Installs every Debian 12 package vecbench needs (idempotent: does nothing when all are there).
# Runs apt-get as root, through sudo when not root.
set -euo pipefail
PACKAGES=(
  build-essential cmake git pkg-config
  libtorch-dev python3-torch python3-torchvision
  libdnnl-dev                   # oneDNN headers: the --engine onednn backend (same libdnnl LibTorch uses)
  libxxhash-dev                 # xxHash: the oneDNN engine's weights cache checksum
  libopenblas0-pthread          # without it libtorch resolves BLAS to the slow reference libblas
  libopenblas-dev liblapacke-dev  # FID/KID: CBLAS and LAPACKE (vecbench stats, vecbench fid)
  libopencv-dev python3-opencv opencv-doc   # decoding; opencv-doc ships the real sample photos
  libjpeg62-turbo-dev libpng-dev            # direct JPEG/PNG decoding (src/input/codec.cpp), the libraries OpenCV links
  libdeflate-dev                # the PNG fast path's inflate (src/input/png_fast.cpp)
  libjpeg-turbo-progs           # djpeg: the reference for --decode tf's fast-IDCT pixels in the decode tests
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3-numpy python3-pil python3-matplotlib python3-jsonschema
  python3-scipy                 # the FID reference of tests/py/fid_check.py (SciPy 1.10: a correct sqrtm)
  python3-tqdm python3-requests # torch-fidelity and clean-fid import them (their venv sees Debian's: tools/peers_setup.sh)
  python3-sklearn               # prdc imports it (the k-NN metrics' reference: tests/py/metrics_tools.py)
  python3-regex python3-wcwidth # OpenAI's clip package (clean-fid's CLIP-FID) imports regex, and ftfy, which needs wcwidth
  python3-venv                  # the PyPI peers and the TF fidelity test (tools/peers_setup.sh)
  libopenmpi-dev openmpi-bin    # MPI: mpirun -np R vecbench ... (optional: without it, --shard-index)
  clang-format
  ccache                        # compiles cached between runs (CMakeLists.txt VECBENCH_CCACHE, tools/test.sh)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists once per run: .ci/run has just updated them.
[ "${VECBENCH_APT_UPDATED:-0}" = 1 ] || $SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
echo "setup: done"
