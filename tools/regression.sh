#!/usr/bin/env bash
# The CI regression stage: run experiments/ci.json and compare it with results/baseline/ci.json
# on machine-independent ratios (each strategy's throughput over `sequential` in the same file,
# repetition by repetition), never on absolute times. Fails (exit 1) when a ratio is
# significantly (Mann-Whitney, p < 0.05) and substantially (> THRESHOLD) worse; a run measured
# on a busy machine is UNKNOWN, said and not failed.
#   tools/regression.sh [BUILD_DIR]            check
#   tools/regression.sh [BUILD_DIR] --refresh  run and make the result the new baseline (a binary built
#     from a dirty tree refused unless VECBENCH_ALLOW_DIRTY=1: tools/provenance.py)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
if [ "${2:-}" = "--refresh" ]; then python3 tools/provenance.py "$BUILD/vecbench" || exit 1; fi
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
# Exit 3: no run SLOWER, but a run was measured while other processes or the hypervisor took
# part of the machine (its validity verdict): the question cannot be answered there, which is
# not a regression; said loudly, not failed.
rc=0
"$BUILD/vecbench" compare results/baseline/ci.json "$new" --normalize-by strategy=sequential --threshold "$THRESHOLD" || rc=$?
if [ "$rc" = 3 ]; then
  echo "regression: UNKNOWN: measured on a busy machine (see the notes above): not judged"
  exit 0
fi
exit "$rc"
