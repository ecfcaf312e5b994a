#!/usr/bin/env bash
# The store at a million inputs (issue #50): N distinct inputs (default 1,000,000: hard links to
# small JPEGs, 64x64 crops of opencv-doc photos, 10,000 to a folder, named by a list file)
# vectorized with `--engine none --format shards` (every step of the store, no network: zero vectors), and beside
# it the same at 30,000 and 100,000 inputs. Each step's wall time and peak RSS: the first run; a
# rerun with every input done (the resume scan); 10,000 new inputs added to the list; `vecbench
# verify`; `vecbench stats`; and two halves vectorized apart (`--num-shards 2 --shard-index i`,
# each into its own folder) then `vecbench merge --out ALL A B`. Not for CI (tens of minutes;
# gigabytes of disk: 8 KiB a vector). Run it on a quiet machine.
#   tools/bench_scale.sh [BUILD=build] [N=1000000] [OUT=results/scale/scale-<UTC date>.md]
#   WORK=DIR (default /tmp/vecbench-scale) holds the links and stores; removed at the end.
#   SIZES="30000 100000 N" (default): the sizes measured, in order.
#   VECBENCH_ALLOW_DIRTY=1: measure a binary built from a dirty tree (refused otherwise; the file says so)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${2:-1000000}
OUT=${3:-results/scale/scale-$(date -u +%Y%m%d).md}
WORK=${WORK:-/tmp/vecbench-scale}
VB=$BUILD/vecbench
DATA=/usr/share/doc/opencv-doc/examples/data
# The binary's commit and state as it reports them (tools/provenance.py): a dirty build is refused unless allowed
PROV=$(python3 tools/provenance.py "$VB" --markdown) || exit 1
rm -rf "$WORK" && mkdir -p "$WORK/links"
trap 'rm -rf "$WORK"' EXIT
# Small JPEGs (64x64 crops of opencv-doc photos; one per 50,000 inputs and at least 8: a file
# takes at most 65,000 hard links on ext4): the store's costs, not decoding, are measured
mkdir -p "$WORK/src"
/usr/bin/python3 - "$DATA" "$WORK/src" "$(( N / 50000 > 8 ? N / 50000 + 1 : 8 ))" <<'PY'
import os, sys
from PIL import Image
names = sorted(f for f in os.listdir(sys.argv[1]) if f.endswith(".jpg"))
for i in range(int(sys.argv[3])):
    im = Image.open(os.path.join(sys.argv[1], names[i % len(names)])).convert("RGB")
    s = min(im.size) // 2
    x = (i // len(names)) * 37 % (im.size[0] - s + 1)
    im.crop((x, 0, x + s, s)).resize((64, 64)).save(os.path.join(sys.argv[2], f"{i}.jpg"))
PY
mapfile -t SRC < <(ls "$WORK"/src/*.jpg)

links() {  # links FROM TO LIST: inputs FROM..TO-1 as hard links, their paths appended to LIST
  /usr/bin/python3 - "$1" "$2" "$3" "$WORK/links" "${SRC[@]}" <<'PY'
import os, sys
a, b, lst, root, src = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
with open(lst, "a") as f:
    for i in range(a, b):
        d = os.path.join(root, f"{i // 10000:04d}")
        if i % 10000 == 0 or i == a:
            os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"{i:07d}.jpg")
        if not os.path.exists(p):
            os.link(src[i % len(src)], p)
        f.write(p + "\n")
PY
}

rows=()
measure() {  # measure STEP N COMMAND...: a table row "STEP|N|wall s|inputs/s|peak RSS MB"
  local step=$1 n=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || {
    local rc=$?
    # vectorize's exit 2 (some inputs failed) is not expected here either
    echo "bench_scale: $step (N=$n) failed with exit $rc:" >&2
    tail -5 "$WORK/err" >&2
    exit 1
  }
  read -r wall kb <"$WORK/time"
  rows+=("$step|$n|$wall|$(python3 -c "print(f'{$n / max($wall, 1e-9):.0f}')")|$((kb / 1024))")
  echo "  $step N=$n: ${wall} s, $((kb / 1024)) MB" >&2
}

VEC=("$VB" vectorize --engine none --format shards --progress 0)

for n in ${SIZES:-30000 100000 $N}; do
  echo "N=$n" >&2
  rm -f "$WORK/list"
  links 0 "$n" "$WORK/list"
  store=$WORK/store-$n
  measure "first run" "$n" "${VEC[@]}" --images "$WORK/list" --out "$store"
  measure "rerun, every input done" "$n" "${VEC[@]}" --images "$WORK/list" --out "$store"
  links "$n" $((n + 10000)) "$WORK/list"
  measure "rerun: all done + 10,000 new (inputs: the new)" 10000 "${VEC[@]}" --images "$WORK/list" --out "$store"
  measure "verify" $((n + 10000)) "$VB" verify "$store" --progress 0
  measure "stats" $((n + 10000)) "$VB" stats "$store" --out "$WORK/stats.npz" --allow-synthetic-weights
  head -n "$n" "$WORK/list" >"$WORK/half-list"
  measure "half 1 of 2 (--num-shards 2)" $((n / 2)) "${VEC[@]}" --images "$WORK/half-list" --out "$WORK/h0" --num-shards 2 --shard-index 0
  measure "half 2 of 2" $((n / 2)) "${VEC[@]}" --images "$WORK/half-list" --out "$WORK/h1" --num-shards 2 --shard-index 1
  measure "merge --out ALL of the two halves" "$n" "$VB" merge --out "$WORK/all" "$WORK/h0" "$WORK/h1"
  rm -rf "$store" "$WORK/h0" "$WORK/h1" "$WORK/all"
done

mkdir -p "$(dirname "$OUT")"
{
  echo "# The store at scale: \`tools/bench_scale.sh $BUILD $N\` (issue #50)"
  echo
  echo "$(date -u +%Y-%m-%d). $PROV"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(df -h "$WORK" | awk 'NR==2 {print $1}') ($(stat -f -c %T "$WORK"))."
  echo "Inputs: hard links to ${#SRC[@]} small JPEGs (64x64 crops of opencv-doc photos), distinct names, 10,000 to a folder, named by a list file;"
  echo "\`vectorize --engine none --format shards\` (zero vectors: every step of the store, no network)."
  echo
  echo "| step | inputs | wall s | inputs/s | peak RSS MB |"
  echo "|---|---:|---:|---:|---:|"
  for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
} >"$OUT"
cat "$OUT"
