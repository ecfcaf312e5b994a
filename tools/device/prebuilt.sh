#!/usr/bin/env bash
# The prebuilt GPU binary: made here by CI's cuda-build stage (tools/cuda_build.sh), carried to the
# GPU machine in .gpu-deps/prebuilt/ and started there first by tools/device/gpu_check.sh (which
# builds on the device only when it is stale or does not start).
#   tools/device/prebuilt.sh BUILD_DIR PYTHON
# BUILD_DIR: a build configured with tools/device/gpu_env.sh's gpu_cmake_args (LibTorch with CUDA,
# nvJPEG, no OpenCV/MPI/oneDNN/FID); PYTHON: the pip PyTorch it was built against (torch 2.11.0
# with CUDA 13.0, the GPU machine's). Copies `vecbench` and `libvecbench_torch.so`, stripped, into
# .gpu-deps/prebuilt/ with prebuilt.json (commit, the hash of the sources it is made from
# (gpu_source_hash), torch and CUDA versions, sizes, the libraries each needs, the newest
# glibc/libstdc++ symbol versions), and fails when:
#   - a file needs a library outside the GPU machine's set (GPU_ALLOWED_NEEDED, readelf -d);
#   - .gpu-deps (with the tree that travels with it) is over 48 MiB;
#   - the copied binary does not start with gpu_check.sh's LD_LIBRARY_PATH (PYTHON's PyTorch and
#     nvidia-* wheels, the carried nvJPEG and codecs): `vecbench devices` loads LibTorch with CUDA.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${1:?usage: prebuilt.sh BUILD_DIR PYTHON}
PY=${2:?usage: prebuilt.sh BUILD_DIR PYTHON}
# shellcheck source=tools/device/gpu_env.sh
source tools/device/gpu_env.sh
DEST=.gpu-deps/prebuilt
LIMIT_KIB=$((48 * 1024))
say() { echo "prebuilt: $*"; }
for f in vecbench libvecbench_torch.so; do
  [ -f "$BUILD/$f" ] || { say "no $BUILD/$f: build the targets vecbench and vecbench_torch first" >&2; exit 1; }
done
# The hash of the sources the build was made from: VECBENCH_SOURCES_HASH, taken by cuda_build.sh
# before it built; a tree that changed since is refused (its binary is not these sources'). Alone,
# prebuilt.sh takes the tree's hash now: run it right after building.
sources=$(gpu_source_hash "$ROOT")
if [ -n "${VECBENCH_SOURCES_HASH:-}" ] && [ "$VECBENCH_SOURCES_HASH" != "$sources" ]; then
  say "the sources changed during the build (hash $VECBENCH_SOURCES_HASH before, $sources now): build again" >&2
  exit 1
fi
rm -rf "$DEST" && mkdir -p "$DEST"
for f in vecbench libvecbench_torch.so; do
  strip --strip-unneeded -o "$DEST/$f" "$BUILD/$f"
done

# Needed libraries, against the GPU machine's set.
bad=""
needed_json=""
for f in vecbench libvecbench_torch.so; do
  needed=$(readelf -d "$DEST/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
  for lib in $needed; do
    case " $(echo $GPU_ALLOWED_NEEDED) " in *" $lib "*) ;; *) bad="$bad $f:$lib" ;; esac
  done
  needed_json="$needed_json\"$f\": [$(echo "$needed" | sed 's/.*/"&"/' | paste -sd, -)], "
done
if [ -n "$bad" ]; then
  say "needs libraries the GPU machine does not have:$bad (allowed: $(echo $GPU_ALLOWED_NEEDED))" >&2
  exit 1
fi
# The newest symbol versions it asks of glibc and libstdc++: a machine with older ones cannot start it
# (gpu_check.sh then builds there).
newest() { objdump -T "$DEST"/vecbench "$DEST"/libvecbench_torch.so | grep -o "$1_[0-9.]*" | sort -V | tail -n 1; }
glibc=$(newest GLIBC) glibcxx=$(newest GLIBCXX)

versions=$(timeout 60 "$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null | tail -n 1)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=true
cat > "$DEST/prebuilt.json" <<JSON
{ "commit": "$commit", "dirty": $dirty, "sources": "$sources", "torch": "${versions% *}", "cuda": "${versions#* }",
  "made_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "host_cpu": "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)",
  "bytes": {"vecbench": $(stat -c %s "$DEST/vecbench"), "libvecbench_torch.so": $(stat -c %s "$DEST/libvecbench_torch.so")},
  "needed": { ${needed_json%, } }, "newest_glibc": "$glibc", "newest_glibcxx": "$glibcxx",
  "run_with": "tools/device/gpu_env.sh gpu_lib_path (LD_LIBRARY_PATH)" }
JSON

# What travels: the tree (tracked files) and .gpu-deps.
deps_kib=$(du -sk .gpu-deps | cut -f1)
tree_kib=$(gpu_tree_kib "$ROOT")
say "vecbench $(($(stat -c %s "$DEST/vecbench") / 1024)) KiB, libvecbench_torch.so $(($(stat -c %s "$DEST/libvecbench_torch.so") / 1024)) KiB; .gpu-deps $((deps_kib / 1024)) MiB + tree $((tree_kib / 1024)) MiB; newest $glibc, $glibcxx"
if [ $((deps_kib + tree_kib)) -gt "$LIMIT_KIB" ]; then
  say ".gpu-deps with the tree is $(((deps_kib + tree_kib) / 1024)) MiB: over 48 MiB" >&2
  exit 1
fi

# It starts as the GPU machine will start it.
libpath=$(gpu_lib_path "$ROOT" "$PY")
[ -n "$libpath" ] || { say "$PY has no torch: cannot check that the binary starts" >&2; exit 1; }
if ! out=$(env -u VECBENCH_TORCH_LIBRARY LD_LIBRARY_PATH="$libpath" timeout 120 "$DEST/vecbench" devices 2>&1); then
  echo "$out" >&2
  say "the prebuilt vecbench does not start with LD_LIBRARY_PATH=$libpath" >&2
  exit 1
fi
# grep reads a here-string, not a pipe: with pipefail, `echo | grep -q` fails when grep's early
# exit makes echo's write fail (SIGPIPE), which once stopped CI's cuda-build on a binary that was fine.
grep -q "$DEST/libvecbench_torch.so\|prebuilt/libvecbench_torch.so" <<< "$out" || {
  echo "$out" >&2; say "the prebuilt vecbench did not load the LibTorch library beside it" >&2; exit 1; }
grep -q "CUDA: .* build" <<< "$out" || { echo "$out" >&2; say "the prebuilt vecbench has no CUDA" >&2; exit 1; }
say "ok: $DEST (torch $(gpu_prebuilt_field "$DEST" torch))"
