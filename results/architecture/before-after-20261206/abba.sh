#!/bin/bash
# ABBA-interleaved whole-job runs of the two binaries: img/s of each
cd /work/ba
run() { rm -rf /tmp/abba-out; local t0=$(date +%s.%N); $1 vectorize --images synthetic:160 --out /tmp/abba-out --format shards --progress 0 > /dev/null 2>&1; local t1=$(date +%s.%N); echo "$2 $(echo "160/($t1-$t0)" | bc -l)"; }
for i in 1 2 3 4 5; do
  run /work/before/vecbench before; run /work/main/build/vecbench after; run /work/main/build/vecbench after; run /work/before/vecbench before
done
