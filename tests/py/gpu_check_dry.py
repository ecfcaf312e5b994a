#!/usr/bin/env python3
"""The GPU check's dry run (tools/device/gpu_check.sh --devices cpu, no GPU, the build's own
vecbench): what a lent GPU machine will run, in its stage order, on cpu and cpu/3 with a few images.
  1. a whole run under a deadline: it ends in time, OUT holds at most 4 files (the device tool
     returns 8), the report names every stage (run, or not run and why) and the targets, and the
     archive is a valid tar.gz holding the result JSON;
  2. a deadline too short for the later stages, with the smoke test's steps hanging
     (VECBENCH_GPU_CHECK_TEST_HANG: `sleep` in place of each step): the step is killed by its
     timeout, the later stages are reported as not run for lack of time, and the check still
     ends before its deadline with its 3 files.
VECBENCH_EXE: the vecbench to use (ctest sets it; default build/vecbench)."""
import os
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "device", "gpu_check.sh")
STAGES = ["build", "smoke", "fp32", "verify_fp32", "decode", "fp16", "bf16", "verify_half", "fp32_more"]
EXPECTED = {"gpu_check.log", "gpu_check.md", "gpu_check.tar.gz"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run_check(tmp, name, deadline, env_extra=None):
    out, work = os.path.join(tmp, name, "out"), os.path.join(tmp, name, "work")
    env = dict(os.environ, **(env_extra or {}))
    exe = os.environ.get("VECBENCH_EXE", os.path.join(ROOT, "build", "vecbench"))
    t = time.monotonic()
    p = subprocess.run([SCRIPT, "--devices", "cpu", "--vecbench", exe, "--work", work, "--deadline", str(deadline),
                        out], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=deadline + 60)
    took = time.monotonic() - t
    print(f"--- {name}: exit {p.returncode} after {took:.1f} s (deadline {deadline} s)\n{p.stdout}")
    files = sorted(os.listdir(out))
    check(len(files) <= 4, f"{name}: {len(files)} files in OUT (at most 4): {files}")
    check(set(files) == EXPECTED, f"{name}: OUT holds {files}, expected {sorted(EXPECTED)}")
    check(took <= deadline + 2, f"{name}: ended after {took:.1f} s, deadline {deadline} s")
    check(p.returncode == 0, f"{name}: exit {p.returncode}")
    with open(os.path.join(out, "gpu_check.md")) as f:
        report = f.read()
    for s in STAGES:
        check(f"| {s} |" in report, f"{name}: the report does not name stage {s}")
    with tarfile.open(os.path.join(out, "gpu_check.tar.gz")) as t:
        names = t.getnames()
    return report, names


def main():
    with tempfile.TemporaryDirectory(prefix="gpu_check_dry.") as tmp:
        # 1. The whole dry run: every stage that can run on a CPU runs.
        report, names = run_check(tmp, "full", 240)
        results = [n for n in names if n.startswith("./results/") and n.endswith(".json")]
        check(any("/check_fp32/" in n for n in results), f"full: no fp32 result JSON in the archive: {names}")
        check(any("/verify_fp32/" in n for n in results), f"full: no verification result in the archive: {names}")
        check("./stages.tsv" in names and "./check.json" in names, f"full: no stage records in the archive: {names}")
        for s in ("smoke", "fp32", "verify_fp32", "fp32_more"):
            row = next(line for line in report.splitlines() if line.startswith(f"| {s} |"))
            check("| ok |" in row, f"full: stage {s} not ok: {row}")
        check("not run: dry run on cpu: fp16 needs CUDA" in report, "full: fp16 not reported as not run")
        check("data-parallel cpu/3 (best batch)" in report, "full: the data-parallel target has no ratio")
        check("fp32 against the CPU fp32 reference: largest relative difference" in report,
              "full: the fp32 verification target has no figure")
        # 2. Too short a deadline, and the smoke test hangs: killed, the rest not run, in time.
        report, names = run_check(tmp, "short", 30, {"VECBENCH_GPU_CHECK_TEST_HANG": "smoke"})
        smoke = next(line for line in report.splitlines() if line.startswith("| smoke |"))
        check("| timeout |" in smoke, f"short: the hanging smoke stage is not a timeout: {smoke}")
        for s in ("fp32", "verify_fp32", "decode", "fp32_more"):
            row = next(line for line in report.splitlines() if line.startswith(f"| {s} |"))
            check("| skipped |" in row and "not enough time" in row, f"short: stage {s} not skipped for time: {row}")
        check("./stages.tsv" in names, "short: no stage records in the archive")
    print("gpu_check dry run: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
