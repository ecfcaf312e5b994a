# Start-up and RSS A/B of two binaries whose packed-weights files differ in format (issue #29):
# each binary has its own weights cache, warmed by a bf16 run and an fp32 run (so that its packed
# file holds both precisions' entries, as on a machine where bf16 was tried once); then the
# default (fp32) command's whole-process wall time and peak RSS (GNU time) on 8 synthetic inputs
# and on the 100 photos of tools/bench_whole_job.sh, in interleaved, alternating pairs.
#   OLD=/tmp/wt/build/vecbench ROUNDS=15 bash results/whole-job/startup-lazy-packed-20261203.sh
cd "$(dirname "$0")/../.."
OLD=${OLD:?the binary before} NEW=${NEW:-build/vecbench} ROUNDS=${ROUNDS:-15}
MODEL=build/models/inception_tf2015_seed0.pt PHOTOS=/tmp/vecbench-whole-job/photos100.txt
export VECBENCH_PROFILE_DIR=/tmp/no-profiles
rm -rf /tmp/ab-w-old /tmp/ab-w-new
for v in old new; do
  b=$OLD; [ $v = new ] && b=$NEW
  for p in bf16 fp32; do
    VECBENCH_WEIGHTS_DIR=/tmp/ab-w-$v "$b" vectorize --model $MODEL --images synthetic:8 --out /tmp/ab-s --format none \
      --no-resume --precision $p > /dev/null 2>&1
  done
  ls -l /tmp/ab-w-$v | grep packed | awk -v v=$v '{print "# " v " packed file: " $5 " bytes"}'
done
one() {  # one LABEL BINARY WEIGHTS_DIR IMAGES
  rm -rf /tmp/ab-s
  VECBENCH_WEIGHTS_DIR=$3 /usr/bin/time -f "%e %M" -o /tmp/ab-time "$2" vectorize --model $MODEL --images "$4" \
    --out /tmp/ab-s --no-resume --quiet > /dev/null 2>&1
  echo "$1 $(cat /tmp/ab-time)"
}
for r in $(seq 1 "$ROUNDS"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for set in synthetic:8 "$PHOTOS"; do
    s=$([ "$set" = synthetic:8 ] && echo start8 || echo photos100)
    for v in $order; do
      b=$OLD; [ $v = new ] && b=$NEW
      one "r$r $s $v" "$b" /tmp/ab-w-$v "$set"
    done
  done
done
