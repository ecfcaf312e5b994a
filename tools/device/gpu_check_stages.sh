# The stages of tools/device/gpu_check.sh (sourced by it after its clock, records and step
# functions, whose globals these read): probe, export, build, smoke, the inputs, the experiments.
# Not a command of its own.
# shellcheck shell=bash disable=SC2154

# ---- probe: what the machine has, in seconds -------------------------------------------------
stage_probe() {
  stage_begin probe || return 0
  if [ "$DEVICES" = cuda ]; then
    step --cap 10 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv > "$WORK/logs/nvidia-smi.txt" 2>&1
    cat "$WORK/logs/nvidia-smi.txt"
  fi
  step --cap 20 "$PY" - "$WORK/probe.json" <<'PY'
import json, os, platform, shutil, sys
p = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "machine": platform.machine()}
try:
    import torch
    p.update(torch=torch.__version__, torch_cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
             cuda_available=torch.cuda.is_available(), devices=torch.cuda.device_count(),
             device_name=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except Exception as e:  # noqa: BLE001
    p["torch_error"] = repr(e)
cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
p["cuda_home"] = cuda
p["cuda_headers"] = {h: os.path.exists(os.path.join(cuda, "include", h)) for h in ("cuda_runtime.h", "nvjpeg.h")}
p["cuda_libs"] = sorted(f for f in os.listdir(os.path.join(cuda, "lib64")) if f.startswith(("libcudart.so", "libnvjpeg.so"))) \
    if os.path.isdir(os.path.join(cuda, "lib64")) else []
p["tools"] = {t: shutil.which(t) for t in ("cmake", "ninja", "g++", "nvcc")}
try:
    p["glibc"] = os.confstr("CS_GNU_LIBC_VERSION")
except (ValueError, OSError):
    pass
p["disk_free_gib"] = round(shutil.disk_usage(".").free / 2**30, 1)
json.dump(p, open(sys.argv[1], "w"), indent=1)
print(json.dumps(p))
PY
  stage_end
}

# ---- export: the model by the machine's own torch, in the background from the start ----------
start_export() {
  [ -n "$MODEL" ] && return 0
  MODEL=$WORK/model/inception_tf2015_seed0.pt
  mkdir -p "$WORK/model"
  echo "+ [background] export_inception.py --arch tf2015 --seed 0 (logs/export.txt)"
  setsid timeout -k 5 300 "$PY" "$ROOT/tools/export_inception.py" --arch tf2015 --seed 0 --out "$MODEL" \
    > "$WORK/logs/export.txt" 2>&1 &
  EXPORT_PID=$!
}
wait_export() {  # 0 when the model is there; waits at most what the stage has left
  [ -z "$EXPORT_PID" ] && return 0
  local t=$(now)
  while kill -0 "$EXPORT_PID" 2>/dev/null && [ "$(stage_left)" -gt 2 ]; do sleep 0.5; done
  if kill -0 "$EXPORT_PID" 2>/dev/null; then
    fail 124 "the model export still running after $(($(now) - t)) s of waiting"
    return 1
  fi
  wait "$EXPORT_PID"
  local rc=$?
  EXPORT_PID=""
  if [ "$rc" -ne 0 ] || [ ! -s "$MODEL" ]; then
    fail 1 "the model export failed (exit $rc): $(tail -n 1 "$WORK/logs/export.txt")"
    return 1
  fi
  echo "gpu_check: model exported: $(tail -n 1 "$WORK/logs/export.txt")"
  return 0
}

# ---- build: the prebuilt binary if it starts, else a build here ------------------------------
prebuilt_starts() {  # sets VB and the library path when .gpu-deps/prebuilt's binary starts here
  [ -x "$PREBUILT/vecbench" ] || { STAGE_NOTE="no prebuilt binary in .gpu-deps/prebuilt"; return 1; }
  local why
  why=$(gpu_prebuilt_stale "$ROOT" "$PREBUILT") && { STAGE_NOTE="$why: not used"; return 1; }
  local libpath
  libpath=$(gpu_lib_path "$ROOT" "$PY")
  [ -n "$libpath" ] || { STAGE_NOTE="$PY has no torch: the prebuilt binary has no LibTorch to load"; return 1; }
  cat "$PREBUILT/prebuilt.json" 2>/dev/null
  if LD_LIBRARY_PATH=$libpath step --cap 30 "$PREBUILT/vecbench" devices > "$WORK/logs/prebuilt_start.txt" 2>&1 \
     && grep -q "CUDA: .* build" "$WORK/logs/prebuilt_start.txt"; then
    export LD_LIBRARY_PATH=$libpath
    VB=$PREBUILT/vecbench
    local commit
    commit=$(gpu_prebuilt_field "$PREBUILT" commit)
    STAGE_RC=0 STAGE_NOTE="prebuilt: ${commit:0:10} started"
    return 0
  fi
  STAGE_RC=0 STAGE_NOTE="the prebuilt binary did not start: $(grep -v '^+' "$WORK/logs/prebuilt_start.txt" | tail -n 1)"
  return 1
}
find_nvcc() {
  local c
  for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}
build_here() {  # configure and build `vecbench` with gpu_env.sh's settings: 0 when it is there
  local log=$WORK/logs/cmake.log gen=() nvcc torch h
  for h in nlohmann/json.hpp CLI/CLI.hpp xxhash.h; do
    if [ ! -f ".gpu-deps/include/$h" ] && [ ! -f "/usr/include/$h" ]; then
      fail 1 "no $h in .gpu-deps/include: run tools/device/pack_deps.sh here and carry .gpu-deps"
      return 1
    fi
  done
  command -v cmake >/dev/null || { fail 1 "no cmake"; return 1; }
  nvcc=$(find_nvcc) || { fail 1 "no nvcc (CUDA_HOME, /usr/local/cuda, PATH)"; return 1; }
  # stdout alone: torch's import warnings (no NumPy, ...) go to stderr and must not reach the path.
  if ! torch=$(timeout 60 "$PY" -c 'import torch; assert torch.version.cuda, "torch without CUDA"; print(torch.utils.cmake_prefix_path)' 2> "$WORK/logs/python.txt"); then
    fail 1 "$PY has no CUDA PyTorch: $(tail -n 1 "$WORK/logs/python.txt")"; return 1
  fi
  torch=$(echo "$torch" | tail -n 1)
  command -v ninja >/dev/null && gen=(-G Ninja)
  local args
  mapfile -t args < <(gpu_cmake_args "$ROOT" "$torch" "$nvcc" "$(command -v "$PY")")
  export TORCH_CUDA_ARCH_LIST=9.0  # LibTorch's cmake would otherwise probe the GPU or list old architectures
  step --cap 120 cmake -S . -B "$BUILD" "${gen[@]}" "${args[@]}" -DVECBENCH_BUILD_TESTS=OFF > "$log" 2>&1
  local rc=$?
  grep -E "^-- vecbench|Error|error:" "$log"
  [ "$rc" -eq 0 ] || { note "configure failed (exit $rc): see logs/cmake.log"; return 1; }
  local why verdict=0
  why=$(gpu_configure_verdict "$log" "$ALLOW_NO_NVJPEG") || verdict=$?
  if [ "$verdict" -eq 1 ]; then fail 1 "$why"; return 1; fi
  [ "$verdict" -eq 0 ] || echo "gpu_check: $why: decode runs will fail"
  step cmake --build "$BUILD" -j"$(nproc)" --target vecbench > "$WORK/logs/build.log" 2>&1 \
    || { tail -n 40 "$WORK/logs/build.log"; return 1; }
  VB=$BUILD/vecbench
  # the pip PyTorch's libraries are in the build's RPATH; the carried codecs and nvJPEG may not be
  export LD_LIBRARY_PATH=$(gpu_lib_path "$ROOT" "$PY")
  [ -x "$VB" ]
}
stage_build() {
  if [ -n "$VB" ]; then record build skipped 0 "given: --vecbench $VB"; return 0; fi
  stage_begin build || return 1
  if [ "$STAGE" = compile ] || ! prebuilt_starts; then
    build_here
  fi
  stage_end
  [ -n "$VB" ] && [ -x "$VB" ]
}

# ---- smoke: the binary answers, one model run and one decode run on the devices --------------
stage_smoke() {
  stage_begin smoke || return 1
  mkdir -p "$WORK/smoke"
  step --cap 30 "$VB" devices "$DEV1" "$DEV3" > "$WORK/smoke/devices.txt" 2>&1; cat "$WORK/smoke/devices.txt"
  if ! wait_export; then stage_end; return 1; fi
  MODEL_ARG=(--model "$MODEL") MODEL_JSON="\"model\": \"$MODEL\","
  step --cap 30 "$VB" model info "${MODEL_ARG[@]}" > "$WORK/smoke/model_info.txt" 2>&1; head -n 20 "$WORK/smoke/model_info.txt"
  rm -rf "$WORK/vec"
  step "$VB" vectorize --images "synthetic:$N_VERIFY" --out "$WORK/vec/smoke_model" "${MODEL_ARG[@]}" --format none \
    --devices "$DEV1" --strategy sequential --batch "$B" --engine torchscript --no-profile \
    --progress 0 --json "$WORK/smoke/smoke_model.json" "${FORCE[@]}"
  local d
  for d in $DECODES; do
    [ -s "$WORK/verify_list.txt" ] || break
    step "$VB" vectorize --images "$WORK/verify_list.txt" --out "$WORK/vec/smoke_decode_$d" "${MODEL_ARG[@]}" \
      --format none --devices "$DEV3" --strategy data-parallel --batch "$B" --engine torchscript --decode "$d" \
      --no-profile --progress 0 --json "$WORK/smoke/smoke_decode_$d.json" "${FORCE[@]}"
    break  # one decode run: the GPU's where there is one
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
run_exp() {  # name precision images verify matrix: one `vecbench run`, budget inside the stage's time
  local budget
  budget=$(($(stage_left) - KILL - 15))
  [ "$budget" -lt 5 ] && budget=5
  write_exp "$1" "$2" "$3" "$4" "$budget" "$5"
  # `vecbench run` saves its result after every run of the matrix (runs not reached: "not run yet"),
  # so a step killed by its timeout still leaves what it measured for the archive.
  step "$VB" run "$WORK/exp/$1.json" --results "$WORK/results" --no-trace
}
verify_images() {
  if [ -s "$WORK/verify_list.txt" ]; then echo "{\"list\": \"$WORK/verify_list.txt\"}"
  else echo "{\"synthetic\": $N_VERIFY}"; fi
}
stage_seed() {  # the seed's question at equal batch
  stage_begin seed || return 0
  run_exp check_seed fp32 "{\"synthetic\": $N_MODEL}" false "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [$B1, $B] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV1\", \"$DEV3\"], \"batch\": [$B] },
    { \"strategy\": [\"naive\"], \"devices\": [\"$DEV3\"], \"batch\": [$B1] } ]"
  stage_end
}
stage_verify_fp32() {
  stage_begin verify_fp32 || return 0
  run_exp verify_fp32 fp32 "$(verify_images)" true "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [$B1, $B] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B] } ]"
  stage_end
}
stage_decode() {  # vectorize, rounds of: each decoder end to end, each without the model, the model alone
  if [ ! -d "$WORK/jpegs" ]; then record decode skipped 0 "no photos in $PHOTOS (tools/device/pack_deps.sh)"; return 0; fi
  stage_begin decode || return 0
  mkdir -p "$WORK/decode"
  # The issue's ratio first (GPU against CPU decoding, end to end), then the two ceilings: each
  # decoder without the model (--engine none) and the model without decoding (the same command
  # on as many synthetic inputs), so every figure of the end-to-end line comes from these rounds.
  local variants=() d r v name images
  # The first decoder's ceiling and the model's come before the other decoder's ceiling, which
  # only the table shows: a stage short of time loses that one first.
  for d in $DECODES; do variants+=("$d:torchscript"); done
  variants+=("${DECODES%% *}:none" "synthetic:torchscript")
  for d in ${DECODES#* }; do [ "$d" = "${DECODES%% *}" ] || variants+=("$d:none"); done
  local runs=0
  for r in $(seq 1 "$ROUNDS"); do
    for v in "${variants[@]}"; do
      if [ "$(stage_left)" -lt 5 ]; then
        note "out of time after $runs of $((ROUNDS * ${#variants[@]})) runs"
        break 2
      fi
      runs=$((runs + 1))
      d=${v%%:*} name=decode_${v/:/_}_r$r images=$WORK/jpegs
      [ "$d" = synthetic ] && images=synthetic:$N_DECODE d=cpu
      rm -rf "$WORK/vec"
      # --warmup 3: the first batches, the nvJPEG decoder's creation among them, before the clock
      step --cap 60 "$VB" vectorize --images "$images" --out "$WORK/vec/$name" "${MODEL_ARG[@]}" --format none \
        --devices "$DEV3" --strategy data-parallel --batch "$B" --decode-threads "$DTHREADS" --engine "${v#*:}" \
        --decode "$d" --warmup 3 --no-profile --progress 0 --json "$WORK/decode/$name.json" "${FORCE[@]}"
    done
  done
  rm -rf "$WORK/vec"
  [ "$DEVICES" = cpu ] && note "dry run: host decoding only (--decode gpu needs CUDA)"
  stage_end
}
stage_half() {  # fp16 | bf16: throughput only
  local p=$1
  case " $PRECISIONS " in
    *" $p "*) ;;
    *) record "$p" skipped 0 "dry run on cpu: $p needs CUDA"; return 0 ;;
  esac
  stage_begin "$p" || return 0
  run_exp "check_$p" "$p" "{\"synthetic\": $N_BIG}" false "[
    { \"strategy\": [\"sequential\"], \"devices\": [\"$DEV1\"], \"batch\": [$B, $B_BIG] },
    { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B, $B_BIG] } ]"
  stage_end
}
stage_verify_half() {
  if [ "$DEVICES" = cpu ]; then record verify_half skipped 0 "dry run on cpu: fp16 and bf16 need CUDA"; return 0; fi
  stage_begin verify_half || return 0
  local p
  for p in fp16 bf16; do
    [ "$(stage_left)" -ge 10 ] || break
    run_exp "verify_$p" "$p" "$(verify_images)" true "[
      { \"strategy\": [\"data-parallel\"], \"devices\": [\"$DEV3\"], \"batch\": [$B] } ]"
  done
  stage_end
}
stage_more() {
  stage_begin more || return 0
  run_exp check_more fp32 "{\"synthetic\": $N_BIG}" false "[
    { \"strategy\": [\"sequential\", \"data-parallel\"], \"devices\": [\"$DEV1\"], \"batch\": [$B_BIG] },
    { \"strategy\": [\"data-parallel\", \"sharded\", \"mirrored\", \"naive\"], \"devices\": [\"$DEV3\"], \"batch\": [$B_BIG] } ]"
  stage_end
}
