#!/bin/bash
# fp32 model-only, oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2: vecbench's AVX2 Winograd, oneDNN's AVX2 code),
# the binary measured on Zen 3 (d08226c, built in a worktree at OLD) vs HEAD (ab2a88d); interleaved, order alternating
# (results/kernels/avx2-route-20261204.md); prints "round route binary model IMG_PER_S whole_s SECONDS"
OLD=${OLD:-/tmp/wtz/build/vecbench} NEW=${NEW:-./build/vecbench} M=build/models/inception_tf2015_seed0.pt P=/tmp/vecbench-whole-job/photos100.txt
for r in $(seq 1 ${ROUNDS:-5}); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for v in $order; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    rm -rf /tmp/za; m=$(ONEDNN_MAX_CPU_ISA=AVX2 $bin vectorize --images synthetic:96 --format none --out /tmp/za --model $M --quiet 2>&1 | grep -o 'img_per_s=[0-9.]*')
    rm -rf /tmp/zb; w=$( { ONEDNN_MAX_CPU_ISA=AVX2 /usr/bin/time -f "%e" $bin vectorize --images $P --out /tmp/zb --model $M --quiet > /dev/null; } 2>&1 | tail -1)
    echo "$r fp32-avx2 $v model ${m#img_per_s=} whole_s $w"
  done
done
