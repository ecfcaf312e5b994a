#!/usr/bin/env bash
# The k-NN metrics at scale (issue #49): `vecbench metrics A B --prc --prdc` on two N x 2048
# float32 feature matrices (default N = 50,000; non-negative like pool_3, on a low-dimensional
# manifold so that neighbourhoods mean something; A shifted so that the figures are not 0 or 1),
# its wall time and peak RSS; beside it, on a size the Python references can hold (N_REF, default
# 10,000), prdc's compute_prdc, torch-fidelity's prc (both code paths) and vecbench on the same
# matrices, with their figures, so that the table also shows they agree.
# Not for CI (minutes; gigabytes). Run it on a quiet machine: nothing else on the cores.
#   tools/bench_metrics.sh [BUILD=build] [N=50000] [N_REF=10000] [OUT=results/fid/metrics-scale-<UTC date>.md]
#   VECBENCH_ALLOW_DIRTY=1: measure a binary built from a dirty tree (refused otherwise; the file says so)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${2:-50000}
N_REF=${3:-10000}
OUT=${4:-results/fid/metrics-scale-$(date -u +%Y%m%d).md}
PY=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/fid-tools/bin/python
# The binary's commit and state as it reports them (tools/provenance.py): a dirty build is refused unless allowed
PROV=$(python3 tools/provenance.py "$BUILD/vecbench" --markdown) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make_pair() {  # make_pair N DIR: DIR/a.npy (generated) and DIR/b.npy (real), written in chunks
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, numpy as np
# pool_3-like: non-negative, on a 32-dimensional manifold (a fixed random map of 32 latents) plus
# noise, so that neighbourhoods mean something; the generated set's latents are shifted and wider
n, d = int(sys.argv[1]), sys.argv[2]
basis = np.random.default_rng(0).standard_normal((32, 2048)).astype(np.float32) / np.sqrt(32)
for name, seed, shift, scale in (("a", 1, 0.25, 1.2), ("b", 2, 0.0, 1.0)):
    rng = np.random.default_rng(seed)
    m = np.lib.format.open_memmap(f"{d}/{name}.npy", mode="w+", dtype=np.float32, shape=(n, 2048))
    for i in range(0, n, 5000):
        k = min(5000, n - i)
        z = (rng.standard_normal((k, 32)).astype(np.float32) * scale + shift) @ basis
        m[i:i + k] = np.maximum(z, 0) * 0.5 + 0.05 * np.abs(rng.standard_normal((k, 2048), dtype=np.float32))
    m.flush()
PY
}

# shellcheck source=tools/bench_lib.sh
. tools/bench_lib.sh
measure() { bench_measure bench_metrics 3 "$@"; }  # measure NAME COMMAND...: "NAME|wall s|peak RSS MB|stdout's last 3 lines"

mkdir -p "$tmp/big" "$tmp/ref"
make_pair "$N_REF" "$tmp/ref"
rows=()
rows+=("$(measure "vecbench metrics --prc --prdc, N=$N_REF" "$BUILD/vecbench" metrics "$tmp/ref/a.npy" "$tmp/ref/b.npy" --prc --prdc)")
prdc_code="import sys, json, numpy as np
from prdc import compute_prdc
r = compute_prdc(real_features=np.load(sys.argv[1] + '/b.npy'), fake_features=np.load(sys.argv[1] + '/a.npy'), nearest_k=5)
print(json.dumps({k: float(v) for k, v in r.items()}))"
rows+=("$(measure "prdc 0.2 compute_prdc (k=5), N=$N_REF" "$PY" -c "$prdc_code" "$tmp/ref")")
for ram in False True; do
  prc_code="import sys, json, numpy as np, torch
from torch_fidelity.metric_prc import prc_features_to_metric
a, b = (torch.from_numpy(np.load(sys.argv[1] + f)) for f in ('/a.npy', '/b.npy'))
print(json.dumps(prc_features_to_metric(a, b, prc_neighborhood=3, prc_batch_size=10000, save_cpu_ram=$ram, verbose=False)))"
  rows+=("$(measure "torch-fidelity 0.4 prc (k=3, save_cpu_ram=$ram), N=$N_REF" "$PY" -c "$prc_code" "$tmp/ref")")
done
make_pair "$N" "$tmp/big"
rm -rf "$tmp/ref"
rows+=("$(measure "vecbench metrics --prc --prdc, N=$N" "$BUILD/vecbench" metrics "$tmp/big/a.npy" "$tmp/big/b.npy" --prc --prdc)")

mkdir -p "$(dirname "$OUT")"
{
  echo "# k-NN metrics at scale: \`vecbench metrics A B --prc --prdc\` (issue #49)"
  echo
  echo "Command: \`tools/bench_metrics.sh $BUILD $N $N_REF\` on $(date -u +%Y-%m-%d)."
  echo "$PROV"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores, ISA: $(grep -o -w -E 'avx512f|avx512_vnni|amx_tile|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')."
  echo "Inputs: two float32 matrices [N, 2048] as .npy files: ReLU of a fixed random map of 32 Gaussian latents, x 0.5, plus 0.05 |noise| (the generated set's latents x 1.2 + 0.25)."
  echo "Peak RSS includes the two matrices themselves (N x 2048 x 4 B each: $((N_REF * 8192 / 1048576)) MB at N=$N_REF, $((N * 8192 / 1048576)) MB at N=$N)."
  echo
  echo "| run | wall s | peak RSS MB | figures printed |"
  echo "|---|---|---|---|"
  for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
} >"$OUT"
cat "$OUT"
