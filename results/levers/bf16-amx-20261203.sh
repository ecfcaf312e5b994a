# bf16 on AMX (needs a build: build/models/ holds the model that both binaries load): the oneDNN engine's channels-last bf16 (AMX kernels) against the binary before it
# (blocked layout: oneDNN's AVX-512 bf16 code), fp32 and OpenVINO f32/bf16, 3 interleaved rounds.
#   OLD=/tmp/wt/build/vecbench bash results/levers/bf16-amx-20261203.sh
cd "$(dirname "$0")/../.."
V=build/vecbench
OLD=${OLD:?the binary before the change}
OV=~/.cache/vecbench/venvs/openvino/bin/python
export VECBENCH_PROFILE_DIR=/tmp/no-profiles
run() {  # run LABEL BINARY PRECISION IMAGES
  $2 vectorize --model build/models/inception_tf2015_seed0.pt --engine onednn --precision $3 --devices cpu/2 --strategy data-parallel --batch 4 --images $4 \
    --out /tmp/o-bf16amx --format none --no-resume --progress 0 2> /dev/null | grep -o "img_per_s=[0-9.]*" | sed "s/^/r$r $1 /"
}
for r in 1 2 3; do
  for set in experiments/data/photos40.txt synthetic:40; do
    s=$([ "$set" = synthetic:40 ] && echo synthetic || echo photos)
    run "fp32 $s" $V fp32 $set
    run "bf16 $s" $V bf16 $set
    run "bf16-before $s" $OLD bf16 $set
  done
  for p in f32 bf16; do
    $OV tools/peers/openvino_bench.py /tmp/vecbench-peers/inc.onnx 8 2 $p 2> /dev/null | grep -o "img_per_s=[0-9.]*" | sed "s/^/r$r openvino-$p-b8 /"
  done
done
