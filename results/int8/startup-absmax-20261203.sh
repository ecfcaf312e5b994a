# int8 start-up A/B of two binaries (the per-channel weight scales computed in 16 lanes): whole
# process wall time (GNU time) of `--precision int8` on 8 synthetic inputs and on the 100 photos
# of tools/bench_whole_job.sh (its calibration, int8-cal.json), interleaved, alternating order;
# one shared weights cache (warmed first).
#   OLD=/tmp/wt/build/vecbench ROUNDS=15 bash results/int8/startup-absmax-20261203.sh
cd "$(dirname "$0")/../.."
OLD=${OLD:?the binary before} NEW=${NEW:-build/vecbench} ROUNDS=${ROUNDS:-15}
MODEL=build/models/inception_tf2015_seed0.pt W=/tmp/vecbench-whole-job CAL=/tmp/vecbench-whole-job/int8-cal.json
export VECBENCH_PROFILE_DIR=/tmp/no-profiles
for b in "$OLD" "$NEW"; do
  "$b" vectorize --model $MODEL --images synthetic:8 --out /tmp/ab-i --format none --no-resume --precision int8 \
    --calibration $CAL > /dev/null 2>&1
done
for r in $(seq 1 "$ROUNDS"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for set in synthetic:8 "$W/photos100.txt"; do
    s=$([ "$set" = synthetic:8 ] && echo start8 || echo photos100)
    for v in $order; do
      b=$OLD; [ $v = new ] && b=$NEW
      rm -rf /tmp/ab-i
      /usr/bin/time -f "%e %M" -o /tmp/ab-time "$b" vectorize --model $MODEL --images "$set" --out /tmp/ab-i --no-resume \
        --quiet --precision int8 --calibration $CAL > /dev/null 2>&1
      echo "r$r $s $v $(cat /tmp/ab-time)"
    done
  done
done
