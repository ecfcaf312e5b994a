# Start-up A/B of two binaries (issue #29): whole-process wall time of the default command on
# 8 synthetic inputs (one batch per replica: start-up plus one forward) and on the 100 photos of
# tools/bench_whole_job.sh, in interleaved, alternating pairs; the weights cache in a fresh folder
# (the first run of each binary writes its packed-weights file, untimed).
#   OLD=/tmp/wt/build/vecbench ROUNDS=15 bash results/whole-job/startup-xxh3-20261203.sh
cd "$(dirname "$0")/../.."
OLD=${OLD:?the binary before} NEW=${NEW:-build/vecbench} ROUNDS=${ROUNDS:-15}
MODEL=build/models/inception_tf2015_seed0.pt PHOTOS=/tmp/vecbench-whole-job/photos100.txt
export VECBENCH_WEIGHTS_DIR=/tmp/startup-ab-weights VECBENCH_PROFILE_DIR=/tmp/no-profiles
rm -rf "$VECBENCH_WEIGHTS_DIR"
for b in "$OLD" "$NEW"; do "$b" vectorize --model $MODEL --images synthetic:8 --out /tmp/ab-s --format none --no-resume > /dev/null 2>&1; done
one() {  # one LABEL BINARY IMAGES
  rm -rf /tmp/ab-s
  /usr/bin/time -f "%e" -o /tmp/ab-time "$2" vectorize --model $MODEL --images "$3" --out /tmp/ab-s --no-resume --quiet > /dev/null 2>&1
  echo "$1 $(cat /tmp/ab-time)"
}
for r in $(seq 1 "$ROUNDS"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for set in synthetic:8 "$PHOTOS"; do
    s=$([ "$set" = synthetic:8 ] && echo start8 || echo photos100)
    for v in $order; do
      b=$OLD; [ $v = new ] && b=$NEW
      one "r$r $s $v" "$b" "$set"
    done
  done
done
