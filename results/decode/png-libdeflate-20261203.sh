#!/usr/bin/env bash
# The PNG fast path (libdeflate) against the binary before it: decode only (--engine none) on the
# whole-job benchmark's 100 photos and on its 33 PNGs, and the default command on the 100 photos
# and the opt-in int8 and bf16 routes (whole process, GNU time), interleaved rounds in alternating
# order.
#   OLD=/tmp/wt-old/build/vecbench ROUNDS=9 bash results/decode/png-libdeflate-20261203.sh
# Needs tools/bench_whole_job.sh's photo list (/tmp/vecbench-whole-job/photos100.txt).
set -euo pipefail
OLD=${OLD:?the binary before, built in a worktree}
NEW=${NEW:-./build/vecbench}
ROUNDS=${ROUNDS:-9}
LIST=${LIST:-/tmp/vecbench-whole-job/photos100.txt}
MODEL=build/models/inception_tf2015_seed0.pt
CAL=${CAL:-/tmp/vecbench-whole-job/int8-cal.json}  # tools/bench_whole_job.sh's calibration
PNGS=$(mktemp)
grep -i '\.png$' "$LIST" >"$PNGS"
OUT=$(mktemp -d)
run() {  # run NAME BINARY ARGS...: prints "NAME BINARY process_s pipeline_wall_s"
  local name=$1 bin=$2
  shift 2
  rm -rf "$OUT/o"
  /usr/bin/time -f "%e" -o "$OUT/time" "$bin" vectorize --out "$OUT/o" --model "$MODEL" "$@" >"$OUT/log" 2>&1
  echo "$name $bin $(cat "$OUT/time") $(grep -o 'wall_s=[0-9.]*' "$OUT/log" | tail -1 | cut -d= -f2)"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="$OLD $NEW"; else order="$NEW $OLD"; fi
  for b in $order; do
    run decode-100 "$b" --images "$LIST" --engine none --decode-threads 1 --format none
    run decode-png33 "$b" --images "$PNGS" --engine none --decode-threads 1 --format none
    run default-100 "$b" --images "$LIST"
    run int8-100 "$b" --images "$LIST" --precision int8 --calibration "$CAL"
    run bf16-100 "$b" --images "$LIST" --precision bf16
  done
done
