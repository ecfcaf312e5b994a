#!/bin/bash
# A/B of int8's s8 weights kept in the packed-weights file (results/int8/packed-s8-20261204.md): OLD binary (packs
# them at every start) vs NEW (takes them from the file), each with its own warmed weights folder, interleaved rounds;
# prints "round binary setup_s SECONDS whole_s SECONDS" (setup_s: vecbench's own start-up figure, --json)
OLD=${OLD:-/tmp/wt2/build/vecbench} NEW=${NEW:-./build/vecbench} ROUNDS=${ROUNDS:-9}
M=build/models/inception_tf2015_seed0.pt CAL=/tmp/vecbench-whole-job/int8-cal.json P=/tmp/vecbench-whole-job/photos100.txt
rm -rf /tmp/s8ab-wold /tmp/s8ab-wnew
run() {  # binary-name binary
  rm -rf /tmp/s8ab-out
  local w; w=$( { VECBENCH_WEIGHTS_DIR=/tmp/s8ab-w$1 /usr/bin/time -f "%e" $2 vectorize --images $P --out /tmp/s8ab-out \
    --precision int8 --calibration $CAL --model $M --quiet --json /tmp/s8ab.json > /dev/null; } 2>&1 | tail -1)
  echo "binary $1 setup_s $(python3 -c "import json; print(json.load(open('/tmp/s8ab.json'))['setup_s'])") whole_s $w"
}
run old $OLD > /dev/null; run new $NEW > /dev/null  # warm: each writes its packed-weights file
for r in $(seq 1 $ROUNDS); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for v in $order; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    echo "$r $(run $v $bin)"
  done
done
