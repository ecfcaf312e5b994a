#!/usr/bin/env bash
# Start-up A/B: the binary before (OLD) against this one (NEW), whole process timed by Python's
# perf_counter (ms), 8 synthetic inputs (one batch per replica: start-up and one forward), and the
# 100 photos of tools/bench_whole_job.sh, for --precision int8 (the benchmark's calibration), bf16
# and the default fp32; rounds interleaved in alternating order.
#   OLD=/tmp/wt-png/build/vecbench ROUNDS=15 bash results/int8/startup-jit-share-20261203.sh
set -euo pipefail
OLD=${OLD:?the binary before, built in a worktree} NEW=${NEW:-./build/vecbench} ROUNDS=${ROUNDS:-15} \
  LIST=${LIST:-/tmp/vecbench-whole-job/photos100.txt} CAL=${CAL:-/tmp/vecbench-whole-job/int8-cal.json} \
  python3 - <<'PY'
import os, shutil, statistics, subprocess, tempfile, time
old, new, rounds = os.environ["OLD"], os.environ["NEW"], int(os.environ["ROUNDS"])
model = "build/models/inception_tf2015_seed0.pt"
runs = {
    "int8-8": ["--images", "synthetic:8", "--precision", "int8", "--calibration", os.environ["CAL"]],
    "bf16-8": ["--images", "synthetic:8", "--precision", "bf16"],
    "fp32-8": ["--images", "synthetic:8"],
    "int8-100": ["--images", os.environ["LIST"], "--precision", "int8", "--calibration", os.environ["CAL"]],
    "bf16-100": ["--images", os.environ["LIST"], "--precision", "bf16"],
}
out = tempfile.mkdtemp()
t = {(r, b): [] for r in runs for b in ("old", "new")}
for i in range(rounds):
    order = [("old", old), ("new", new)] if i % 2 == 0 else [("new", new), ("old", old)]
    for r, args in runs.items():
        for tag, binary in order:
            shutil.rmtree(os.path.join(out, "o"), ignore_errors=True)
            t0 = time.perf_counter()
            subprocess.run([binary, "vectorize", "--out", os.path.join(out, "o"), "--model", model] + args,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t[(r, tag)].append(time.perf_counter() - t0)
print("| run | before s (median) | after s (median) | paired before/after: median (range) |")
print("|---|---:|---:|---:|")
for r in runs:
    o, n = t[(r, "old")], t[(r, "new")]
    p = [a / b for a, b in zip(o, n)]
    print(f"| {r} | {statistics.median(o):.3f} | {statistics.median(n):.3f} | "
          f"**{statistics.median(p):.3f}** ({min(p):.3f}-{max(p):.3f}) |")
shutil.rmtree(out)
PY
