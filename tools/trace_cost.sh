#!/usr/bin/env bash
# The cost of tracing in a whole run (issue #14): experiments/trace_cost.json run ROUNDS times
# with tracing off (--no-trace) and on, alternating (off, on, off, on, ...) so that a machine
# whose load drifts (a shared one) drifts under both alike; each mode's repetitions are then
# joined into one result file (OUT/off.json, OUT/on.json: samples in order, rep renumbered,
# summary recomputed) and compared with `vecbench compare` (expected verdict: SAME).
# usage: tools/trace_cost.sh [BUILD=build] [OUT=results/trace] [ROUNDS=5] [REPS=2]
# A binary built from a dirty tree is refused unless VECBENCH_ALLOW_DIRTY=1 (tools/provenance.py);
# paired.md's first line names the binary's commit and state.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PROV=$(python3 tools/provenance.py "$BUILD/vecbench" --markdown) || exit 1
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
PROV="$PROV" /usr/bin/python3 - "$tmp" "$OUT" "$ROUNDS" <<'PY'
import glob, json, math, os, statistics, sys
tmp, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def median_ci(v, level=0.95):
    """stats::median_ci: the order statistics [x(j), x(n+1-j)] with the largest j reaching `level`."""
    v, n = sorted(v), len(v)
    cdf = [sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n for k in range(n + 1)]
    j = 1
    while j + 1 <= n // 2 and 1 - 2 * cdf[j] >= level:
        j += 1
    med = statistics.median(v)
    return {"low": v[j - 1], "high": v[n - j], "level": 1 - 2 * cdf[j - 1],
            "rel_half": (v[n - j] - v[j - 1]) / 2 / abs(med) if med else 0.0}


def validity(run):
    """The verdict of experiment/validity.hpp over the joined samples (same thresholds)."""
    ips = dict(run["summary"]["images_per_s"])
    ips["rel_spread"] = 2 * run["summary"]["images_per_s_median_ci"]["rel_half"]
    foreign = max((s.get("foreign_cpu_share", -1) for s in run["samples"]), default=-1)
    steal = max((s.get("steal_share", -1) for s in run["samples"]), default=-1)
    causes, over = [], []
    if len(run["samples"]) > 1 and not ips["rel_spread"] <= 0.10:
        causes.append("spread"); over.append(f"repetitions spread {100 * ips['rel_spread']:.1f} % > 10.0 %")
    if foreign > 0.10:
        causes.append("foreign_cpu"); over.append(f"other processes took {100 * foreign:.1f} % of the CPU > 10.0 %")
    if steal > 0.05:
        causes.append("steal"); over.append(f"steal {100 * steal:.1f} % > 5.0 %")
    figures = f"spread {100 * ips['rel_spread']:.1f} %, other processes up to {100 * foreign:.1f} % of the CPU"
    return {"verdict": "noisy" if causes else "valid", "reason": "; ".join(over) if causes else figures,
            "causes": causes}


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
        run["summary"]["images_per_s_median_ci"] = median_ci([s["images_per_s"] for s in samples])
        if "validity" in run:
            run["validity"] = validity(run)
    with open(os.path.join(out, f"{mode}.json"), "w") as f:
        json.dump(joined, f, indent=2)
        f.write("\n")
# Paired view (robust to load drift): per round, median img/s on / off; then their median.
lines = [os.environ["PROV"], "", "| run | on/off per round (median img/s ratio) | median ratio |", "|---|---|---:|"]
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
