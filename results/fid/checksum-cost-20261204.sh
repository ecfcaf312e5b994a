#!/usr/bin/env bash
# What checking every stored vector's checksum costs `vecbench stats` (issue #46), at 50,000
# vectors: the same store read with its manifest's checksums and without them (a copy whose lines
# have no "xxh3", as lines written before checksums: read unchecked), by the same binary,
# alternating, ROUNDS rounds. The vectors are `--engine none`'s zeros (XXH3-64 and the float64
# statistics cost the same for any values). Prints one line per round and the medians.
#   results/fid/checksum-cost-20261204.sh [BUILD] [WORK] [ROUNDS]
set -euo pipefail
BUILD=${1:-build}
WORK=${2:-/tmp/vecbench-checksum-cost}
ROUNDS=${3:-7}
VB=$BUILD/vecbench
mkdir -p "$WORK"
if [ ! -f "$WORK/with/manifest.jsonl" ]; then
  "$VB" vectorize --images synthetic:50000 --engine none --format shards --out "$WORK/with" --quiet
fi
rm -rf "$WORK/without"
cp -r "$WORK/with" "$WORK/without"
sed -i 's/,"xxh3":"[0-9a-f]*"//' "$WORK/without/manifest.jsonl"
echo "checksums in with/: $(grep -c '"xxh3"' "$WORK/with/manifest.jsonl"), in without/: $(grep -c '"xxh3"' "$WORK/without/manifest.jsonl" || true)"
lscpu | grep -E "Model name|CPU family|^Model:" | tr -s ' '
/usr/bin/python3 - "$VB" "$WORK" "$ROUNDS" <<'EOF'
import statistics, subprocess, sys, time
vb, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = {"with": [], "without": []}
for r in range(rounds):
    for name in (("with", "without") if r % 2 == 0 else ("without", "with")):
        t0 = time.perf_counter()
        subprocess.run([vb, "stats", f"{work}/{name}", "--out", f"{work}/{name}.npz", "--allow-synthetic-weights"],
                       check=True, capture_output=True)
        t[name].append(time.perf_counter() - t0)
    print(f"round {r + 1}: checked {t['with'][-1]:.3f} s, unchecked {t['without'][-1]:.3f} s, "
          f"ratio {t['with'][-1] / t['without'][-1]:.3f}")
m = {k: statistics.median(v) for k, v in t.items()}
ratios = sorted(a / b for a, b in zip(t["with"], t["without"]))
print(f"median: checked {m['with']:.3f} s, unchecked {m['without']:.3f} s; per-round ratio median "
      f"{statistics.median(ratios):.3f} (range {ratios[0]:.3f}-{ratios[-1]:.3f}); "
      f"{(m['with'] - m['without']) / 50000 * 1e6:.2f} us per vector")
EOF
