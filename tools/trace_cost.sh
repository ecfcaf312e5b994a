#!/usr/bin/env bash
# The cost of tracing in a whole run (issue #14): experiments/trace_cost.json run ROUNDS times
# with tracing off (--no-trace) and on, alternating (off, on, off, on, ...) so that a machine
# whose load drifts (a shared one) drifts under both alike; each mode's repetitions are then
# joined into one result file (OUT/off.json, OUT/on.json: samples in order, rep renumbered,
# summary recomputed) and compared with `vecbench compare` (expected verdict: SAME).
# usage: tools/trace_cost.sh [BUILD=build] [OUT=results/trace] [ROUNDS=5] [REPS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-results/trace}
ROUNDS=${3:-5}
REPS=${4:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$ROUNDS"); do
  "$BUILD/vecbench" run experiments/trace_cost.json --results "$tmp/off$i" --repetitions "$REPS" --no-trace >"$tmp/off$i.log" 2>&1
  "$BUILD/vecbench" run experiments/trace_cost.json --results "$tmp/on$i" --repetitions "$REPS" >"$tmp/on$i.log" 2>&1
done
mkdir -p "$OUT"
/usr/bin/python3 - "$tmp" "$OUT" "$ROUNDS" <<'PY'
import glob, json, os, statistics, sys
tmp, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def summary(v):
    med = statistics.median(v)
    return {"median": med, "min": min(v), "max": max(v), "count": len(v),
            "rel_spread": (max(v) - min(v)) / abs(med) if med else 0.0}
for mode in ("off", "on"):
    files = [glob.glob(f"{tmp}/{mode}{i}/trace_cost/*.json")[0] for i in range(1, rounds + 1)]
    docs = [json.load(open(f)) for f in files]
    joined = docs[0]
    joined["meta"]["extra"] = joined["meta"].get("extra", {})
    joined["meta"]["argv"] = ["tools/trace_cost.sh"] + sys.argv[1:]
    for ri, run in enumerate(joined["runs"]):
        samples = [s for d in docs for s in d["runs"][ri]["samples"]]
        for k, s in enumerate(samples):
            s["rep"] = k
            if "trace" in s:
                s["trace"].pop("file", None)  # the per-round trace files are not kept
        run["samples"] = samples
        run["summary"]["images_per_s"] = summary([s["images_per_s"] for s in samples])
        run["summary"]["wall_s"] = summary([s["wall_s"] for s in samples])
        run["summary"].pop("latency_ms", None)
    with open(os.path.join(out, f"{mode}.json"), "w") as f:
        json.dump(joined, f, indent=2)
        f.write("\n")
# Paired view (robust to load drift): per round, median img/s on / off; then their median.
lines = ["| run | on/off per round (median img/s ratio) | median ratio |", "|---|---|---:|"]
off = [json.load(open(glob.glob(f"{tmp}/off{i}/trace_cost/*.json")[0])) for i in range(1, rounds + 1)]
on = [json.load(open(glob.glob(f"{tmp}/on{i}/trace_cost/*.json")[0])) for i in range(1, rounds + 1)]
for ri, run in enumerate(off[0]["runs"]):
    ratios = [statistics.median(s["images_per_s"] for s in b["runs"][ri]["samples"]) /
              statistics.median(s["images_per_s"] for s in a["runs"][ri]["samples"]) for a, b in zip(off, on)]
    lines.append(f"| `{run['id']}` | {' '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.3f} |")
with open(os.path.join(out, "paired.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
"$BUILD/vecbench" compare "$OUT/off.json" "$OUT/on.json" | tee "$OUT/compare.md"
