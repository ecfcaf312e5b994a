#!/usr/bin/env bash
# The prepared GPU check: one lent machine (an NVIDIA GPU, 16 cores, a pip PyTorch; 10 minutes a
# command, 15 minutes of device time in all, at most 8 files back from $OUT). It cannot waste that
# chance on its own account:
#   - a deadline: it ends itself by DEADLINE_S (default 540) seconds after it started; every step
#     runs under `timeout -k KILL <the time its stage has left>`; a stage that cannot get its
#     minimum is skipped, and the log and the report say so;
#   - at most 4 files in OUT: gpu_check.log (written directly, no pipe), gpu_check.md (the report,
#     rewritten after every stage) and gpu_check.tar.gz (every result JSON, experiment file and
#     stage record, rewritten after every stage), each by a dot-temp in OUT and a rename; all
#     scratch (inputs, outputs, the work files) lives in a work folder outside OUT;
#   - the most important measurements first: the smoke test, the fp32 model matrix (data-parallel
#     on cuda:0/3 against the seed-style loop, sequential cuda:0 batch 1, and naive on cuda:0/3),
#     fp32 verification on a small set, GPU against CPU decoding end to end, fp16 and bf16, their
#     verification, then the rest of the fp32 matrix (sharded, mirrored, data-parallel on cuda:0).
# Throughput is measured as throughput: ~2,000 inputs per run (synthetic for the model matrix;
# distinct-name hard links of the carried photos for decoding), warm-up before the clock,
# `"verify": false` in the throughput matrices; verification runs on a small separate set.
#
#   tools/device/gpu_check.sh [--stage all|build|measure] [--devices cuda|cpu] [--deadline S]
#                             [--vecbench PATH] [--model PATH] [--build-dir DIR] [--work DIR]
#                             [--photos DIR] [--allow-no-nvjpeg] OUT
#   --stage build    configure + build (only `vecbench` and the plain default model), smoke test
#   --stage measure  the measurements, reusing the build of an earlier `--stage build` (same
#                    machine: the build folder and its work folder are kept between calls)
#   --stage all      both (default)
#   --stage configure  the build's checks and its configure alone (a rehearsal: CUDA, nvJPEG, the
#                    carried headers and codec found?), e.g. here against tools/cuda_build.sh's venv:
#                    PYTHON=~/.cache/vecbench/venvs/torch-cuda/bin/python ... --stage configure
#   --stage compile  configure and build as on the GPU machine, no GPU needed (CI's rehearsal:
#                    tools/cuda_build.sh); BUILD_CAP_S overrides the build stage's cap (420 s)
#   --devices cpu    the dry run: cpu and cpu/3 (--force) in place of cuda:0 and cuda:0/3, a few
#                    images, fp32 only (fp16/bf16 need CUDA), host decoding only; with
#                    --vecbench build/vecbench it builds nothing (CI runs it: tests/py/gpu_check_dry.py)
#   --vecbench PATH  an existing vecbench (the build stage is skipped); --model PATH its model
#   --photos DIR     the JPEGs to make inputs from (default .gpu-deps/jpegs from pack_deps.sh)
# On the GPU machine, with .gpu-deps/ carried (tools/device/pack_deps.sh here): docs/gpu.md.
set -uo pipefail
T0=$(date +%s)
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD

STAGE=all DEVICES=cuda VB="" MODEL="" BUILD="" WORK="" PHOTOS="" ALLOW_NO_NVJPEG=0 OUT=""
DEADLINE_S=${DEADLINE_S:-540}
usage() { sed -n '/^#   tools\/device\/gpu_check.sh/,/^# On the GPU/p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) STAGE=${2:?}; shift 2 ;;
    --devices) DEVICES=${2:?}; shift 2 ;;
    --deadline) DEADLINE_S=${2:?}; shift 2 ;;
    --vecbench) VB=${2:?}; shift 2 ;;
    --model) MODEL=${2:?}; shift 2 ;;
    --build-dir) BUILD=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --photos) PHOTOS=${2:?}; shift 2 ;;
    --allow-no-nvjpeg) ALLOW_NO_NVJPEG=1; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu_check: unknown option $1" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT=$1; shift ;;
  esac
done
[ -n "$OUT" ] || usage
case "$STAGE" in all|build|measure|configure|compile) ;; *) echo "gpu_check: --stage all|build|measure|configure|compile" >&2; exit 2 ;; esac
case "$DEVICES" in cuda|cpu) ;; *) echo "gpu_check: --devices cuda|cpu" >&2; exit 2 ;; esac
case "$DEADLINE_S" in ''|*[!0-9]*) echo "gpu_check: --deadline takes whole seconds" >&2; exit 2 ;; esac
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
exec 3>&1  # the caller's stdout: one line per stage, and the report at the end
exec >>"$OUT/gpu_check.log" 2>&1
PY=${PYTHON:-python3}

# ---- plan: the two modes --------------------------------------------------------------------
# Batch sizes (JSON lists): B_ALL the seed-style loop (its first, 1), sequential and data-parallel;
# B_NAIVE naive in the first matrix; B_MID the decode runs' batch; B_BIG the half precisions and
# the rest of the matrix; B_LAST naive in the rest. MAXREP: repetitions added while the budget lasts.
if [ "$DEVICES" = cuda ]; then
  DEV1=cuda:0 DEV3=cuda:0/3 B_ALL="1, 32, 128" B_NAIVE="1, 32" B_MID=32 B_BIG="32, 128" B_LAST=128
  N_MODEL=2000 N_DECODE=2000 N_VERIFY=64 ROUNDS=3 DTHREADS=12 WARMUP=5 MAXREP=3 KILL=10 FORCE=()
  PRECISIONS="fp32 fp16 bf16" DECODES="gpu cpu"
else
  DEV1=cpu DEV3=cpu/3 B_ALL="1, 2" B_NAIVE="1" B_MID=2 B_BIG="2" B_LAST=2
  N_MODEL=4 N_DECODE=12 N_VERIFY=3 ROUNDS=1 DTHREADS=1 WARMUP=0 MAXREP=1 KILL=5 FORCE=(--force)
  PRECISIONS="fp32" DECODES="cpu"
fi
RESERVE=$((KILL + 5))  # kept back for the last step's kill and the final report and archive
# stage: cap_s(cuda) cap_s(cpu) min_s
declare -A CAP_CUDA=([build]=${BUILD_CAP_S:-420} [smoke]=90 [fp32]=170 [verify_fp32]=60 [decode]=150 [fp16]=75 [bf16]=75
                     [verify_half]=60 [fp32_more]=90)
declare -A CAP_CPU=([build]=900 [smoke]=60 [fp32]=90 [verify_fp32]=60 [decode]=60 [fp16]=60 [bf16]=60
                    [verify_half]=60 [fp32_more]=60)
declare -A MIN_S=([build]=60 [smoke]=10 [fp32]=15 [verify_fp32]=10 [decode]=10 [fp16]=15 [bf16]=15
                  [verify_half]=10 [fp32_more]=10)
if [ "$DEVICES" = cuda ]; then
  MIN_S[smoke]=20 MIN_S[fp32]=45 MIN_S[verify_fp32]=20 MIN_S[decode]=40 MIN_S[fp16]=30 MIN_S[bf16]=30
  MIN_S[verify_half]=20 MIN_S[fp32_more]=30
fi

if [ -n "$VB" ]; then
  [ -x "$VB" ] || { echo "gpu_check: --vecbench $VB is not an executable" | tee /dev/fd/3; exit 1; }
  VB=$(cd "$(dirname "$VB")" && pwd)/$(basename "$VB")
  [ -n "$WORK" ] || WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
else
  BUILD=${BUILD:-build-gpu}
  case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
  VB=$BUILD/vecbench
  [ -n "$WORK" ] || WORK=$BUILD/gpu_check.work  # kept between the build and the measure call
fi
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$OUT"/*) echo "gpu_check: the work folder must be outside OUT" | tee /dev/fd/3; exit 2 ;; esac
if [ -z "$PHOTOS" ]; then
  PHOTOS=.gpu-deps/jpegs
  [ "$DEVICES" = cpu ] && [ ! -d "$PHOTOS" ] && PHOTOS=/usr/share/doc/opencv-doc/examples/data
fi
MODEL_ARG=() MODEL_JSON=""
if [ -n "$MODEL" ]; then MODEL_ARG=(--model "$MODEL"); MODEL_JSON="\"model\": \"$MODEL\","; fi

# ---- records: stages.tsv (stage, status, seconds, note), the report and the archive ----------
now() { date +%s; }
left() { echo $((T0 + DEADLINE_S - $(now))); }
say() {
  local line
  line="=== $* ($(($(now) - T0)) s, $(left) s left)"
  echo "$line"
  echo "$line" >&3
}
record() {  # stage status seconds note
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$WORK/stages.tsv"
  say "$1: $2${4:+ ($4)}"
}
publish() {  # the report and the archive, each by a dot-temp in OUT and a rename
  local list
  list=$WORK/.archive.list
  (cd "$WORK" && find . \( -path ./photos -o -path ./jpegs -o -path ./vec \) -prune -o \
     -type f \( -name '*.json' -o -name '*.tsv' -o -name '*.txt' -o -name '*.log' \) -print | sort) > "$list"
  if timeout 30 tar -czf "$OUT/.gpu_check.tar.gz.tmp" -C "$WORK" -T "$list"; then
    mv -f "$OUT/.gpu_check.tar.gz.tmp" "$OUT/gpu_check.tar.gz"
  else
    rm -f "$OUT/.gpu_check.tar.gz.tmp"; echo "gpu_check: the archive failed"
  fi
  if timeout 30 "$PY" "$ROOT/tools/device/gpu_check_report.py" "$WORK" > "$OUT/.gpu_check.md.tmp"; then
    mv -f "$OUT/.gpu_check.md.tmp" "$OUT/gpu_check.md"
  else
    rm -f "$OUT/.gpu_check.md.tmp"; echo "gpu_check: the report failed"
  fi
}
STAGE_NAME="" STAGE_END=0 STAGE_T0=0 STAGE_RC=0 STAGE_NOTE="" STAGE_ACTIVE=0
# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
  trap - EXIT TERM INT
  [ "$STAGE_ACTIVE" = 1 ] && record "$STAGE_NAME" failed $(($(now) - STAGE_T0)) "the check itself stopped in this stage (see the log)"
  say "done: writing the report and the archive"
  publish
  cat "$OUT/gpu_check.md" >&3 2>/dev/null
  say "end"
}
trap finish EXIT
trap 'echo "gpu_check: stopped by a signal"; exit 143' TERM INT

# A stage: stage_begin NAME (returns 1 and records the skip when too little time is left), steps,
# stage_end. Each step runs under `timeout -k KILL` with what the stage has left (at most its cap).
stage_begin() {
  local name=$1 cap min avail
  if [ "$DEVICES" = cuda ]; then cap=${CAP_CUDA[$name]}; else cap=${CAP_CPU[$name]}; fi
  min=${MIN_S[$name]}
  avail=$(($(left) - RESERVE))
  if [ "$avail" -lt "$min" ]; then
    record "$name" skipped 0 "not enough time: needs ${min} s, ${avail} s left before the deadline"
    return 1
  fi
  [ "$avail" -lt "$cap" ] && cap=$avail
  STAGE_NAME=$name STAGE_T0=$(now) STAGE_END=$(($(now) + cap)) STAGE_RC=0 STAGE_NOTE="" STAGE_ACTIVE=1
  say "$name: start (up to ${cap} s)"
  return 0
}
stage_left() { echo $((STAGE_END - $(now))); }
step() {  # step [--cap S] CMD...: 0 ok, else the command's status (124/137: out of time)
  local cap t rc
  cap=$(stage_left)
  if [ "$1" = --cap ]; then [ "$2" -lt "$cap" ] && cap=$2; shift 2; fi
  if [ "$cap" -lt 2 ]; then
    STAGE_NOTE="${STAGE_NOTE:+$STAGE_NOTE; }out of time before: $(basename "$1") ${2:-}"
    [ "$STAGE_RC" -eq 0 ] && STAGE_RC=124
    return 124
  fi
  echo "+ [timeout ${cap} s] $*"
  t=$(now)
  if [ "${VECBENCH_GPU_CHECK_TEST_HANG:-}" = "$STAGE_NAME" ]; then
    timeout -k "$KILL" "$cap" sleep 100000  # tests only: a step that never ends
  else
    timeout -k "$KILL" "$cap" "$@"
  fi
  rc=$?
  if [ "$rc" -ne 0 ]; then
    local why="exit $rc"
    { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && why="timed out after $(($(now) - t)) s"
    STAGE_NOTE="${STAGE_NOTE:+$STAGE_NOTE; }$(basename "$1") ${2:-}: $why"
    if [ "$STAGE_RC" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then STAGE_RC=$rc; fi
  fi
  return "$rc"
}
stage_end() {
  local status=ok
  if [ "$STAGE_RC" -eq 124 ] || [ "$STAGE_RC" -eq 137 ]; then status=timeout
  elif [ "$STAGE_RC" -ne 0 ]; then status=failed; fi
  STAGE_ACTIVE=0
  record "$STAGE_NAME" "$status" $(($(now) - STAGE_T0)) "$STAGE_NOTE"
  publish
}

# ---- the check's description (the report reads it) ----------------------------------------
write_check_json() {
  cat > "$WORK/check.json" <<JSON
{ "devices": "$DEVICES", "single": "$DEV1", "split": "$DEV3", "batches": [$B_ALL],
  "decode_batch": $B_MID, "model_images": $N_MODEL, "decode_images": $N_DECODE,
  "verify_images": $N_VERIFY, "deadline_s": $DEADLINE_S, "stage": "$STAGE", "vecbench": "$VB",
  "started_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)" }
JSON
}

# ---- build: fails in seconds with the reason when CUDA, nvJPEG or the carried headers are missing
find_nvcc() {
  local c
  for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}
NVCC="" TORCH_PREFIX="" WHY=""
build_preflight() {  # sets NVCC and TORCH_PREFIX, or WHY and returns 1: the build cannot give a CUDA vecbench
  local h
  for h in nlohmann/json.hpp CLI/CLI.hpp xxhash.h; do
    if [ ! -f ".gpu-deps/include/$h" ] && [ ! -f "/usr/include/$h" ]; then
      WHY="no $h in .gpu-deps/include or /usr/include: run tools/device/pack_deps.sh here and carry .gpu-deps"
      return 1
    fi
  done
  if ! command -v cmake >/dev/null; then WHY="no cmake"; return 1; fi
  if ! NVCC=$(find_nvcc); then WHY="no nvcc (CUDA_HOME, /usr/local/cuda, PATH): nvJPEG decoding cannot build"; return 1; fi
  # stdout alone: torch's import warnings (no NumPy, ...) go to stderr and must not reach the path.
  if ! TORCH_PREFIX=$(timeout 60 "$PY" -c 'import torch; assert torch.version.cuda, "torch without CUDA"; print(torch.utils.cmake_prefix_path)' 2> "$WORK/logs/python.txt"); then
    WHY="$PY has no CUDA PyTorch: $(tail -n 1 "$WORK/logs/python.txt")"; return 1
  fi
  TORCH_PREFIX=$(echo "$TORCH_PREFIX" | tail -n 1)
  return 0
}
stage_build() {
  local log=$WORK/logs/cmake.log gen=() nvj=() codec=()
  mkdir -p "$WORK/logs"
  stage_begin build || return 1
  if ! build_preflight; then
    STAGE_RC=1 STAGE_NOTE="preflight: $WHY"; stage_end; return 1
  fi
  timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$WORK/logs/nvidia-smi.txt" 2>&1
  cat "$WORK/logs/nvidia-smi.txt"
  command -v ninja >/dev/null && gen=(-G Ninja)
  [ -f .gpu-deps/nvjpeg/include/nvjpeg.h ] && nvj=(-DVECBENCH_NVJPEG_ROOT="$ROOT/.gpu-deps/nvjpeg")
  [ -d .gpu-deps/codec ] && codec=(-DVECBENCH_CODEC_ROOT="$ROOT/.gpu-deps/codec")
  # TORCH_CUDA_ARCH_LIST: LibTorch's cmake would otherwise probe the GPU or list old architectures.
  export TORCH_CUDA_ARCH_LIST=9.0
  step --cap 180 cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DCMAKE_CUDA_COMPILER="$NVCC" -DVECBENCH_CUDA_ARCHITECTURES=90 \
    "${nvj[@]}" "${codec[@]}" -DVECBENCH_DEPS_INCLUDE="$ROOT/.gpu-deps/include" \
    -DVECBENCH_PYTHON="$(command -v "$PY")" -DVECBENCH_WITH_MPI=OFF -DVECBENCH_WITH_OPENCV=OFF \
    -DVECBENCH_BUILD_TESTS=OFF -DVECBENCH_BUILD_BENCH=OFF -DVECBENCH_HEADER_TESTS=OFF > "$log" 2>&1
  local rc=$?
  grep -E "^-- vecbench|Error|error:" "$log"
  if [ "$rc" -ne 0 ]; then STAGE_NOTE="configure failed (exit $rc): see logs/cmake.log"; stage_end; return 1; fi
  if ! grep -q "vecbench: LibTorch .*CUDA: ON" "$log"; then
    STAGE_RC=1 STAGE_NOTE="CMake did not enable CUDA (LibTorch without CUDA?)"; stage_end; return 1
  fi
  if ! grep -q "vecbench: nvJPEG: ON" "$log" && [ "$ALLOW_NO_NVJPEG" = 0 ]; then
    STAGE_RC=1 STAGE_NOTE="CMake did not find nvJPEG (carry .gpu-deps with nvjpeg/, or --allow-no-nvjpeg)"
    stage_end; return 1
  fi
  if ! grep -q "vecbench: python with torch: /" "$log"; then
    STAGE_RC=1 STAGE_NOTE="no python with torch for the model export"; stage_end; return 1
  fi
  grep -q "image decoding: JPEG+PNG" "$log" || echo "gpu_check: this build cannot read JPEG files: decode runs will fail"
  if [ "$STAGE" = configure ]; then STAGE_NOTE="configured (--stage configure: not built)"; stage_end; return 1; fi
  step cmake --build "$BUILD" -j"$(nproc)" --target vecbench default_model_plain > "$WORK/logs/build.log" 2>&1 \
    || tail -n 40 "$WORK/logs/build.log"
  stage_end
  [ -x "$VB" ]
}

# ---- smoke: the build answers, one model run and one decode run on the devices ---------------
stage_smoke() {
  stage_begin smoke || return 1
  mkdir -p "$WORK/smoke"
  step --cap 30 "$VB" devices "$DEV1" "$DEV3" > "$WORK/smoke/devices.txt" 2>&1; cat "$WORK/smoke/devices.txt"
  step --cap 30 "$VB" model info "${MODEL_ARG[@]}" > "$WORK/smoke/model_info.txt" 2>&1; head -n 20 "$WORK/smoke/model_info.txt"
  rm -rf "$WORK/vec"
  step "$VB" vectorize --images "synthetic:$N_VERIFY" --out "$WORK/vec/smoke_model" "${MODEL_ARG[@]}" --format none \
    --devices "$DEV1" --strategy sequential --batch "$B_MID" --engine torchscript --no-profile \
    --progress 0 --json "$WORK/smoke/smoke_model.json" "${FORCE[@]}"
  local d
  for d in $DECODES; do
    [ -s "$WORK/verify_list.txt" ] || break
    step "$VB" vectorize --images "$WORK/verify_list.txt" --out "$WORK/vec/smoke_decode_$d" "${MODEL_ARG[@]}" \
      --format none --devices "$DEV3" --strategy data-parallel --batch "$B_MID" --engine torchscript --decode "$d" \
      --no-profile --progress 0 --json "$WORK/smoke/smoke_decode_$d.json" "${FORCE[@]}"
  done
  rm -rf "$WORK/vec"
  stage_end
}

# ---- inputs made here: distinct names (hard links, else copies) of the carried photos --------
prepare_inputs() {
  rm -rf "$WORK/photos" "$WORK/jpegs" && mkdir -p "$WORK/photos" "$WORK/jpegs"
  local f i=0 n=0 srcs=()
  if [ -d "$PHOTOS" ]; then
    for f in "$PHOTOS"/*.jpg "$PHOTOS"/*.jpeg "$PHOTOS"/*.JPG; do
      [ -f "$f" ] && cp -L "$f" "$WORK/photos/$(printf 'p%03d' "$n").jpg" && n=$((n + 1))
    done
  fi
  if [ "$n" -eq 0 ]; then
    rmdir "$WORK/photos" "$WORK/jpegs"
    echo "gpu_check: no photos in $PHOTOS: decode runs and photo verification skipped"
    return 1
  fi
  srcs=("$WORK"/photos/*.jpg)
  while [ "$i" -lt "$N_DECODE" ]; do
    f=${srcs[$((i % n))]}
    ln "$f" "$WORK/jpegs/$(printf 'img_%05d' "$i").jpg" 2>/dev/null || cp "$f" "$WORK/jpegs/$(printf 'img_%05d' "$i").jpg"
    i=$((i + 1))
  done
  printf '%s\n' "${srcs[@]:0:$N_VERIFY}" > "$WORK/verify_list.txt"
  echo "gpu_check: $N_DECODE decode inputs from $n photos ($PHOTOS); $(wc -l < "$WORK/verify_list.txt") for verification"
}

# ---- experiments ---------------------------------------------------------------------------
write_exp() {  # name precision images-json verify budget_s matrix-json
  cat > "$WORK/exp/$1.json" <<JSON
{ "name": "$1", "description": "GPU check ($DEVICES, $2): tools/device/gpu_check.sh", $MODEL_JSON
  "engine": "torchscript", "precision": "$2", "images": $3, "verify": $4, "matrix": $6,
  "warmup_batches": $WARMUP, "repetitions": 1, "max_repetitions": $MAXREP, "interleave": true, "keep_replicas": true,
  "decode_threads": 4, "prefetch_batches": 8, "time_budget_s": $5 }
JSON
}
run_exp() {  # stage name precision images verify matrix: one `vecbench run`, budget inside the stage's time
  local budget
  budget=$(($(stage_left) - KILL - 15))
  [ "$budget" -lt 5 ] && budget=5
  write_exp "$2" "$3" "$4" "$5" "$budget" "$6"
  step "$VB" run "$WORK/exp/$2.json" --results "$WORK/results" --no-trace
}
verify_images() {
  if [ -s "$WORK/verify_list.txt" ]; then echo "{\"list\": \"$WORK/verify_list.txt\"}"
  else echo "{\"synthetic\": $N_VERIFY}"; fi
}
stage_fp32() {
  stage_begin fp32 || return 0
  run_exp fp32 check_fp32 fp32 "{\"synthetic\": $N_MODEL}" false "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [$B_ALL] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_ALL] },
    { \"strategy\": [\"naive\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_NAIVE] } ]"
  stage_end
}
stage_verify_fp32() {
  stage_begin verify_fp32 || return 0
  run_exp verify_fp32 verify_fp32 fp32 "$(verify_images)" true "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [1, $B_MID] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_MID] } ]"
  stage_end
}
stage_decode() {  # vectorize on the decode inputs: per round each decoder with the model and without
  if [ ! -d "$WORK/jpegs" ]; then record decode skipped 0 "no photos in $PHOTOS (tools/device/pack_deps.sh)"; return 0; fi
  stage_begin decode || return 0
  mkdir -p "$WORK/decode"
  local r d eng name
  for r in $(seq 1 "$ROUNDS"); do
    for d in $DECODES; do
      for eng in torchscript none; do
        [ "$(stage_left)" -ge 5 ] || break 3
        name=decode_${d}_${eng}_r$r
        rm -rf "$WORK/vec"
        step --cap 60 "$VB" vectorize --images "$WORK/jpegs" --out "$WORK/vec/$name" "${MODEL_ARG[@]}" --format none \
          --devices "$DEV3" --strategy data-parallel --batch "$B_MID" --decode-threads "$DTHREADS" --engine "$eng" \
          --decode "$d" --warmup 3 --no-profile --progress 0 --json "$WORK/decode/$name.json" "${FORCE[@]}"
      done
    done
  done
  rm -rf "$WORK/vec"
  [ "$DEVICES" = cpu ] && STAGE_NOTE="${STAGE_NOTE:+$STAGE_NOTE; }dry run: host decoding only (--decode gpu needs CUDA)"
  stage_end
}
stage_half() {  # fp16 | bf16: throughput only
  local p=$1
  case " $PRECISIONS " in
    *" $p "*) ;;
    *) record "$p" skipped 0 "dry run on cpu: $p needs CUDA"; return 0 ;;
  esac
  stage_begin "$p" || return 0
  run_exp "$p" "check_$p" "$p" "{\"synthetic\": $N_MODEL}" false "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [$B_BIG] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_BIG] } ]"
  stage_end
}
stage_verify_half() {
  if [ "$DEVICES" = cpu ]; then record verify_half skipped 0 "dry run on cpu: fp16 and bf16 need CUDA"; return 0; fi
  stage_begin verify_half || return 0
  local p
  for p in fp16 bf16; do
    [ "$(stage_left)" -ge 10 ] || break
    run_exp verify_half "verify_$p" "$p" "$(verify_images)" true "[
      { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_MID] } ]"
  done
  stage_end
}
stage_fp32_more() {
  stage_begin fp32_more || return 0
  run_exp fp32_more check_fp32_more fp32 "{\"synthetic\": $N_MODEL}" false "[
    { \"strategy\": [\"sharded\", \"mirrored\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_BIG] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV1\"], \"batch\": [$B_BIG] },
    { \"strategy\": [\"naive\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_LAST] } ]"
  stage_end
}

# ---- the plan -------------------------------------------------------------------------------
say "gpu_check: stage $STAGE, devices $DEVICES, deadline ${DEADLINE_S} s, work $WORK, out $OUT"
mkdir -p "$WORK/exp" "$WORK/results" "$WORK/logs"
if [ "$STAGE" = configure ] || [ "$STAGE" = compile ]; then
  if [ "$DEVICES" != cuda ] || [ -z "$BUILD" ]; then
    echo "gpu_check: --stage $STAGE is for --devices cuda without --vecbench" >&3
    exit 2
  fi
  rm -f "$WORK/stages.tsv"
  write_check_json
  stage_build
  grep -q "^build	ok	" "$WORK/stages.tsv" || exit 1
  [ "$STAGE" = configure ] && exit 0
  # compile: the binary starts, and the model made with this PyTorch is there and readable
  timeout -k 5 60 "$VB" devices && timeout -k 5 60 "$VB" model info
  exit $?
fi
if [ "$STAGE" = measure ]; then  # keep the build call's records, drop an earlier measurement's
  rm -rf "$WORK/exp" "$WORK/results" "$WORK/decode" && mkdir -p "$WORK/exp" "$WORK/results"
  if [ -f "$WORK/stages.tsv" ]; then
    grep -E '^(build|smoke)	' "$WORK/stages.tsv" > "$WORK/stages.tsv.tmp"
    mv -f "$WORK/stages.tsv.tmp" "$WORK/stages.tsv"
  fi
else
  rm -f "$WORK/stages.tsv"
fi
write_check_json
prepare_inputs
if [ "$STAGE" != measure ]; then
  if [ -n "$BUILD" ] && [ "$DEVICES" = cuda ]; then
    stage_build
  elif [ -n "$BUILD" ]; then
    record build skipped 0 "dry run: give --vecbench PATH (build here with tools/setup.sh and cmake; the dry run does not configure)"
  else
    record build skipped 0 "prebuilt: $VB"
  fi
  if [ ! -x "$VB" ]; then
    record smoke skipped 0 "no vecbench at $VB"
    exit 1
  fi
  stage_smoke
  publish
  [ "$STAGE" = build ] && exit 0
fi
if [ ! -x "$VB" ]; then
  record fp32 skipped 0 "no vecbench at $VB: run --stage build first"
  exit 1
fi
[ "$STAGE" = measure ] && { timeout -k 5 30 "$VB" devices "$DEV1" "$DEV3" || true; }
stage_fp32
stage_verify_fp32
stage_decode
stage_half fp16
stage_half bf16
stage_verify_half
stage_fp32_more
exit 0
