#!/usr/bin/env bash
# One prepared GPU check, for a machine with an NVIDIA GPU and a pip PyTorch (CUDA LibTorch)
# but possibly no Debian -dev packages and no OpenCV C++ library. Within ~10 minutes it:
#   1. configures vecbench against the PyTorch install's LibTorch and builds the CLI,
#   2. exports the default synthetic model there (a model file is ~90 MB: made, not copied),
#   3. runs every strategy on cuda:0 and cuda:0/3 over synthetic input and over real photos
#      (pre-decoded here by tools/device/pack_deps.sh, since decoding needs OpenCV's C++ library),
#      fp32 and fp16, batch 1 and 32, verified against the CPU fp32 reference,
#   4. writes result JSON files, a markdown table and the log into OUT_DIR.
# Usage (on the GPU machine, from the repository root, with .gpu-deps/ carried along):
#   tools/device/gpu_check.sh OUT_DIR
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUT_DIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
t0=$(date +%s)
say() { echo "=== $* ($(( $(date +%s) - t0 )) s)"; }
PY=${PYTHON:-python3}
say "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
$PY -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
TORCH_PREFIX=$($PY -c 'import torch;print(torch.utils.cmake_prefix_path)')
say "configure + build"
GEN=""; command -v ninja >/dev/null && GEN="-G Ninja"
cmake -S . -B build-gpu $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  -DVECBENCH_DEPS_INCLUDE="$PWD/.gpu-deps/include" -DVECBENCH_PYTHON="$(command -v $PY)" \
  -DVECBENCH_BUILD_TESTS=OFF -DVECBENCH_BUILD_BENCH=OFF -DVECBENCH_HEADER_TESTS=OFF || exit 1
cmake --build build-gpu -j"$(nproc)" --target vecbench default_model || exit 1
VB=build-gpu/vecbench
$VB devices
$VB model info
REAL=.gpu-deps/real_photos.npy
[ -f "$REAL" ] || { echo "no $REAL (run tools/device/pack_deps.sh first): real-photo runs skipped"; REAL=""; }
write_exp() {  # name images-json precision batches [cuda_graphs]
  cat > "$OUT/$1.json" <<JSON
{ "name": "$1", "description": "GPU check: every strategy on cuda:0 and cuda:0/3 ($3)",
  "images": $2, "precision": "$3", "cuda_graphs": ${5:-false}, "channels_last": ${5:-false},
  "matrix": [ { "strategy": ["sequential"], "devices": ["cuda:0"], "batch": $4 },
              { "strategy": ["naive", "sharded", "data-parallel", "mirrored"], "devices": ["cuda:0", "cuda:0/3"], "batch": $4 } ],
  "warmup_batches": 5, "repetitions": 3, "decode_threads": 2, "prefetch_batches": 8, "time_budget_s": 150 }
JSON
}
write_exp gpu_synthetic_fp32 '{"synthetic": 512}' fp32 '[1, 32]'
write_exp gpu_synthetic_fp16 '{"synthetic": 512}' fp16 '[32]' true
[ -n "$REAL" ] && write_exp gpu_real_fp32 "{\"predecoded\": \"$REAL\"}" fp32 '[1, 32]'
for e in gpu_synthetic_fp32 gpu_synthetic_fp16 gpu_real_fp32; do
  [ -f "$OUT/$e.json" ] || continue
  say "experiment $e"
  timeout 170 $VB run "$OUT/$e.json" --results "$OUT/results" || echo "experiment $e failed or timed out"
done
say "collect"
find "$OUT/results" -name '*.json' -exec cp {} "$OUT/" \; 2>/dev/null
rm -rf "$OUT/results"
say "done"
