cd /work/main
V=build/vecbench
OV=~/.cache/vecbench/venvs/openvino/bin/python
for r in 1 2 3; do
  for p in fp32 bf16; do
    $V vectorize --engine onednn --precision $p --devices cpu/2 --strategy data-parallel --batch 4 --images experiments/data/photos40.txt --out /tmp/o-$p --format none --no-resume --progress 0 2>/dev/null | grep -o "img_per_s=[0-9.]*" | sed "s/^/r$r $p photos /"
    $V vectorize --engine onednn --precision $p --devices cpu/2 --strategy data-parallel --batch 4 --images synthetic:40 --out /tmp/o-$p --format none --no-resume --progress 0 2>/dev/null | grep -o "img_per_s=[0-9.]*" | sed "s/^/r$r $p synthetic /"
  done
  for p in f32 bf16; do
    $OV tools/peers/openvino_bench.py /tmp/vecbench-peers/inc.onnx 8 2 $p 2>/dev/null | grep -o "img_per_s=[0-9.]*" | sed "s/^/r$r openvino-$p-b8 /"
  done
done
