#!/bin/bash
# Inception-v3's 40 1x1 convolutions a forward (batch 4, fp32, bias + ReLU, one thread) with Debian's oneDNN 2.6
# against the PyPI wheel onednn-cpu-gomp 2023.2.0 (oneDNN 3.2: brgemm 1x1 kernels), in nChw16c (vecbench's layout)
# and, for 3.2, channels-last; bench/onednn_1x1_versions.cpp built twice, interleaved rounds, order rotating
# (results/kernels/onednn3-1x1-20261204.md). Prints each run's lines prefixed "round variant".
set -euo pipefail
cd "$(dirname "$0")/../.."
V=${ONEDNN3_VENV:-$HOME/.cache/vecbench/venvs/onednn3}
W=${WORK:-/tmp/onednn3-1x1}
mkdir -p "$W"
[ -f "$V/include/dnnl.hpp" ] || { /usr/bin/python3 -m venv "$V" && "$V/bin/pip" install -q onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0; }
g++ -O2 -std=c++17 -fopenmp bench/onednn_1x1_versions.cpp -o "$W/v26" -ldnnl
g++ -O2 -std=c++17 -fopenmp -I"$V/include" bench/onednn_1x1_versions.cpp -o "$W/v32" -L"$V/lib" -Wl,-rpath,"$V/lib" -ldnnl
variants=("v26 blocked" "v32 blocked" "v32 nhwc")
for r in $(seq 1 "${ROUNDS:-7}"); do
  for i in 0 1 2; do
    set -- ${variants[$(((i + r) % 3))]}
    "$W/$1" "$2" "${REPS:-15}" | sed "s/^/$r $1-$2 /"
  done
done
