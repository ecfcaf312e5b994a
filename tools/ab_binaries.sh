#!/bin/bash
# Interleaved A/B of two vecbench binaries on the oneDNN engine; prints "config binary img/s".
# usage: tools/ab_binaries.sh OLD_BINARY NEW_BINARY [ROUNDS] (results/fid/batch-independence-20261202.md)
# First prints each binary's commit and state ("# old: ..."); one built from a dirty tree is refused
# unless VECBENCH_ALLOW_DIRTY=1 (tools/provenance.py).
OLD=$1 NEW=$2 ROUNDS=${3:-9}
for v in old new; do
  bin=$OLD; [ $v = new ] && bin=$NEW
  line=$(python3 "$(dirname "$0")/provenance.py" "$bin" --label "$v") || exit 1
  echo "# $line"
done
for rep in $(seq 1 "$ROUNDS"); do
  for cfg in "default:" "seq-b1-2thr:--batch 1 --strategy sequential --devices cpu --threads 2" \
             "seq-b8-2thr:--batch 8 --strategy sequential --devices cpu --threads 2"; do
    name=${cfg%%:*} flags=${cfg#*:}
    order="old new"; [ $((rep % 2)) = 0 ] && order="new old"
    for v in $order; do
      bin=$OLD; [ $v = new ] && bin=$NEW
      rm -rf /tmp/ab-out
      r=$($bin vectorize --images synthetic:160 --out /tmp/ab-out --format none --engine onednn $flags --quiet 2>&1 |
          grep -o 'img_per_s=[0-9.]*')
      echo "$name $v ${r#img_per_s=}"
    done
  done
done
