#!/usr/bin/env bash
# CMMD at scale (issue #65): `vecbench metrics A B --cmmd` on two N x 768 float32 matrices of unit
# vectors (what CLIP ViT-L/14's image tower gives; default N = 50,000), its wall time and peak RSS;
# beside it, on a size a Python port can hold in this machine's memory (N_REF, default 20,000), the
# port itself: cmmd-pytorch's distance.mmd (torch, the float32 of CLIP's embeddings; its N x N
# matrices in memory) and google-research/cmmd's formula in float64 NumPy, with the values, so the
# table also shows they agree. Debian's Python (NumPy, torch); nothing to install.
# With FIXED_REF > 0, a fixed reference set of FIXED_REF rows against N generated ones, twice: the
# first run computes the reference's own term (FIXED_REF^2 / 2 kernel values) and keeps it in the
# cache folder; the second, another N rows (a second model's: the N pair's other matrix) against
# the same reference, reads it back and computes its own term and the cross term (what a user's
# second model against ImageNet costs).
# The other rows pass --no-cmmd-cache: every term computed.
# Not for CI (minutes; gigabytes). Run it on a quiet machine: nothing else on the cores.
#   tools/bench_cmmd.sh [BUILD=build] [N=50000] [N_REF=20000] [OUT=results/fid/cmmd-scale-<UTC date>.md] [FIXED_REF=0]
#   VECBENCH_ALLOW_DIRTY=1: measure a binary built from a dirty tree (refused otherwise; the file says so)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${2:-50000}
N_REF=${3:-20000}
OUT=${4:-results/fid/cmmd-scale-$(date -u +%Y%m%d).md}
FIXED_REF=${5:-0}
PROV=$(python3 tools/provenance.py "$BUILD/vecbench" --markdown) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make_pair() {  # make_pair N DIR: DIR/a.npy (generated) and DIR/b.npy (real), unit rows of 768 values
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, numpy as np
# unit vectors around two directions 0.1 apart (the generated set's a little wider), 768-d
n, d = int(sys.argv[1]), sys.argv[2]
for name, seed, shift, spread in (("a", 1, 0.1, 1.1), ("b", 2, 0.0, 1.0)):
    rng = np.random.default_rng(seed)
    m = np.lib.format.open_memmap(f"{d}/{name}.npy", mode="w+", dtype=np.float32, shape=(n, 768))
    for i in range(0, n, 5000):
        k = min(5000, n - i)
        x = rng.standard_normal((k, 768)).astype(np.float32) * spread
        x[:, 0] += 20.0
        x[:, 1] += 20.0 * shift
        m[i:i + k] = x / np.linalg.norm(x, axis=1, keepdims=True)
    m.flush()
PY
}

# shellcheck source=tools/bench_lib.sh
. tools/bench_lib.sh
measure() { bench_measure bench_cmmd 1 "$@"; }  # measure NAME COMMAND...: "NAME|wall s|peak RSS MB|stdout's last line"

port='import sys, numpy as np, torch
x, y = (torch.from_numpy(np.load(sys.argv[1] + f)) for f in ("/a.npy", "/b.npy"))
x_sq, y_sq = torch.diag(torch.matmul(x, x.T)), torch.diag(torch.matmul(y, y.T))
gamma = 1 / (2 * 10**2)
k_xx = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(x, x.T) + x_sq.unsqueeze(1) + x_sq.unsqueeze(0))))
k_xy = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(x, y.T) + x_sq.unsqueeze(1) + y_sq.unsqueeze(0))))
k_yy = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(y, y.T) + y_sq.unsqueeze(1) + y_sq.unsqueeze(0))))
print("CMMD %.10g" % float(1000 * (k_xx + k_yy - 2 * k_xy)))'
reference='import sys, numpy as np
x, y = (np.load(sys.argv[1] + f).astype(np.float64) for f in ("/a.npy", "/b.npy"))
xx, yy = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y)
g = 1 / (2 * 10**2)
k = lambda u, v, nu, nv: np.mean(np.exp(-g * (-2 * u @ v.T + nu[:, None] + nv[None, :])))
print("CMMD %.10g" % (1000 * (k(x, x, xx, xx) + k(y, y, yy, yy) - 2 * k(x, y, xx, yy))))'

mkdir -p "$tmp/big" "$tmp/ref"
make_pair "$N_REF" "$tmp/ref"
rows=()
rows+=("$(measure "vecbench metrics --cmmd, N=$N_REF" "$BUILD/vecbench" metrics "$tmp/ref/a.npy" "$tmp/ref/b.npy" --cmmd --no-cmmd-cache)")
rows+=("$(measure "cmmd-pytorch's distance.mmd (torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), float32), N=$N_REF" /usr/bin/python3 -c "$port" "$tmp/ref")")
rows+=("$(measure "google-research/cmmd's formula in float64 NumPy, N=$N_REF" /usr/bin/python3 -c "$reference" "$tmp/ref")")
rm -rf "$tmp/ref"
make_pair "$N" "$tmp/big"
rows+=("$(measure "vecbench metrics --cmmd, N=$N" "$BUILD/vecbench" metrics "$tmp/big/a.npy" "$tmp/big/b.npy" --cmmd --no-cmmd-cache)")
if [ "$FIXED_REF" -gt 0 ]; then
  mkdir -p "$tmp/fixed"
  make_pair "$FIXED_REF" "$tmp/fixed"
  rm "$tmp/fixed/a.npy"
  rows+=("$(VECBENCH_CACHE="$tmp/terms" measure "vecbench metrics --cmmd, $N generated x $FIXED_REF reference, first \
model: every term computed, the reference's kept" "$BUILD/vecbench" metrics "$tmp/big/a.npy" "$tmp/fixed/b.npy" --cmmd)")
  rows+=("$(VECBENCH_CACHE="$tmp/terms" measure "vecbench metrics --cmmd, $N generated x $FIXED_REF reference, second \
model (other rows): the reference's own term read back" "$BUILD/vecbench" metrics "$tmp/big/b.npy" "$tmp/fixed/b.npy" --cmmd)")
fi

mkdir -p "$(dirname "$OUT")"
{
  echo "# CMMD at scale: \`vecbench metrics A B --cmmd\` (issue #65)"
  echo
  echo "Command: \`tools/bench_cmmd.sh $BUILD $N $N_REF $OUT $FIXED_REF\` on $(date -u +%Y-%m-%d)."
  echo "$PROV"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, ISA: $(grep -o -w -E 'avx512f|avx512_vnni|amx_tile|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')."
  echo "Inputs: two float32 matrices [N, 768] of unit vectors as .npy files (Gaussian noise around a direction, the generated set's turned by 0.1 and 10 % wider), one after the other: the N_REF pair for the first three rows, the N pair for the next$([ "$FIXED_REF" -gt 0 ] && echo ", its generated side against a reference of FIXED_REF = $FIXED_REF rows (made as the real side) for the last two")."
  echo "Peak RSS includes the two matrices themselves (N x 768 x 4 B each: $((N_REF * 3072 / 1048576)) MB at N=$N_REF, $((N * 3072 / 1048576)) MB at N=$N). The ports hold N x N matrices (float32: $((N_REF * N_REF * 4 / 1048576)) MB each at N=$N_REF, $((N * N * 4 / 1048576)) MB at N=$N)."
  echo
  echo "| run | wall s | peak RSS MB | value printed |"
  echo "|---|---|---|---|"
  for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
} >"$OUT"
cat "$OUT"
