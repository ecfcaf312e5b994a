#!/usr/bin/env bash
# The prepared GPU check, in one device call: one lent machine (an NVIDIA GPU, 16 cores, a pip
# PyTorch; 10 minutes a command, 15 minutes of device time in all, machine starts and idle waits
# included, at most 8 files back from $OUT). It cannot waste that chance on its own account:
#   - a deadline from the budget: --budget-left S (the device `status`'s budget_left_s) gives
#     S - 210 s (the machine's start and the return) - 300 s (a rerun's margin): 390 s on a fresh
#     budget; --deadline S sets it directly. Every step runs under `timeout -k KILL <the time its
#     stage has left>`; a stage that cannot get its minimum is skipped, and the log and the
#     report say so;
#   - at most 4 files in OUT: gpu_check.log (written directly, no pipe), gpu_check.md (the report)
#     and gpu_check.tar.gz (every result JSON, experiment file and stage record), the last two
#     rewritten after every step (a dot-temp in OUT and a rename), so that a kill at any point
#     keeps every finished step; all scratch (inputs, outputs, the work files) lives in a work
#     folder outside OUT;
#   - the binary prebuilt here (.gpu-deps/prebuilt, made by CI's cuda-build stage:
#     tools/device/prebuilt.sh), started with the pip PyTorch's libraries; a build there
#     (tools/device/gpu_env.sh's configuration) only when it was made from other sources
#     (gpu_prebuilt_stale) or does not start;
#   - the seed's question first, at equal batch, then the rest in order of importance:
#       probe    10 s: GPU, driver, torch/CUDA/cuDNN versions, the CUDA toolkit's headers and libraries
#       export   the model, by the machine's torch, in the background from the start
#       build    the prebuilt binary starts (else: configure and build `vecbench` there)
#       smoke    one model run, one GPU-decode run
#       seed     fp32, TF32 off: sequential cuda:0 at batch 1 and 32, data-parallel cuda:0 (the
#                equal-batch control) and cuda:0/3 at 32, naive cuda:0/3 at 1; 1,920 inputs (20 x 3
#                x 32: every batch full, so cuDNN's autotuning, on, sees in the warm-up every batch
#                shape the run will see)
#       decode   GPU against CPU decoding end to end on 1,920 photos (the decoder made in the warm-up),
#                then each decoder without the model and the model on synthetic inputs (the ceilings)
#       verify_fp32  fp32 against the CPU reference (the carried photos, at most 61: a short last batch)
#       fp16, bf16, verify_half, more   while time remains
# Throughput runs have warm-up before the clock and `"verify": false`; verification runs on a
# small separate set.
#
#   tools/device/gpu_check.sh [--budget-left S | --deadline S] [--devices cuda|cpu] [--vecbench PATH]
#                             [--model PATH] [--build-dir DIR] [--work DIR] [--photos DIR]
#                             [--allow-no-nvjpeg] [--stage all|compile|smoke] OUT
#   tools/device/gpu_check.sh --preflight [--budget-left S]
#   --preflight      here, before the device call: the prebuilt binary is this tree's (the hash of
#                    its sources, gpu_source_hash: a stale one is not used there, and a build there
#                    costs minutes), .gpu-deps is packed, what travels fits; prints the call
#   --budget-left S  the device budget left (s): deadline S - 510 (default: --deadline 390)
#   --devices cpu    the dry run: cpu and cpu/3 (--force) in place of cuda:0 and cuda:0/3, a few
#                    images, fp32 only (fp16/bf16 need CUDA), host decoding only (CI runs it:
#                    tests/py/gpu_check_dry.py, and tools/cuda_build.sh with the prebuilt binary)
#   --vecbench PATH  this vecbench (neither the prebuilt binary nor a build); --model PATH its model
#                    (default: exported by $PYTHON in the background)
#   --photos DIR     the JPEGs to make inputs from (default .gpu-deps/jpegs from pack_deps.sh)
#   --stage compile  configure and build as on the GPU machine, no GPU needed, then exit
#   --stage smoke    up to the smoke test, then the report (tools/cuda_build.sh's hand-over check)
# On the GPU machine, with .gpu-deps/ carried (tools/device/pack_deps.sh and tools/cuda_build.sh
# here): docs/gpu.md.
set -uo pipefail
T0=$(date +%s)
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
# shellcheck source=tools/device/gpu_env.sh
source "$ROOT/tools/device/gpu_env.sh"

STAGE=all DEVICES=cuda VB="" MODEL="" BUILD="" WORK="" PHOTOS="" ALLOW_NO_NVJPEG=0 OUT="" PREFLIGHT=0 BUDGET_LEFT=""
DEADLINE_S=${DEADLINE_S:-390}
preflight() {  # --preflight: here, before the device call: what it carries is ready; the call's arguments
  local bad=0 why kib
  if [ ! -x "$PREBUILT/vecbench" ]; then echo "gpu_check: no prebuilt binary: run tools/cuda_build.sh"; bad=1
  elif why=$(gpu_prebuilt_stale "$ROOT" "$PREBUILT"); then echo "gpu_check: $why"; bad=1
  else echo "gpu_check: the prebuilt binary is this tree's (sources $(gpu_source_hash "$ROOT"))"; fi
  for d in nvjpeg/lib codec/lib include jpegs; do
    [ -d "$ROOT/.gpu-deps/$d" ] || { echo "gpu_check: no .gpu-deps/$d: run tools/cuda_build.sh (it packs .gpu-deps)"; bad=1; }
  done
  kib=$(($(du -sk "$ROOT/.gpu-deps" 2>/dev/null | cut -f1) + $(gpu_tree_kib "$ROOT")))
  echo "gpu_check: the tree and .gpu-deps travel as $((kib / 1024)) MiB (the device tool's limit: 64)"
  [ "$kib" -le $((64 * 1024)) ] || bad=1
  [ "$DEADLINE_S" -ge 60 ] || { echo "gpu_check: deadline ${DEADLINE_S} s: not worth a start"; bad=1; }
  local when="--deadline $DEADLINE_S"
  [ -n "$BUDGET_LEFT" ] && when="--budget-left $BUDGET_LEFT"
  echo "gpu_check: the call: run carry [\".gpu-deps\"] timeout_s $((DEADLINE_S + 60))" \
    "command: tools/device/gpu_check.sh $when \"\$OUT\"; then give_back"
  [ "$bad" = 0 ] && echo "gpu_check: ready" || echo "gpu_check: NOT ready"
  return "$bad"
}
usage() { sed -n '/^#   tools\/device\/gpu_check.sh/,/^# On the GPU/p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) STAGE=${2:?}; shift 2 ;;
    --devices) DEVICES=${2:?}; shift 2 ;;
    --deadline) DEADLINE_S=${2:?}; shift 2 ;;
    --budget-left)
      case "${2:-}" in ''|*[!0-9]*) echo "gpu_check: --budget-left takes whole seconds" >&2; exit 2 ;; esac
      BUDGET_LEFT=$2 DEADLINE_S=$(($2 - 510)); shift 2
      if [ "$DEADLINE_S" -lt 60 ]; then
        echo "gpu_check: --budget-left leaves ${DEADLINE_S} s after the start, the return and a rerun's margin (510 s): not worth a start" >&2
        exit 2
      fi ;;
    --vecbench) VB=${2:?}; shift 2 ;;
    --model) MODEL=${2:?}; shift 2 ;;
    --build-dir) BUILD=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --photos) PHOTOS=${2:?}; shift 2 ;;
    --allow-no-nvjpeg) ALLOW_NO_NVJPEG=1; shift ;;
    --preflight) PREFLIGHT=1; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu_check: unknown option $1" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT=$1; shift ;;
  esac
done
case "$STAGE" in all|compile|smoke) ;; *) echo "gpu_check: --stage all|compile|smoke" >&2; exit 2 ;; esac
case "$DEVICES" in cuda|cpu) ;; *) echo "gpu_check: --devices cuda|cpu" >&2; exit 2 ;; esac
case "$DEADLINE_S" in ''|*[!0-9]*) echo "gpu_check: --deadline takes whole seconds" >&2; exit 2 ;; esac
# VECBENCH_GPU_CHECK_PREBUILT: another prebuilt folder (tests/py/gpu_check_dry.py's stand-ins)
PREBUILT=${VECBENCH_GPU_CHECK_PREBUILT:-$ROOT/.gpu-deps/prebuilt}
[ "$PREFLIGHT" = 1 ] && { preflight; exit $?; }
[ -n "$OUT" ] || usage
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
exec 3>&1  # the caller's stdout: one line per stage, and the report at the end
exec >>"$OUT/gpu_check.log" 2>&1
exec 4>&1  # the log, also where a step's own output goes elsewhere
PY=${PYTHON:-python3}

# ---- plan: the two modes --------------------------------------------------------------------
# B1 the seed-style loop's batch, B the equal batch of the seed's question, B_BIG the half
# precisions and the rest. The throughput runs' input counts are multiples of 3 x B (every batch of
# every replica full); the verification count is not (its last batch short: padded on CUDA, verified).
if [ "$DEVICES" = cuda ]; then
  DEV1=cuda:0 DEV3=cuda:0/3 B1=1 B=32 B_BIG=128
  N_MODEL=1920 N_BIG=1920 N_DECODE=1920 N_VERIFY=61 ROUNDS=2 DTHREADS=12 WARMUP=5 MAXREP=3 KILL=10 FORCE=()
  PRECISIONS="fp32 fp16 bf16" DECODES="gpu cpu"
else
  DEV1=cpu DEV3=cpu/3 B1=1 B=2 B_BIG=2
  N_MODEL=6 N_BIG=6 N_DECODE=12 N_VERIFY=3 ROUNDS=1 DTHREADS=1 WARMUP=0 MAXREP=1 KILL=5 FORCE=(--force)
  PRECISIONS="fp32" DECODES="cpu"
fi
RESERVE=$((KILL + 5))  # kept back for the last step's kill and the final report and archive
# stage: cap_s(cuda) cap_s(cpu) min_s
declare -A CAP_CUDA=([probe]=15 [build]=${BUILD_CAP_S:-300} [smoke]=60 [seed]=150 [decode]=120 [verify_fp32]=45
                     [fp16]=60 [bf16]=60 [verify_half]=45 [more]=90)
declare -A CAP_CPU=([probe]=30 [build]=900 [smoke]=150 [seed]=90 [decode]=60 [verify_fp32]=60 [fp16]=60 [bf16]=60
                    [verify_half]=60 [more]=60)
declare -A MIN_S=([probe]=5 [build]=60 [smoke]=10 [seed]=15 [decode]=10 [verify_fp32]=10 [fp16]=15 [bf16]=15
                  [verify_half]=10 [more]=10)
if [ "$DEVICES" = cuda ]; then
  MIN_S[smoke]=20 MIN_S[seed]=45 MIN_S[decode]=40 MIN_S[verify_fp32]=20 MIN_S[fp16]=30 MIN_S[bf16]=30
  MIN_S[verify_half]=20 MIN_S[more]=30
fi

if [ -n "$VB" ]; then
  [ -x "$VB" ] || { echo "gpu_check: --vecbench $VB is not an executable" | tee /dev/fd/3; exit 1; }
  VB=$(cd "$(dirname "$VB")" && pwd)/$(basename "$VB")
fi
BUILD=${BUILD:-build-gpu}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
[ -n "$WORK" ] || WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$OUT"/*) echo "gpu_check: the work folder must be outside OUT" | tee /dev/fd/3; exit 2 ;; esac
if [ -z "$PHOTOS" ]; then
  PHOTOS=.gpu-deps/jpegs
  [ "$DEVICES" = cpu ] && [ ! -d "$PHOTOS" ] && PHOTOS=/usr/share/doc/opencv-doc/examples/data
fi

# ---- records: stages.tsv (stage, status, seconds, note), the report and the archive ----------
# Tests only (tests/py/gpu_check_dry.py), so that its verdicts follow from events and not from
# this machine's speed: VECBENCH_GPU_CHECK_TEST_CLOCK=fake stops the check's clock, except that a
# step hung by VECBENCH_GPU_CHECK_TEST_HANG moves it on by the whole time the step was given (its
# timeout, which then really fires after 1 s); VECBENCH_GPU_CHECK_TEST_CAP_SCALE=N gives every
# stage and step N times its time (the timeouts only guard against a hang then).
FAKE_CLOCK=0 FAKE_S=0 CAP_SCALE=${VECBENCH_GPU_CHECK_TEST_CAP_SCALE:-1}
[ "${VECBENCH_GPU_CHECK_TEST_CLOCK:-}" = fake ] && FAKE_CLOCK=1
case "$CAP_SCALE" in '' | *[!0-9]* | 0) echo "gpu_check: VECBENCH_GPU_CHECK_TEST_CAP_SCALE takes a whole number > 0" >&2; exit 2 ;; esac
now() { if [ "$FAKE_CLOCK" = 1 ]; then echo $((T0 + FAKE_S)); else date +%s; fi; }
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
  (cd "$WORK" && find . \( -path ./photos -o -path ./jpegs -o -path ./vec -o -path ./build \) -prune -o \
     -type f \( -name '*.json' -o -name '*.tsv' -o -name '*.txt' -o -name '*.log' \) -print | sort) > "$list"
  if timeout 30 tar -czf "$OUT/.gpu_check.tar.gz.tmp" -C "$WORK" -T "$list"; then
    mv -f "$OUT/.gpu_check.tar.gz.tmp" "$OUT/gpu_check.tar.gz"
  else
    rm -f "$OUT/.gpu_check.tar.gz.tmp"; echo "gpu_check: the archive failed"
  fi
  if timeout 30 "$PY" "$ROOT/tools/device/gpu_check_report.py" "$WORK" > "$OUT/.gpu_check.md.tmp" 2> "$WORK/logs/report.txt"; then
    mv -f "$OUT/.gpu_check.md.tmp" "$OUT/gpu_check.md"
  else
    rm -f "$OUT/.gpu_check.md.tmp"; echo "gpu_check: the report failed: $(tail -n 1 "$WORK/logs/report.txt")"
  fi
}
STAGE_NAME="" STAGE_END=0 STAGE_T0=0 STAGE_RC=0 STAGE_NOTE="" STAGE_ACTIVE=0 EXPORT_PID=""
# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
  trap - EXIT TERM INT
  [ "$STAGE_ACTIVE" = 1 ] && record "$STAGE_NAME" failed $(($(now) - STAGE_T0)) "the check itself stopped in this stage (see the log)"
  [ -n "$EXPORT_PID" ] && kill -- -"$EXPORT_PID" 2>/dev/null
  rm -f "$WORK/running.txt"
  say "done: writing the report and the archive"
  publish
  cat "$OUT/gpu_check.md" >&3 2>/dev/null
  say "end"
}
trap finish EXIT
trap 'echo "gpu_check: stopped by a signal"; exit 143' TERM INT

# A stage: stage_begin NAME (returns 1 and records the skip when too little time is left), steps,
# stage_end. Each step runs under `timeout -k KILL` with what the stage has left (at most its
# cap), and the report and the archive are published after it: a kill keeps every finished step.
stage_begin() {
  local name=$1 cap min avail
  if [ "$DEVICES" = cuda ]; then cap=${CAP_CUDA[$name]}; else cap=${CAP_CPU[$name]}; fi
  cap=$((cap * CAP_SCALE))
  min=${MIN_S[$name]}
  avail=$(($(left) - RESERVE))
  if [ "$avail" -lt "$min" ]; then
    record "$name" skipped 0 "not enough time: needs ${min} s, ${avail} s left before the deadline"
    return 1
  fi
  [ "$avail" -lt "$cap" ] && cap=$avail
  STAGE_NAME=$name STAGE_T0=$(now) STAGE_END=$(($(now) + cap)) STAGE_RC=0 STAGE_NOTE="" STAGE_ACTIVE=1
  printf '%s\t%s\n' "$name" "$(date -u +%H:%M:%S)" > "$WORK/running.txt"  # the report: started, not ended
  say "$name: start (up to ${cap} s)"
  return 0
}
stage_left() { echo $((STAGE_END - $(now))); }
note() { STAGE_NOTE="${STAGE_NOTE:+$STAGE_NOTE; }$1"; }  # note TEXT: one more remark on this stage's row
fail() { STAGE_RC=$1; note "$2"; }                          # fail RC TEXT: the stage fails with RC, saying why
step() {  # step [--cap S] CMD...: 0 ok, else the command's status (124/137: out of time)
  local cap t rc
  cap=$(stage_left)
  if [ "$1" = --cap ]; then [ $(($2 * CAP_SCALE)) -lt "$cap" ] && cap=$(($2 * CAP_SCALE)); shift 2; fi
  if [ "$cap" -lt 2 ]; then
    note "out of time before: $(basename "$1") ${2:-}"
    [ "$STAGE_RC" -eq 0 ] && STAGE_RC=124
    return 124
  fi
  echo "+ [timeout ${cap} s] $*" >&4
  t=$(now)
  if [ "${VECBENCH_GPU_CHECK_TEST_HANG:-}" = "$STAGE_NAME" ]; then  # tests only: a step that never ends
    if [ "$FAKE_CLOCK" = 1 ]; then
      timeout -k "$KILL" 1 sleep 100000
      rc=$?
      FAKE_S=$((FAKE_S + cap))  # on the fake clock it took all its time
    else
      timeout -k "$KILL" "$cap" sleep 100000
      rc=$?
    fi
  else
    timeout -k "$KILL" "$cap" "$@"
    rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    local why="exit $rc"
    { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && why="timed out after $(($(now) - t)) s"
    note "$(basename "$1") ${2:-}: $why"
    if [ "$STAGE_RC" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then STAGE_RC=$rc; fi
  fi
  publish
  return "$rc"
}
stage_end() {
  local status=ok
  if [ "$STAGE_RC" -eq 124 ] || [ "$STAGE_RC" -eq 137 ]; then status=timeout
  elif [ "$STAGE_RC" -ne 0 ]; then status=failed; fi
  STAGE_ACTIVE=0
  rm -f "$WORK/running.txt"
  record "$STAGE_NAME" "$status" $(($(now) - STAGE_T0)) "$STAGE_NOTE"
  publish
}

# ---- the check's description (the report reads it) ----------------------------------------
write_check_json() {
  cat > "$WORK/check.json" <<JSON
{ "devices": "$DEVICES", "single": "$DEV1", "split": "$DEV3", "batch_seed": $B1, "batch": $B, "batch_big": $B_BIG,
  "model_images": $N_MODEL, "decode_images": $N_DECODE,
  "verify_images": $N_VERIFY, "deadline_s": $DEADLINE_S, "stage": "$STAGE",
  "started_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)" }
JSON
}

# ---- the stages: probe, export, build, smoke, inputs, the experiments (gpu_check_stages.sh) ---
# shellcheck source=tools/device/gpu_check_stages.sh
source "$ROOT/tools/device/gpu_check_stages.sh"

# ---- the plan -------------------------------------------------------------------------------
say "gpu_check: devices $DEVICES, deadline ${DEADLINE_S} s, work $WORK, out $OUT"
mkdir -p "$WORK/exp" "$WORK/results" "$WORK/logs"
rm -f "$WORK/stages.tsv" "$WORK/running.txt"
MODEL_ARG=() MODEL_JSON=""
write_check_json
if [ "$STAGE" = compile ]; then
  if [ "$DEVICES" != cuda ] || [ -n "$VB" ]; then
    echo "gpu_check: --stage compile is for --devices cuda without --vecbench" >&3
    exit 2
  fi
  stage_build || exit 1
  timeout -k 5 60 "$VB" devices
  exit $?
fi
start_export
stage_probe
prepare_inputs
publish
if ! stage_build; then
  record smoke skipped 0 "no vecbench: the prebuilt binary did not start and the build failed (see the build row)"
  exit 1
fi
stage_smoke || exit 1
[ "$STAGE" = smoke ] && exit 0
stage_seed
stage_decode
stage_verify_fp32
stage_half fp16
stage_half bf16
stage_verify_half
stage_more
exit 0
