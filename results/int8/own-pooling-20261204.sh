#!/bin/bash
# A/B of the int8/bf16 poolings (results/int8/own-pooling-20261204.md): OLD binary (oneDNN's poolings and reorders) vs NEW (vecbench's kernels), interleaved rounds; prints "round precision binary model IMG_PER_S whole_s SECONDS"
OLD=${OLD:-/tmp/wt/build/vecbench} NEW=${NEW:-./build/vecbench} ROUNDS=${ROUNDS:-9}
M=build/models/inception_tf2015_seed0.pt CAL=/tmp/vecbench-whole-job/int8-cal.json P=/tmp/vecbench-whole-job/photos100.txt
for r in $(seq 1 $ROUNDS); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for p in int8 bf16; do
    extra=""; [ $p = int8 ] && extra="--calibration $CAL"
    for v in $order; do
      bin=$OLD; [ $v = new ] && bin=$NEW
      rm -rf /tmp/ab1; m=$($bin vectorize --images synthetic:400 --format none --out /tmp/ab1 --precision $p $extra --model $M --quiet 2>&1 | grep -o 'img_per_s=[0-9.]*')
      rm -rf /tmp/ab2; w=$( { /usr/bin/time -f "%e" $bin vectorize --images $P --out /tmp/ab2 --precision $p $extra --model $M --quiet > /dev/null; } 2>&1 | tail -1)
      echo "$r $p $v model ${m#img_per_s=} whole_s $w"
    done
  done
done
