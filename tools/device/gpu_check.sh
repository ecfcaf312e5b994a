#!/usr/bin/env bash
# One prepared GPU check, for a machine with an NVIDIA GPU and a pip PyTorch (CUDA LibTorch)
# but possibly no Debian -dev packages, no OpenCV C++ library and no package registry. Its plan
# fits 10 minutes of one H200 with 16 cores (each experiment has a time budget and a timeout):
#   1. configures vecbench against the PyTorch install's LibTorch with CUDA and nvJPEG (carried
#      in .gpu-deps/nvjpeg by tools/device/pack_deps.sh where the machine has none), and libjpeg
#      and libpng (.gpu-deps/codec) for reading JPEG and PNG files without OpenCV, and builds
#      the CLI (-j all cores, ~2-3 min);
#   2. exports the default synthetic model there (a model file is ~90 MB: made, not copied);
#   3. runs, each as one interleaved `vecbench run` experiment verified against the CPU fp32
#      reference (fp32 within 1e-4, fp16 2e-2, bf16 1e-1: experiment/verify.hpp):
#      - gpu_model_fp32: every strategy on cuda:0 and cuda:0/3 (the seed's 3 virtual devices),
#        batch 1/32/128, synthetic input (the model ceiling; sequential batch 1 on cuda:0 is the
#        seed-style single-device loop, naive on cuda:0/3 the seed's mistake);
#      - gpu_model_fp16, gpu_model_bf16: sequential and data-parallel, batch 32/128;
#      - gpu_real_fp32: real photos pre-decoded here (the GPU machine may not decode files);
#   4. `vectorize` on real JPEGs (.gpu-deps/jpegs), --decode cpu against --decode gpu, 3 rounds
#      alternating, and --engine none (the decode ceiling) for each, on cuda:0/3 with a 1 GB cap
#      per virtual device, where the build can read JPEG files (libjpeg and libpng: the machine's
#      own or .gpu-deps/codec from pack_deps.sh; no OpenCV needed; the log says when it is skipped);
#   5. writes result JSON files, a markdown table (gpu_check.md) and the log into OUT_DIR.
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
NVJPEG=""
[ -f .gpu-deps/nvjpeg/include/nvjpeg.h ] && NVJPEG="-DVECBENCH_NVJPEG_ROOT=$PWD/.gpu-deps/nvjpeg"
CODEC=""
[ -d .gpu-deps/codec ] && CODEC="-DVECBENCH_CODEC_ROOT=$PWD/.gpu-deps/codec"
say "configure + build"
GEN=""; command -v ninja >/dev/null && GEN="-G Ninja"
cmake -S . -B build-gpu $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" $NVJPEG $CODEC \
  -DVECBENCH_DEPS_INCLUDE="$PWD/.gpu-deps/include" -DVECBENCH_PYTHON="$(command -v $PY)" \
  -DVECBENCH_BUILD_TESTS=OFF -DVECBENCH_BUILD_BENCH=OFF -DVECBENCH_HEADER_TESTS=OFF | tee build-gpu.cmake.log || exit 1
cmake --build build-gpu -j"$(nproc)" --target vecbench default_model || exit 1
VB=build-gpu/vecbench
$VB devices
$VB model info
REAL=.gpu-deps/real_photos.npy
[ -f "$REAL" ] || { echo "no $REAL (run tools/device/pack_deps.sh first): real-photo runs skipped"; REAL=""; }
write_exp() {  # name images-json precision matrix-json
  cat > "$OUT/$1.json" <<JSON
{ "name": "$1", "description": "GPU check ($3): tools/device/gpu_check.sh",
  "images": $2, "precision": "$3", "matrix": $4, "interleave": true,
  "warmup_batches": 5, "repetitions": 2, "decode_threads": 4, "prefetch_batches": 8, "time_budget_s": 120 }
JSON
}
ALL='[ { "strategy": ["sequential"], "devices": ["cuda:0"], "batch": [1, 32, 128] },
       { "strategy": ["naive", "sharded", "data-parallel", "mirrored"], "devices": ["cuda:0", "cuda:0/3"], "batch": [1, 32, 128] } ]'
HALF='[ { "strategy": ["sequential", "data-parallel"], "devices": ["cuda:0/3"], "batch": [32, 128] },
        { "strategy": ["sequential"], "devices": ["cuda:0"], "batch": [32, 128] } ]'
write_exp gpu_model_fp32 '{"synthetic": 512}' fp32 "$ALL"
write_exp gpu_model_fp16 '{"synthetic": 512}' fp16 "$HALF"
write_exp gpu_model_bf16 '{"synthetic": 512}' bf16 "$HALF"
[ -n "$REAL" ] && write_exp gpu_real_fp32 "{\"predecoded\": \"$REAL\"}" fp32 \
  '[ { "strategy": ["sequential", "data-parallel"], "devices": ["cuda:0", "cuda:0/3"], "batch": [1, 32] } ]'
for e in gpu_model_fp32 gpu_model_fp16 gpu_model_bf16 gpu_real_fp32; do
  [ -f "$OUT/$e.json" ] || continue
  say "experiment $e"
  timeout 150 $VB run "$OUT/$e.json" --results "$OUT/results" || echo "experiment $e failed or timed out"
done
say "decode: cpu vs gpu on real JPEGs"
JPEGS=.gpu-deps/jpegs
if grep -q "image decoding: JPEG+PNG" build-gpu.cmake.log && [ -d "$JPEGS" ]; then
  for round in 1 2 3; do
    for d in cpu gpu; do
      for eng in torchscript none; do
        timeout 60 $VB vectorize --images "$JPEGS" --out "$OUT/vec-$d" --format none --devices cuda:0/3 \
          --memory-cap-gb 1 --strategy data-parallel --batch 32 --decode-threads 12 --engine $eng --decode $d \
          --json "$OUT/decode_${d}_${eng}_r$round.json" --quiet || echo "vectorize --decode $d --engine $eng failed"
      done
    done
  done
else
  echo "skipped: this build cannot read JPEG files (no libjpeg/libpng: .gpu-deps/codec) or no $JPEGS"
fi
say "collect"
find "$OUT/results" -name '*.json' -exec cp {} "$OUT/" \; 2>/dev/null
rm -rf "$OUT/results" "$OUT"/vec-*
$PY tools/device/gpu_check_report.py "$OUT" > "$OUT/gpu_check.md" || echo "report failed"
say "done"
