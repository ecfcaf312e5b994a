#!/usr/bin/env python3
"""The GPU check's dry run: the device call's own command line (tools/device/gpu_check.sh
--budget-left S OUT) with --devices cpu and this build's vecbench, no GPU: what a lent GPU machine
will run, in its stage order, on cpu and cpu/3 with a few images, the model exported in the
background by this Python's torch as the machine's torch will export it.
No verdict here reads a wall time (issue #63): the whole runs go on the check's fake clock
(VECBENCH_GPU_CHECK_TEST_CLOCK=fake: it stands still, so no stage is cut for time however loaded
the machine is) with every timeout ten times as long (VECBENCH_GPU_CHECK_TEST_CAP_SCALE), at most
what the deadline leaves, which that clock never shrinks (230 s a stage: they only guard against a
hang), and the deadline's decisions are checked where a hung step moves that clock.
  1. a whole run from a budget: exit 0, OUT holds at most 4 files (the device tool returns 8),
     the report names every stage (run, or not run and why) and the seed's question with its
     ratios, and the archive is a valid tar.gz holding the result JSON;
  2. a deadline too short for the later stages, with the smoke test's steps hanging
     (VECBENCH_GPU_CHECK_TEST_HANG: `sleep` in place of each step, killed by its timeout after 1 s
     and taken to have used all the time it was given): the step is killed by its timeout, which
     was what the deadline left it, the later stages are reported as not run for lack of time,
     and the check ends on its own, before its deadline on its clock, with its 3 files;
  3. a SIGKILL of the whole check at a seeded point (no trap runs): once the archive exists and a
     stage chosen by the seed has started, after a delay the seed chooses (VECBENCH_TEST_SEED,
     default 63; printed, to replay a failure): OUT still holds at most 4 files, the archive is
     readable, every stage recorded as ok has its JSON in it, and the report names the stages
     that ran and the one the kill stopped;
  4. the prebuilt binary is used only in the tree it was made from (gpu_prebuilt_stale; the
     check's build stage and --preflight on stand-in prebuilt folders);
  5. the report on hand-made files (a GPU check's layout, figures chosen so that stages disagree):
     each ratio of the seed's question is between runs of one stage's interleaved run, the
     end-to-end line's two ceilings come from the decode stage's own rounds.
VECBENCH_EXE: the vecbench to use (ctest sets it; default build/vecbench)."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "device", "gpu_check.sh")
STAGES = ["probe", "build", "smoke", "seed", "decode", "verify_fp32", "fp16", "bf16", "verify_half", "more"]
EXPECTED = {"gpu_check.log", "gpu_check.md", "gpu_check.tar.gz"}
# What each stage leaves in the archive when it ends ok.
STAGE_FILES = {"probe": "./probe.json", "smoke": "./smoke/smoke_model.json", "seed": "./results/check_seed/",
               "decode": "./decode/decode_", "verify_fp32": "./results/verify_fp32/", "more": "./results/check_more/"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def command(tmp, name, budget_args):
    out, work = os.path.join(tmp, name, "out"), os.path.join(tmp, name, "work")
    exe = os.environ.get("VECBENCH_EXE", os.path.join(ROOT, "build", "vecbench"))
    return [SCRIPT, *budget_args, "--devices", "cpu", "--vecbench", exe, "--work", work, out], out


# The whole runs' clock and timeouts (tools/device/gpu_check.sh's test hooks): see the top.
CALM = {"VECBENCH_GPU_CHECK_TEST_CLOCK": "fake", "VECBENCH_GPU_CHECK_TEST_CAP_SCALE": "10"}
# Only a hang takes this long: the whole run is ~2-3 minutes of CPU.
GUARD_S = 1500
# The stages a dry run runs (the others are recorded as not run at once): where a kill may land.
KILL_STAGES = ["probe", "smoke", "seed", "decode", "verify_fp32", "more"]


def env_for(extra=None):
    # the background export runs this interpreter's torch, as the GPU machine's runs its own
    return dict(os.environ, PYTHON=sys.executable, **(extra or {}))


def read_outputs(name, out):
    files = sorted(os.listdir(out))
    check(len(files) <= 4, f"{name}: {len(files)} files in OUT (at most 4): {files}")
    with open(os.path.join(out, "gpu_check.md")) as f:
        report = f.read()
    with tarfile.open(os.path.join(out, "gpu_check.tar.gz")) as t:
        names = t.getnames()
        tsv = t.extractfile("./stages.tsv").read().decode() if "./stages.tsv" in names else ""
    stages = dict(line.split("\t")[:2] for line in tsv.splitlines() if "\t" in line)
    return files, report, names, stages


def row(report, stage):
    return next(line for line in report.splitlines() if line.startswith(f"| {stage} |"))


def run_check(tmp, name, budget_args, env_extra):
    cmd, out = command(tmp, name, budget_args)
    p = subprocess.run(cmd, env=env_for(env_extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=GUARD_S)
    print(f"--- {name}: exit {p.returncode}\n{p.stdout}")
    files, report, names, stages = read_outputs(name, out)
    check(set(files) == EXPECTED, f"{name}: OUT holds {files}, expected {sorted(EXPECTED)}")
    check(p.returncode == 0, f"{name}: exit {p.returncode}")
    for s in STAGES:
        check(f"| {s} |" in report, f"{name}: the report does not name stage {s}")
    return report, names, p.stdout


def stage_started(work, stage):
    """Whether the check has begun `stage`: it is running (running.txt) or has a record (stages.tsv)."""
    for f in ("running.txt", "stages.tsv"):
        try:
            with open(os.path.join(work, f)) as fh:
                if any(line.split("\t")[0] == stage for line in fh):
                    return True
        except OSError:
            pass
    return False


def killed_check(tmp, seed):
    """SIGKILL the check's whole process group at a seeded point: once the archive is first
    published and the seed's stage has started, after the seed's delay (0-2 s). The point is
    chosen by events; only where in that stage the delay lands depends on the machine's speed, and
    every verdict below holds wherever it lands."""
    cmd, out = command(tmp, "killed", ["--budget-left", "750"])
    work = os.path.join(tmp, "killed", "work")
    rng = random.Random(seed)
    stage = rng.choice(KILL_STAGES)
    delay = round(rng.uniform(0, 2), 2)
    print(f"--- killed: seed {seed} (replay: VECBENCH_TEST_SEED={seed}): SIGKILL {delay} s after stage {stage} "
          f"has started and the archive is out")
    p = subprocess.Popen(cmd, env=env_for(CALM), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    t0 = time.monotonic()
    while p.poll() is None and not (os.path.exists(os.path.join(out, "gpu_check.tar.gz"))
                                    and stage_started(work, stage)):
        check(time.monotonic() - t0 < GUARD_S, f"killed: stage {stage} not started in {GUARD_S} s: a hang?")
        time.sleep(0.05)
    if p.poll() is None:
        time.sleep(delay)
    ended_first = p.poll() is not None
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    print(f"    {'it had already ended' if ended_first else 'killed mid-run'}")
    files, report, names, stages = read_outputs("killed", out)
    print(f"    OUT {files}; stages recorded {stages}")
    check(EXPECTED - {"gpu_check.log"} <= set(files), f"killed: no report or archive in OUT: {files}")
    for stage, status in stages.items():
        want = STAGE_FILES.get(stage)
        if status == "ok" and want:
            check(any(n.startswith(want) for n in names), f"killed: stage {stage} ok but no {want}* in the archive")
        check("| not run |" not in row(report, stage), f"killed: the report says {stage} did not run: {row(report, stage)}")
    if "./running.txt" in names and not ended_first:
        with tarfile.open(os.path.join(out, "gpu_check.tar.gz")) as t:
            running = t.extractfile("./running.txt").read().decode().split("\t")[0]
        check("| started |" in row(report, running), f"killed: the stopped stage {running}: {row(report, running)}")


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def result_doc(name, runs):
    """A `vecbench run` result as the report reads it: (strategy, devices, batch, img/s) per run."""
    return {"name": name, "config": {"requested": {"precision": "fp32"}},
            "runs": [{"params": {"strategy": st, "devices": dv, "batch": b, "input": "synthetic"},
                      "summary": {"images_per_s": {"median": v, "count": 3}}, "status": "ok"}
                     for st, dv, b, v in runs]}


def report_check(tmp):
    """The report's ratios on hand-made files: the seed stage's runs against each other, the more
    stage's against each other at the big batch (its runs at the seed's batch, as in the dry run,
    have other figures and must not reach the seed's lines), and the end-to-end line from the
    decode stage's rounds, whatever the other stages measured."""
    work = os.path.join(tmp, "report_work")
    write_json(os.path.join(work, "check.json"), {"devices": "cuda", "single": "cuda:0", "split": "cuda:0/3",
                                                  "batch_seed": 1, "batch": 32, "batch_big": 128})
    with open(os.path.join(work, "stages.tsv"), "w") as f:
        f.write("".join(f"{s}\tok\t1\t\n" for s in ("probe", "build", "smoke", "seed", "decode", "more")))
    write_json(os.path.join(work, "results", "check_seed", "a.json"), result_doc("check_seed", [
        ("sequential", "cuda:0", 1, 100.0), ("sequential", "cuda:0", 32, 1000.0),
        ("data-parallel", "cuda:0", 32, 1100.0), ("data-parallel", "cuda:0/3", 32, 1210.0),
        ("naive", "cuda:0/3", 1, 50.0)]))
    write_json(os.path.join(work, "results", "check_more", "b.json"), result_doc("check_more", [
        ("sequential", "cuda:0", 128, 2000.0), ("data-parallel", "cuda:0", 128, 2500.0),
        ("data-parallel", "cuda:0/3", 128, 3000.0), ("naive", "cuda:0/3", 128, 400.0),
        ("sequential", "cuda:0", 32, 900.0), ("data-parallel", "cuda:0/3", 32, 2700.0)]))
    for name, rates in (("gpu_torchscript", (900, 700, 800)), ("cpu_torchscript", (300, 500, 400)),
                        ("gpu_none", (5000,)), ("cpu_none", (450,)), ("synthetic_torchscript", (1000, 1000))):
        for r, v in enumerate(rates, 1):
            write_json(os.path.join(work, "decode", f"decode_{name}_r{r}.json"), {"images_per_s": v})
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "device", "gpu_check_report.py"), work],
                       capture_output=True, text=True, check=True)
    lines = p.stdout.splitlines()

    def line(start):
        got = [x for x in lines if x.startswith(f"- {start}")]
        check(len(got) == 1, f"report: {len(got)} lines start with '- {start}':\n{p.stdout}")
        return got[0]
    want = {"split gain at equal batch 32:": "1210.0 img/s vs sequential cuda:0 1000.0: **1.21x**",
            "replicas on one device at equal batch 32 (the control": "1210.0 img/s vs data-parallel cuda:0 1100.0: **1.10x**",
            "the seed's mistake at batch 1": "50.0 img/s vs sequential cuda:0 100.0: **0.50x**",
            "batching alone": "1000.0 img/s vs sequential cuda:0 batch 1 100.0: **10.00x**",
            "split gain at equal batch 128 (stage more)": "3000.0 img/s vs sequential cuda:0 2000.0: **1.50x**",
            "replicas on one device at equal batch 128 (stage more": "3000.0 img/s vs data-parallel cuda:0 2500.0: **1.20x**",
            "decoding on the GPU end to end": "800.0 img/s vs --decode cpu 400.0: **2.00x**",
            "end to end with gpu decoding": "min(decode ceiling 5000.0, model ceiling 1000.0) = 1000.0: **80%**"}
    for start, tail in want.items():
        got = line(start)
        check(tail in got, f"report: '{start}' says {got!r}, wanted ...{tail!r}")


def bash_fn(fn, *args):
    """A function of tools/device/gpu_env.sh: (exit status, stdout)."""
    env = os.path.join(ROOT, "tools", "device", "gpu_env.sh")
    r = subprocess.run(["bash", "-c", f'source "{env}"; {fn} "$@"', "-", *args], capture_output=True, text=True)
    return r.returncode, r.stdout.strip()


def stale_check(tmp):
    """gpu_env.sh's gpu_prebuilt_stale: the prebuilt binary is used only in the tree it was made
    from (the hash of the names and contents of its sources and build settings), never after an
    edit, a new file or a rename among them, nor from a prebuilt.json that records no hash; files
    that do not go into it, and in a git tree the files git ignores (they do not travel), do not
    count."""
    root = os.path.join(tmp, "stale_root")
    files = {"CMakeLists.txt": "project(x)\n", "experiments/quick.json": "{}\n", "tools/vecbench.cpp": "int main(){}\n",
             "tools/build_info.cmake": "\n", "tools/device/gpu_env.sh": "# settings\n", "tools/cuda_build.sh": "\n",
             "tools/device/prebuilt.sh": "\n", "src/a.cpp": "int a;\n", "include/vecbench/b.hpp": "int b();\n",
             "tests/t.cpp": "int t;\n", ".gitignore": "__pycache__/\n"}
    prebuilt = os.path.join(root, ".gpu-deps", "prebuilt", "prebuilt.json")

    def made_here():  # a prebuilt.json for the tree as it is now
        rc, h = bash_fn("gpu_source_hash", root)
        check(len(h) == 16, f"gpu_source_hash: exit {rc} {h!r}")
        write_json(prebuilt, {"commit": "0123456789abcdef", "sources": h})
        rc, why = bash_fn("gpu_prebuilt_stale", root)
        check(rc == 1 and why == "", f"gpu_prebuilt_stale on its own tree: exit {rc} {why!r}")
        return h

    def append(rel, text):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "a") as f:
            f.write(text)
    for rel, text in files.items():
        append(rel, text)

    def stale_after(what, change):
        h = made_here()
        change()
        rc, why = bash_fn("gpu_prebuilt_stale", root)
        check(rc == 0 and h in why and "0123456789" in why, f"gpu_prebuilt_stale after {what}: exit {rc} {why!r}")

    for git in (False, True):
        if git:  # the same tree as a repository: git's list of what travels
            subprocess.run(["git", "init", "-q", root], check=True)
            subprocess.run(["git", "-C", root, "add", "-A"], check=True)
        for rel in ("src/a.cpp", "CMakeLists.txt", "experiments/quick.json", "tools/vecbench.cpp",
                    "tools/device/gpu_env.sh"):
            stale_after(f"an edit of {rel}", lambda rel=rel: append(rel, "// edit\n"))
        stale_after("a new header", lambda: append(f"include/vecbench/new{int(git)}.hpp", ""))
        stale_after("a rename", lambda: os.rename(os.path.join(root, "src", "a.cpp"), os.path.join(root, "src", "z.cpp")))
        os.rename(os.path.join(root, "src", "z.cpp"), os.path.join(root, "src", "a.cpp"))
        made_here()
        append("tests/t.cpp", "int u;\n")  # not part of the binary
        check(bash_fn("gpu_prebuilt_stale", root)[0] == 1, "gpu_prebuilt_stale: a test file's edit made it stale")
        append("src/__pycache__/x.pyc", "x")  # ignored by git: does not travel
        rc = bash_fn("gpu_prebuilt_stale", root)[0]
        check(rc == (1 if git else 0), f"gpu_prebuilt_stale with an ignored file, git={git}: exit {rc}")
        shutil.rmtree(os.path.join(root, "src", "__pycache__"))
    write_json(prebuilt, {"commit": "0123456789abcdef"})
    rc, why = bash_fn("gpu_prebuilt_stale", root)
    check(rc == 0 and "unrecorded" in why, f"gpu_prebuilt_stale without a recorded hash: exit {rc} {why!r}")


def prebuilt_use_check(tmp):
    """The check itself (its build stage, and --preflight) on stand-in prebuilt folders
    (VECBENCH_GPU_CHECK_PREBUILT): a binary recorded as made from this tree starts; one made from
    other sources is not used, and the build stage says so (its build there then fails here: this
    Python's torch has no CUDA, or there is no nvcc)."""
    rc, here = bash_fn("gpu_source_hash", ROOT)
    check(rc == 0 and len(here) == 16, f"gpu_source_hash of the tree: {here!r}")
    model = os.path.join(tmp, "stand_in_model.pt")
    with open(model, "w") as f:
        f.write("not read: the stand-in binary answers every command\n")
    for name, sources in (("current", here), ("stale", "0" * 16)):
        folder = os.path.join(tmp, f"prebuilt_{name}")
        os.makedirs(folder)
        with open(os.path.join(folder, "vecbench"), "w") as f:
            f.write('#!/bin/sh\necho "CUDA: 13.0 build, nvJPEG yes (stand-in)"\n')
        os.chmod(os.path.join(folder, "vecbench"), 0o755)
        write_json(os.path.join(folder, "prebuilt.json"), {"commit": "0123456789abcdef", "sources": sources})
        env = env_for({"VECBENCH_GPU_CHECK_PREBUILT": folder})
        pre = subprocess.run([SCRIPT, "--preflight", "--budget-left", "900"], env=env, capture_output=True, text=True)
        check("timeout_s 450 command: tools/device/gpu_check.sh --budget-left 900" in pre.stdout,
              f"--preflight ({name}) does not print the call: {pre.stdout!r}")
        if name == "stale":
            check(pre.returncode == 1 and "made from other sources" in pre.stdout and "NOT ready" in pre.stdout,
                  f"--preflight on a stale binary: exit {pre.returncode} {pre.stdout!r}")
        out, work = os.path.join(tmp, f"use_{name}", "out"), os.path.join(tmp, f"use_{name}", "work")
        subprocess.run([SCRIPT, "--deadline", "90", "--devices", "cpu", "--stage", "smoke", "--model", model,
                        "--work", work, out], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=150)
        with open(os.path.join(work, "stages.tsv")) as f:
            build = next((line for line in f if line.startswith("build\t")), "")
        if name == "current":
            check(build.startswith("build\tok\t") and "prebuilt: 0123456789 started" in build,
                  f"a prebuilt binary of this tree was not started: {build!r}")
        else:
            check("made from other sources" in build and "not used" in build and "started" not in build,
                  f"a stale prebuilt binary was not refused: {build!r}")


def verdict_check(tmp):
    """gpu_env.sh's gpu_configure_verdict, the checks of a configure log that CI's cuda-build and
    the GPU machine's build (gpu_check.sh build_here) share, on the lines CMake prints."""
    good = ["-- vecbench: LibTorch 2.11.0, CUDA: ON", "-- vecbench: nvJPEG: ON (/x/libnvjpeg.so.13)",
            "-- vecbench: image decoding: JPEG+PNG (libjpeg, libpng)"]
    cases = [(good, "0", 0, ""), (good[1:], "0", 1, "did not enable CUDA"), ([good[0], good[2]], "0", 1, "nvJPEG"),
             ([good[0], good[2]], "1", 0, ""), (good[:2], "0", 2, "codecs")]
    for k, (lines, allow, want_rc, want_why) in enumerate(cases):
        log = os.path.join(tmp, f"cmake{k}.log")
        with open(log, "w") as f:
            f.write("\n".join(["-- The CXX compiler identification is GNU 12.2.0", *lines, "-- Configuring done"]) + "\n")
        rc, why = bash_fn("gpu_configure_verdict", log, allow)
        check(rc == want_rc and want_why in why,
              f"gpu_configure_verdict case {k}: exit {rc} {why!r}, wanted {want_rc} {want_why!r}")


def main():
    with tempfile.TemporaryDirectory(prefix="gpu_check_dry.") as tmp:
        # 0. The configure checks both builds share; the prebuilt binary only in its own tree (and
        #    the check's use of it); the report's ratios on hand-made files.
        verdict_check(tmp)
        stale_check(tmp)
        prebuilt_use_check(tmp)
        report_check(tmp)
        # 1. The whole dry run, from a budget (750 s left: a 240 s deadline, which the fake clock
        #    never reaches): every stage that can run on a CPU runs.
        report, names, _ = run_check(tmp, "full", ["--budget-left", "750"], CALM)
        check("deadline 240 s" in report, "full: --budget-left 750 did not give a 240 s deadline")
        results = [n for n in names if n.startswith("./results/") and n.endswith(".json")]
        check(any("/check_seed/" in n for n in results), f"full: no seed result JSON in the archive: {names}")
        check(any("/verify_fp32/" in n for n in results), f"full: no verification result in the archive: {names}")
        for f in ("./stages.tsv", "./check.json", "./probe.json", "./logs/export.txt"):
            check(f in names, f"full: no {f} in the archive: {names}")
        for s in ("probe", "smoke", "seed", "verify_fp32", "more"):
            check("| ok |" in row(report, s), f"full: stage {s} not ok: {row(report, s)}")
        check("not run: dry run on cpu: fp16 needs CUDA" in report, "full: fp16 not reported as not run")
        for target in ("split gain at equal batch 2", "(the control: one replica)", "the seed's mistake at batch 1",
                       "batching alone", "(stage more)", "end to end with cpu decoding"):
            line = next((x for x in report.splitlines() if target in x), "")
            check("**" in line, f"full: the target '{target}' has no ratio: {line!r}")
        check("fp32 against the CPU fp32 reference: largest relative difference" in report,
              "full: the fp32 verification target has no figure")
        # 2. Too short a deadline (30 s: 20 s for a stage after the 10 s reserve), and the smoke
        #    test hangs: its step is killed by its timeout, which was the 20 s the deadline left
        #    (on the fake clock, which only that step moves), the rest is not run for lack of time,
        #    and the check ends on its own before its deadline.
        #    A model is given (never read: the smoke test's steps hang), so that no export runs in
        #    the background: whether one had ended by then would decide the check's path.
        model = os.path.join(tmp, "short_model.pt")
        with open(model, "w") as f:
            f.write("not read: every step of the smoke stage hangs\n")
        report, names, said = run_check(tmp, "short", ["--deadline", "30", "--model", model], {
            "VECBENCH_GPU_CHECK_TEST_CLOCK": "fake", "VECBENCH_GPU_CHECK_TEST_HANG": "smoke"})
        smoke = row(report, "smoke")
        check("| timeout |" in smoke, f"short: the hanging smoke stage is not a timeout: {smoke}")
        check("timed out after 20 s" in smoke, f"short: the hung step was not given what the deadline left: {smoke}")
        for s in ("seed", "decode", "verify_fp32", "more"):
            r = row(report, s)
            check("| skipped |" in r and "not enough time" in r, f"short: stage {s} not skipped for time: {r}")
        check("./stages.tsv" in names, "short: no stage records in the archive")
        end = [x for x in said.splitlines() if x.startswith("=== end (")]
        check(len(end) == 1 and " s, -" not in end[0], f"short: no end before the deadline on the check's clock: {end}")
        # 3. Killed at a seeded point.
        killed_check(tmp, int(os.environ.get("VECBENCH_TEST_SEED", "63")))
    print("gpu_check dry run: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
