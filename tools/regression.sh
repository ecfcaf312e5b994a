#!/usr/bin/env bash
# The CI regression stage: run experiments/ci.json and compare it with results/baseline/ci.json
# on machine-independent ratios (each strategy's throughput over `sequential` in the same file,
# repetition by repetition), never on absolute times. Fails (exit 1) when a ratio is
# significantly (Mann-Whitney, p < 0.05) and substantially (> THRESHOLD) worse.
#   tools/regression.sh [BUILD_DIR]            check
#   tools/regression.sh [BUILD_DIR] --refresh  run and make the result the new baseline
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
THRESHOLD=${THRESHOLD:-0.15}
OUT="$BUILD/ci-results"
rm -rf "$OUT/ci"
"$BUILD/vecbench" run experiments/ci.json --results "$OUT"
new=$(ls -t "$OUT"/ci/*.json | head -n 1)
if [ "${2:-}" = "--refresh" ]; then
  mkdir -p results/baseline
  cp "$new" results/baseline/ci.json
  echo "regression: baseline refreshed: results/baseline/ci.json (commit it)"
  exit 0
fi
"$BUILD/vecbench" compare results/baseline/ci.json "$new" --normalize-by strategy=sequential --threshold "$THRESHOLD"
