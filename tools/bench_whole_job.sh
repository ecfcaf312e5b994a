#!/usr/bin/env bash
# The whole-job benchmark of issue #13: whole-process wall time, peak RSS (GNU time's maximum
# resident set size) and start-up (process start to the first feature file written) of the
# default `vecbench vectorize` command on real photo sets of 60 and 100 images (opencv-doc,
# mixed JPEG/PNG), beside ONNX Runtime and OpenVINO model-only (fp32, batch 8, 2 threads:
# tools/peers/ort_bench.py, tools/peers/openvino_bench.py; OpenVINO where its venv exists)
# and the seed-style run (TorchScript engine, sequential, batch 1, .vc files); optionally an
# older binary's default command (OLD_VECBENCH) for "before". Rounds are interleaved (every
# command once per round), figures are medians; writes results/whole-job/<UTC stamp>.md and .json.
#   tools/bench_whole_job.sh                        # 3 rounds
#   ROUNDS=5 OLD_VECBENCH=/tmp/old/vecbench tools/bench_whole_job.sh
#     (OLD_VECBENCH may be a script: e.g. `exec ./build/vecbench "$@" --no-winograd` for "before"
#     an engine change that a flag turns off)
#   LARGE=DIR: also large photos (4-24 MP JPEG/PNG in DIR): the default command end to end against
#     the decode ceiling (--engine none, every core decoding) and the model ceiling (synthetic
#     input), each vecbench's own img/s; target end to end >= 0.9 / (1/decode + 1/model)
#   INT8=0: leave out the opt-in int8 route (measured by default where the CPU has VNNI): the default
#     command and the model-only rate with `--precision int8`, calibrated once on the 60 photos,
#     beside the peers' own int8 (tools/peers/quantize_int8.py on the same 60 photos, before the
#     rounds: ONNX Runtime's quantize_static where its venv has `onnx`, OpenVINO's NNCF where its
#     venv has `nncf`; tools/peers_setup.sh installs both)
#   BF16=0: leave out the opt-in bf16 route (measured by default where the CPU has AVX-512 BF16): the
#     default command and the model-only rate with `--precision bf16`, beside OpenVINO's bf16
#     (INFERENCE_PRECISION_HINT bf16, where its venv exists)
#   BASE=0: leave out the commands above (only LARGE / SEED_BATCHES / OLD_VECBENCH)
#   CPUID_MASK=avx2 (or avx512): every measured program (vecbench, both peers) sees CPUID without
#     the extensions that mask removes (tools/cpuid_mask.c through LD_AUDIT; needs the `cpuid_fault`
#     CPU flag): `avx2` runs the code an AVX2-only CPU (AMD Zen 3) takes, `avx512` that of an
#     AVX-512 CPU without AMX or AVX512-FP16 (Zen 4), on this machine's cores and caches; the
#     report says so. avx2 leaves out int8 and bf16 (no VNNI, no BF16 there)
#   SEED_BATCHES="1 4 16": also the seed's 3 virtual devices: data-parallel cpu/3 against
#     sequential cpu at each batch, whole process, 100 photos, .vc (target: never slower)
#   VECBENCH_ALLOW_DIRTY=1: measure a binary (or OLD_VECBENCH) built from a dirty tree, which is
#     refused otherwise (tools/provenance.py: the commit and state the binary reports); the report
#     then says dirty beside its figures
# Needs: a built ./build/vecbench, tools/peers_setup.sh (the onnxruntime venv and inc.onnx),
# opencv-doc. Run it on an otherwise idle machine: compare ratios within one run only (each run's
# steal share is recorded; the report gives the largest and the spread of vecbench's own runs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
VB=${VECBENCH:-./build/vecbench}
OLD=${OLD_VECBENCH:-}
MODEL=${MODEL:-build/models/inception_tf2015_seed0.pt}
DATA=${PHOTOS:-/usr/share/doc/opencv-doc/examples/data}
WORK=${WORK:-/tmp/vecbench-whole-job}
ORT_PY=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/onnxruntime/bin/python
OV_PY=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/openvino/bin/python  # optional (tools/peers_setup.sh)
NCNN_PY=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/ncnn/bin/python      # optional (tools/peers_setup.sh)
TORCH_PY=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}/torch/bin/python    # optional (tools/peers_setup.sh)
ONNX=${VECBENCH_PEERS_WORK:-/tmp/vecbench-peers}/inc.onnx
NCNN_MODEL=${VECBENCH_PEERS_WORK:-/tmp/vecbench-peers}/inc.ncnn.param
RESULTS=${RESULTS:-results/whole-job}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW="$WORK/raw-$STAMP.jsonl"
export VECBENCH_PROFILE_DIR="$WORK/no-profiles"  # the defaults, not a profile saved on this machine
[ -x "$ORT_PY" ] && [ -f "$ONNX" ] || { echo "bench_whole_job: run tools/peers_setup.sh first" >&2; exit 1; }
rm -rf "$WORK/copies" && mkdir -p "$WORK/copies" "$RESULTS"
# The binaries' commits, as they report them; a build from a dirty tree is refused unless VECBENCH_ALLOW_DIRTY=1
export PROVENANCE="$WORK/provenance-$STAMP.json" PROVENANCE_OLD=""
python3 tools/provenance.py "$VB" --json > "$PROVENANCE" || exit 1
if [ -n "$OLD" ]; then
  PROVENANCE_OLD="$WORK/provenance-old-$STAMP.json"
  python3 tools/provenance.py "$OLD" --json > "$PROVENANCE_OLD" || exit 1
fi

# Photo sets: 60 = the first 60 JPEG/PNG files of opencv-doc's data folder; 100 = all of them
# (91) and copies of the first ones under other names (distinct inputs) up to 100.
ls "$DATA"/*.jpg "$DATA"/*.png | sed -n 1,60p > "$WORK/photos60.txt"
ls "$DATA"/*.jpg "$DATA"/*.png | sed -n 1,100p > "$WORK/photos100.txt"
for f in $(head -n $((100 - $(wc -l < "$WORK/photos100.txt"))) "$WORK/photos60.txt"); do
  cp "$f" "$WORK/copies/copy-$(basename "$f")" && echo "$WORK/copies/copy-$(basename "$f")" >> "$WORK/photos100.txt"
done

MASK=()
if [ -n "${CPUID_MASK:-}" ]; then
  cc -O2 -shared -fPIC -o "$WORK/cpuid_mask.so" tools/cpuid_mask.c
  export CPUID_MASK CPUID_MASK_QUIET=1
  MASK=(env LD_AUDIT="$WORK/cpuid_mask.so")
  # The mask must hold in vecbench's oneDNN (it reads CPUID while its library loads)
  isa=$("${MASK[@]}" ONEDNN_VERBOSE=1 "$VB" vectorize --images synthetic:1 --out "$WORK/mask-check" --format none 2>&1 |
    grep -m1 'onednn_verbose,info,cpu,isa:' || true)
  case "$CPUID_MASK:$isa" in
    avx2:*"isa:Intel AVX2") INT8=0 BF16=0 ;;
    avx512:*AVX-512*) case "$isa" in *AMX*) isa="" ;; esac ;;
    *) isa="" ;;
  esac
  [ -n "$isa" ] || { echo "bench_whole_job: CPUID_MASK=$CPUID_MASK did not hold in vecbench's oneDNN" >&2; exit 1; }
  echo "CPUID masked to $CPUID_MASK; vecbench's oneDNN: ${isa#*isa:}"
fi

INT8=${INT8:-1}
if [ "$INT8" = 1 ] && grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  "${MASK[@]}" "$VB" calibrate --images "$WORK/photos60.txt" --out "$WORK/int8-cal.json" > "$WORK/cal.log" 2>&1 ||
    { cat "$WORK/cal.log" >&2; exit 1; }
  "$VB" predecode --images "$WORK/photos60.txt" --out "$WORK/photos60.npy" > /dev/null
  rm -f "$WORK/inc-int8-ort.onnx" "$WORK/inc-int8-ov.xml"
  if "$ORT_PY" -c "import onnx" 2> /dev/null; then
    "$ORT_PY" tools/peers/quantize_int8.py ort "$ONNX" "$WORK/photos60.npy" "$WORK/inc-int8-ort.onnx" > /dev/null 2>&1
  fi
  if [ -x "$OV_PY" ] && "$OV_PY" -c "import nncf" 2> /dev/null; then
    "$OV_PY" tools/peers/quantize_int8.py openvino "$ONNX" "$WORK/photos60.npy" "$WORK/inc-int8-ov.xml" > /dev/null 2>&1
  fi
else
  INT8=0
fi

BF16=${BF16:-1}
grep -qw avx512_bf16 /proc/cpuinfo || BF16=0

measure() {  # measure NAME OUT CMD...: one run, one JSON line in $RAW
  local name=$1 out=$2
  shift 2
  rm -rf "$out"
  local t0 first="" wall rss stat0 stat1
  t0=$(date +%s.%N)
  stat0=$(head -1 /proc/stat)
  if ! /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "${MASK[@]}" "$@" > "$WORK/last.log" 2>&1; then
    echo "bench_whole_job: $name failed:" >&2
    cat "$WORK/last.log" >&2
    exit 1
  fi
  [ -d "$out" ] && first=$(find "$out" -type f \( -name '*.npy' -o -name '*.vc' \) -printf '%T@\n' | sort -n | sed -n 1p)
  stat1=$(head -1 /proc/stat)
  read -r wall rss < "$WORK/time.txt"
  python3 - "$name" "$wall" "$rss" "$t0" "${first:-}" "$WORK/last.log" "$stat0" "$stat1" >> "$RAW" <<'EOF'
import json, sys
name, wall, rss, t0, first, log, stat0, stat1 = sys.argv[1:]
lines = [l.strip() for l in open(log) if "img_per_s" in l]
# /proc/stat's cpu line (user nice system idle iowait irq softirq steal ...): the hypervisor's share of this run
d = [int(b) - int(a) for a, b in zip(stat0.split()[1:9], stat1.split()[1:9])]
print(json.dumps({"name": name, "wall_s": float(wall), "rss_kb": int(rss),
                  "first_output_s": round(float(first) - float(t0), 3) if first else None,
                  "steal_share": round(d[7] / sum(d), 4) if sum(d) > 0 else None,
                  "line": lines[-1] if lines else ""}))
EOF
  echo "  $name: wall ${wall}s rss ${rss}KB"
}

# The peers at their best (issue #50): before the rounds, each peer runs a small grid of the
# settings its documentation recommends for throughput (10 s each; recorded as sweep-*): ONNX
# Runtime one session of 2 threads or one 1-thread session per core in as many processes, at
# batch 1, 4 and 8; OpenVINO's LATENCY hint (one request, 2 threads) and its THROUGHPUT hint (2
# streams, an async queue of 2 or 4 requests, or the plugin's own choice); ncnn (its model by
# pnnx from the ONNX file, fp32, Winograd on) one net of 2 threads or one 1-thread net per core;
# PyTorch 2 eager and torch.compile (Inductor, freezing), channels_last, 1 process x 2 threads or
# 2 x 1, at batch 8 and 4. The best of each is then measured in every round (ort-best, ov-best,
# ncnn-best, torch-best) beside the fixed settings of earlier reports (ort-b8-t2, ov-b8-t2), and
# the report takes the best peer of each round. TUNE_PEERS=0: none.
TUNE_PEERS=${TUNE_PEERS:-1}
declare -A SWEEP=()
best_of() {  # best_of PREFIX: the sweep entry of PREFIX with the highest img/s it printed
  python3 - "$RAW" "$1" << 'PY'
import json, re, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
rate = lambda r: float(re.search(r"img_per_s=([\d.]+)", r["line"]).group(1))
print(max((r for r in runs if r["name"].startswith(sys.argv[2])), key=rate)["name"])
PY
}
if [ "$TUNE_PEERS" = 1 ] && [ "${BASE:-1}" = 1 ]; then
  echo "sweep: the peers' settings"
  for cfg in "1 2 8" "1 2 4" "1 2 1" "2 1 8" "2 1 4" "2 1 1"; do
    read -r p t b <<< "$cfg"
    SWEEP[sweep-ort-p${p}t${t}b${b}]="$ORT_PY tools/peers/ort_bench.py $ONNX $b $t 15 $p"
    measure "sweep-ort-p${p}t${t}b${b}" "" "$ORT_PY" tools/peers/ort_bench.py "$ONNX" "$b" "$t" 10 "$p"
  done
  ORT_BEST=$(best_of sweep-ort-)
  echo "sweep: ONNX Runtime's best: $ORT_BEST"
  if [ -x "$OV_PY" ]; then
    for cfg in "LATENCY 8 auto 0" "LATENCY 4 auto 0" "THROUGHPUT 4 2 2" "THROUGHPUT 1 2 4" "THROUGHPUT 8 2 2" \
               "THROUGHPUT 4 auto 0"; do
      read -r h b st q <<< "$cfg"
      n="sweep-ov-${h,,}-b${b}-s${st}-q${q}"
      SWEEP[$n]="$OV_PY tools/peers/openvino_bench.py $ONNX $b 2 f32 15 $h $st $q"
      measure "$n" "" "$OV_PY" tools/peers/openvino_bench.py "$ONNX" "$b" 2 f32 10 "$h" "$st" "$q"
    done
    OV_BEST=$(best_of sweep-ov-)
    echo "sweep: OpenVINO's best: $OV_BEST"
  fi
  if [ -x "$NCNN_PY" ] && [ -f "$NCNN_MODEL" ]; then
    for cfg in "1 2" "2 1"; do
      read -r p t <<< "$cfg"
      SWEEP[sweep-ncnn-p${p}t${t}]="$NCNN_PY tools/peers/ncnn_bench.py $NCNN_MODEL $t 15 $p"
      measure "sweep-ncnn-p${p}t${t}" "" "$NCNN_PY" tools/peers/ncnn_bench.py "$NCNN_MODEL" "$t" 10 "$p"
    done
    NCNN_BEST=$(best_of sweep-ncnn-)
    echo "sweep: ncnn's best: $NCNN_BEST"
  fi
  if [ -x "$TORCH_PY" ]; then
    for cfg in "eager 1 2 8" "compile 1 2 8" "compile 1 2 4" "compile 2 1 8" "compile 2 1 4"; do
      read -r mode p t b <<< "$cfg"
      n="sweep-torch-${mode}-p${p}t${t}b${b}"
      SWEEP[$n]="$TORCH_PY tools/peers/torch_bench.py $mode $b $t 15 $p"
      measure "$n" "" "$TORCH_PY" tools/peers/torch_bench.py "$mode" "$b" "$t" 10 "$p"
    done
    TORCH_BEST=$(best_of sweep-torch-)
    echo "sweep: PyTorch's best: $TORCH_BEST"
  fi
fi

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS"
  if [ "${BASE:-1}" = 1 ]; then
    measure default-60 "$WORK/o60" "$VB" vectorize --images "$WORK/photos60.txt" --out "$WORK/o60"
    measure default-100 "$WORK/o100" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/o100"
    measure ort-b8-t2 "" "$ORT_PY" tools/peers/ort_bench.py "$ONNX" 8 2 15
    # shellcheck disable=SC2086  # the sweep's command line, split into its words
    if [ -n "${ORT_BEST:-}" ]; then measure ort-best "" ${SWEEP[$ORT_BEST]}; fi
    # shellcheck disable=SC2086
    if [ -n "${OV_BEST:-}" ]; then measure ov-best "" ${SWEEP[$OV_BEST]}; fi
    # shellcheck disable=SC2086
    if [ -n "${NCNN_BEST:-}" ]; then measure ncnn-best "" ${SWEEP[$NCNN_BEST]}; fi
    # shellcheck disable=SC2086
    if [ -n "${TORCH_BEST:-}" ]; then measure torch-best "" ${SWEEP[$TORCH_BEST]}; fi
    # vecbench's own model-only rate: the default route on synthetic input (its printed img/s)
    measure model-only-default "$WORK/m" "$VB" vectorize --images synthetic:96 --out "$WORK/m" --format none
    if [ "$INT8" = 1 ]; then
      measure int8-100 "$WORK/i100" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/i100" \
        --precision int8 --calibration "$WORK/int8-cal.json"
      measure model-only-int8 "$WORK/mi" "$VB" vectorize --images synthetic:96 --out "$WORK/mi" --format none \
        --precision int8 --calibration "$WORK/int8-cal.json"
      if [ -f "$WORK/inc-int8-ort.onnx" ]; then
        measure ort-int8-b8-t2 "" "$ORT_PY" tools/peers/ort_bench.py "$WORK/inc-int8-ort.onnx" 8 2 15
      fi
      if [ -f "$WORK/inc-int8-ov.xml" ]; then
        measure ov-int8-b8-t2 "" "$OV_PY" tools/peers/openvino_bench.py "$WORK/inc-int8-ov.xml" 8 2 f32 15
      fi
    fi
    if [ -x "$OV_PY" ]; then measure ov-b8-t2 "" "$OV_PY" tools/peers/openvino_bench.py "$ONNX" 8 2 f32 15; fi
    if [ "$BF16" = 1 ]; then
      measure bf16-100 "$WORK/b100" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/b100" --precision bf16
      measure model-only-bf16 "$WORK/mb" "$VB" vectorize --images synthetic:96 --out "$WORK/mb" --format none \
        --precision bf16
      if [ -x "$OV_PY" ]; then measure ov-bf16-b8-t2 "" "$OV_PY" tools/peers/openvino_bench.py "$ONNX" 8 2 bf16 15; fi
    fi
    measure default-100-vc "$WORK/v100" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/v100" --format vc
    measure seed-style-100-vc "$WORK/s100" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/s100" \
      --format vc --engine torchscript --strategy sequential --devices cpu --batch 1 --decode-threads 1
  fi
  if [ -n "${LARGE:-}" ]; then
    measure large-default "$WORK/L" "$VB" vectorize --images "$LARGE" --out "$WORK/L"
    measure large-decode "$WORK/Ld" "$VB" vectorize --images "$LARGE" --out "$WORK/Ld" --format none --engine none \
      --decode-threads "$(nproc)"
    measure large-model "$WORK/Lm" "$VB" vectorize --images "synthetic:$(( 4 * $(nproc) * 4 ))" --out "$WORK/Lm" \
      --format none
  fi
  for b in ${SEED_BATCHES:-}; do
    measure "seed-dp3-b$b" "$WORK/d$b" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/d$b" --format vc \
      --strategy data-parallel --devices cpu/3 --batch "$b" --force
    measure "seed-seq-b$b" "$WORK/q$b" "$VB" vectorize --images "$WORK/photos100.txt" --out "$WORK/q$b" --format vc \
      --strategy sequential --devices cpu --batch "$b"
  done
  if [ -n "$OLD" ]; then
    measure old-default-60 "$WORK/p60" "$OLD" vectorize --images "$WORK/photos60.txt" --out "$WORK/p60" --model "$MODEL"
    measure old-default-100 "$WORK/p100" "$OLD" vectorize --images "$WORK/photos100.txt" --out "$WORK/p100" \
      --model "$MODEL"
    measure old-default-100-vc "$WORK/pv100" "$OLD" vectorize --images "$WORK/photos100.txt" --out "$WORK/pv100" \
      --model "$MODEL" --format vc
  fi
done
"${MASK[@]}" "$VB" vectorize --images synthetic:1 --out "$WORK/route" --format none > "$WORK/route.log" 2>&1
grep -m1 "route from" "$WORK/route.log" > "$WORK/route.txt"
ORT_BEST=${ORT_BEST:-} OV_BEST=${OV_BEST:-} NCNN_BEST=${NCNN_BEST:-} TORCH_BEST=${TORCH_BEST:-} CPUID_MASK=${CPUID_MASK:-} python3 tools/bench_whole_job_report.py "$RAW" \
  "$RESULTS/$STAMP" "$(cat "$WORK/route.txt")" "$(nproc)" "$(uptime)" "$("$VB" --version 2>&1 | head -1)"
