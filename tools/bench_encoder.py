#!/usr/bin/env python3
"""DINOv2 on vecbench's route beside PyTorch eager and torch.compile, on the same weights (issue #62).

Each round runs, one after the other on the same machine: vecbench (`vectorize --like dgm-eval
--encoder E --images synthetic:N --format none`, the default route: LibTorch on data-parallel
replicas; its own img/s figure and the process's peak RSS), then each peer in a process of its own
on the same network (tools/vecbench_export/dinov2.py, the hub's operations) and the same weights,
at its best batch of --batches (each batch timed over N images after a warm-up; best of them per
round) with every core as intra-op threads: PyTorch eager in Debian's torch 1.13 (the LibTorch
vecbench links) and in PyPI's torch of the `torch` peer venv (tools/peers_setup.sh), and that
torch's torch.compile (inductor, freezing on; `--compile-mode`). Reported per runner: the median of
the rounds, the worst round, the peak RSS; and vecbench's ratio to the best peer per round.

  /usr/bin/python3 tools/bench_encoder.py --encoder dinov2-vit-s-14 --rounds 5 --out results/encoders/F.json
      [--vecbench build/vecbench] [--images 32] [--batches 1,4,8] [--torch-venv DIR] [--allow-dirty]

Random weights in the hub checkpoint's format are written into a work folder's $TORCH_HOME (speed
does not depend on them). Machine facts (lscpu's model name and flags) and the binary's commit go into
the JSON (tools/provenance.py: a build from a dirty tree is refused unless --allow-dirty or
VECBENCH_ALLOW_DIRTY=1, and then said)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from provenance import Refused, binary_record  # noqa: E402

PEER = r'''
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from vecbench_export import dinov2
enc, n, batches, compile_mode = sys.argv[2], int(sys.argv[3]), [int(b) for b in sys.argv[4].split(",")], sys.argv[5]
torch.set_num_threads(os.cpu_count())
m = dinov2.DinoV2Features(enc, "dgm-eval")
m.load_checkpoint(dinov2.seeded_checkpoint(enc, 1))
m.eval()
t_compile = 0.0
if compile_mode != "eager":
    import torch._inductor.config as cfg
    cfg.freezing = True
    t0 = time.perf_counter()
    m = torch.compile(m, mode=None if compile_mode == "default" else compile_mode)
best = 0.0
with torch.inference_mode():
    for b in batches:
        x = torch.rand(b, 3, 224, 224) * 255
        t0 = time.perf_counter()
        m(x)  # warm-up (and, compiled, the compile of this shape)
        m(x)
        if compile_mode != "eager":
            t_compile += time.perf_counter() - t0
        calls = max(1, n // b)
        t0 = time.perf_counter()
        for _ in range(calls):
            m(x)
        best = max(best, calls * b / (time.perf_counter() - t0))
print(json.dumps({"img_per_s": best, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch": torch.__version__, "warmup_and_compile_s": t_compile}))
'''


def lscpu():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", out).group(1).strip()
    flags = re.search(r"Flags:\s*(.*)", out).group(1).split()
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags]
    return {"model": model, "family": re.search(r"CPU family:\s*(\d+)", out).group(1),
            "model_number": re.search(r"Model:\s*(\d+)", out).group(1), "isa": isa, "cores": os.cpu_count()}


def run_vecbench(a, env):
    r = subprocess.run(["/usr/bin/time", "-v", a.vecbench, "vectorize", "--images", f"synthetic:{a.images}", "--out",
                        os.path.join(a.work, "none"), "--format", "none", "--like", "dgm-eval", "--encoder", a.encoder,
                        "--progress", "0"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"vecbench failed:\n{r.stderr}")
    ips = float(re.search(r"img_per_s=([\d.]+)", r.stdout).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024
    route = re.search(r"engine (\w+), strategy (\S+) on (\S+) =.*?batch (\d+)", r.stderr)
    return {"img_per_s": ips, "peak_rss_mb": rss, "route": route.group(0) if route else "?"}


def run_peer(a, python, mode):
    r = subprocess.run([python, "-c", PEER, HERE, a.encoder, str(a.images), a.batches, mode], capture_output=True,
                       text=True, env=dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count())))
    if r.returncode != 0:
        raise SystemExit(f"{python} {mode} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoder", default="dinov2-vit-s-14")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--images", type=int, default=32)
    ap.add_argument("--batches", default="1,4,8")
    ap.add_argument("--vecbench", default=os.path.join(HERE, "..", "build", "vecbench"))
    ap.add_argument("--torch-venv", default=os.path.expanduser("~/.cache/vecbench/venvs/torch"))
    ap.add_argument("--compile-mode", default="default", help="torch.compile's mode (default, max-autotune, ...)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--allow-dirty", action="store_true", help="run a binary built from a dirty tree (said in the JSON)")
    a = ap.parse_args()
    try:
        binary = binary_record(a.vecbench, a.allow_dirty or None)
    except Refused as e:
        sys.exit(f"bench_encoder: refused: {e}")
    a.work = a.work or tempfile.mkdtemp(prefix="bench-encoder-")
    sys.path.insert(0, HERE)
    import torch
    from vecbench_export import dinov2
    ckpt = os.path.join(a.work, "torch", "hub", "checkpoints")
    os.makedirs(ckpt, exist_ok=True)
    if not os.path.exists(os.path.join(ckpt, dinov2.checkpoint_name(a.encoder))):
        torch.save(dinov2.seeded_checkpoint(a.encoder, 1), os.path.join(ckpt, dinov2.checkpoint_name(a.encoder)))
    env = dict(os.environ, TORCH_HOME=os.path.join(a.work, "torch"), VECBENCH_CACHE=os.path.join(a.work, "cache"))
    run_vecbench(a, env)  # the import, once, outside the rounds
    pyenv = os.path.join(a.torch_venv, "bin", "python")
    runners = {"vecbench": lambda: run_vecbench(a, env),
               "eager (torch 1.13)": lambda: run_peer(a, "/usr/bin/python3", "eager")}
    if os.path.exists(pyenv):
        runners["eager (PyPI torch)"] = lambda: run_peer(a, pyenv, "eager")
        runners[f"torch.compile ({a.compile_mode}, freezing)"] = lambda: run_peer(a, pyenv, a.compile_mode)
    rounds = []
    for r in range(a.rounds):
        got = {name: fn() for name, fn in runners.items()}
        best_peer = max(v["img_per_s"] for k, v in got.items() if k != "vecbench")
        got["ratio_to_best_peer"] = got["vecbench"]["img_per_s"] / best_peer
        rounds.append(got)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v['img_per_s']:.3f}" for k, v in got.items() if k in runners) +
              f"; vecbench / best peer {got['ratio_to_best_peer']:.3f}", flush=True)
    summary = {}
    for name in runners:
        v = [x[name]["img_per_s"] for x in rounds]
        summary[name] = {"median_img_per_s": statistics.median(v), "worst_img_per_s": min(v),
                         "peak_rss_mb": max(x[name]["peak_rss_mb"] for x in rounds)}
    ratios = [x["ratio_to_best_peer"] for x in rounds]
    out = {"encoder": a.encoder, "cpu": lscpu(), "binary": binary, "images_per_measure": a.images, "batches": a.batches,
           "rounds": rounds, "summary": summary, "ratio_median": statistics.median(ratios),
           "ratio_worst": min(ratios)}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps({"summary": summary, "ratio_median": out["ratio_median"], "ratio_worst": out["ratio_worst"]},
                     indent=2))


if __name__ == "__main__":
    main()
