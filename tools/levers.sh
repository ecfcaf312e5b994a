#!/usr/bin/env bash
# Model-only throughput levers (issue: close the CPU gap), measured interleaved in one run:
# each round runs every variant once; medians over ROUNDS rounds. Model only: synthetic input,
# no decoding, no output. Writes a markdown table to stdout.
#   tools/levers.sh [BUILD_DIR] [ROUNDS] [IMAGES]
# SET=engines tools/levers.sh ...: the engine levers instead (fused model, oneDNN engine with and
# without Winograd, batch and thread splits).
# A binary built from a dirty tree is refused unless VECBENCH_ALLOW_DIRTY=1 (tools/provenance.py);
# the table's first line names the binary's commit and state.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}; ROUNDS=${2:-3}; N=${3:-48}
PROV=$(python3 tools/provenance.py "$BUILD/vecbench" --markdown) || exit 1
VB="$BUILD/vecbench vectorize --images synthetic:$N --out /tmp/vecbench-levers --format none --no-resume --no-profile --decode-threads 1"
JEMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
TCMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null || true)
declare -a NAMES CMDS
add() { NAMES+=("$1"); CMDS+=("$2"); }
FUSED="$BUILD/models/inception_tf2015_seed0_fused.pt"
if [ "${SET:-levers}" = engines ]; then
add "torchscript, default model, data-parallel cpu/2 b1" "$VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1"
add "torchscript, fused model, data-parallel cpu/2 b1" "$VB --engine torchscript --model $FUSED --strategy data-parallel --devices cpu/2 --batch 1"
add "torchscript, fused model, data-parallel cpu/2 b4" "$VB --engine torchscript --model $FUSED --strategy data-parallel --devices cpu/2 --batch 4"
add "onednn, no Winograd, data-parallel cpu/2 b1" "$VB --engine onednn --no-winograd --strategy data-parallel --devices cpu/2 --batch 1"
add "onednn, data-parallel cpu/2 b1"              "$VB --engine onednn --strategy data-parallel --devices cpu/2 --batch 1"
add "onednn, data-parallel cpu/2 b4"              "$VB --engine onednn --strategy data-parallel --devices cpu/2 --batch 4"
add "onednn bf16 (AVX-512 BF16 CPUs), data-parallel cpu/2 b4" "$VB --engine onednn --precision bf16 --strategy data-parallel --devices cpu/2 --batch 4"
add "onednn, sequential cpu b1 (2 threads)"       "$VB --engine onednn --strategy sequential --devices cpu --batch 1"
add "onednn, sequential cpu b8 (2 threads)"       "$VB --engine onednn --strategy sequential --devices cpu --batch 8"
else
add "sequential cpu b1, no optimize_for_inference" "$VB --engine torchscript --strategy sequential --devices cpu --batch 1 --no-optimize"
add "sequential cpu b1 (2 threads)"                "$VB --engine torchscript --strategy sequential --devices cpu --batch 1"
add "sequential cpu b8 (2 threads)"                "$VB --engine torchscript --strategy sequential --devices cpu --batch 8"
add "data-parallel cpu/2 b1 (2 x 1 thread)"        "$VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1"
add "data-parallel cpu/2 b4"                       "$VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 4"
add "data-parallel cpu/2 b1, channels_last"        "$VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1 --channels-last"
add "data-parallel cpu/2 b1, flush denormals"      "$VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1 --flush-denormal"
add "data-parallel cpu/2 b1, OMP_WAIT_POLICY=PASSIVE" "env OMP_WAIT_POLICY=PASSIVE $VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1"
add "sequential cpu b1, OMP_PROC_BIND=close"       "env OMP_PROC_BIND=close OMP_PLACES=cores $VB --engine torchscript --strategy sequential --devices cpu --batch 1"
[ -n "$JEMALLOC" ] && add "data-parallel cpu/2 b1, jemalloc" "env LD_PRELOAD=$JEMALLOC $VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1"
[ -n "$TCMALLOC" ] && add "data-parallel cpu/2 b1, tcmalloc" "env LD_PRELOAD=$TCMALLOC $VB --engine torchscript --strategy data-parallel --devices cpu/2 --batch 1"
fi
declare -A S
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!CMDS[@]}"; do
    v=$(${CMDS[$i]} 2>/dev/null | sed -n 's/.*img_per_s=\([0-9.]*\).*/\1/p')
    S[$i]="${S[$i]:-} ${v:-nan}"
    echo "round $r: ${NAMES[$i]}: ${v:-failed} img/s" >&2
  done
done
echo "$PROV"
echo
echo "| variant (model only, $N synthetic images, $ROUNDS interleaved rounds) | median img/s | samples |"
echo "|---|---|---|"
for i in "${!CMDS[@]}"; do
  med=$(echo ${S[$i]} | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
  echo "| ${NAMES[$i]} | $med | ${S[$i]} |"
done
