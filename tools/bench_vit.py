#!/usr/bin/env python3
"""The vision transformers on vecbench's default route beside their peers at their own best (issue #66).

Each round runs, one after the other on this machine, on the same network and weights (random, in
the checkpoint's format: speed does not depend on them):
- vecbench's default command on 2N photos (opencv-doc's JPEGs: decode, the protocol's resize, the
  network, the .npy writes), and on 2N synthetic images (its model-only rate): the img/s it prints
  (its clock starts once its replicas have: reading the export, as the peers' rates leave out
  their start and warm-up);
- PyTorch eager, Debian's torch 1.13 (what vecbench's LibTorch route runs) and a PyPI torch (the
  venv of --torch-venv), and that torch's torch.compile (inductor, freezing on; --compile-mode),
  each at the best of batch 1 and 4, every core as intra-op threads;
- ONNX Runtime on the module's ONNX export (torch 1.13, opset 17): batch 1 on 2 threads, and one
  single-thread session per core (its own advice for throughput on few cores), the best of them;
- OpenVINO on the same ONNX file: the LATENCY and the THROUGHPUT hints, the best of them.
Reported: each runner's median and worst round, vecbench's ratio to the best peer of each round
(whole job and model-only), their median and worst round, the GMAC per image and the fraction of
the CPU's peak fp32 rate vecbench reaches (measured by tools/fma_peak.c on every core, or --peak-gmacs).

  /usr/bin/python3 tools/bench_vit.py --encoder dinov2-vit-l-14 --rounds 5 --out results/encoders/F.json
      [--vecbench build/vecbench] [--images 8] [--seconds 8] [--torch-venv DIR] [--allow-dirty]

The binary's commit (tools/provenance.py: a dirty tree is refused unless --allow-dirty, and then
said) and lscpu's model name and flags go into the JSON."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from provenance import Refused, binary_record  # noqa: E402
from bench_encoder import lscpu  # noqa: E402

VENVS = os.path.expanduser(os.environ.get("VECBENCH_VENVS", "~/.cache/vecbench/venvs"))
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"
PROTOCOL = {"dinov2": "dgm-eval", "clip": "torch-fidelity"}

TORCH_PEER = r'''
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from vecbench_export import encoders
enc, protocol, sd_path, seconds, mode = sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6]
torch.set_num_threads(os.cpu_count())
m = encoders.build(enc, protocol, torch.load(sd_path))
size = encoders.shape_of(enc)[0]
t_compile = 0.0
if mode != "eager":
    import torch._inductor.config as cfg
    cfg.freezing = True
    m = torch.compile(m, mode=None if mode == "default" else mode)
best, at = 0.0, 0
with torch.inference_mode():
    for b in (1, 4):
        x = torch.rand(b, 3, size, size) * 255
        t0 = time.perf_counter()
        m(x)  # warm-up (and, compiled, the compile of this shape)
        m(x)
        t_compile += time.perf_counter() - t0
        n, t0 = 0, time.perf_counter()
        while n == 0 or time.perf_counter() - t0 < seconds:
            m(x)
            n += b
        r = n / (time.perf_counter() - t0)
        if r > best:
            best, at = r, b
print(json.dumps({"img_per_s": best, "batch": at, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch": torch.__version__, "warmup_and_compile_s": t_compile}))
'''

EXPORT = r'''
import sys, torch
sys.path.insert(0, sys.argv[1])
from vecbench_export import encoders
enc, protocol, sd_path, onnx_path = sys.argv[2:6]
m = encoders.build(enc, protocol, torch.load(sd_path))
size = encoders.shape_of(enc)[0]
x = torch.rand(1, 3, size, size) * 255
torch.onnx.export(m, x, onnx_path, opset_version=17, input_names=["x"], output_names=["f"],
                  dynamic_axes={"x": {0: "n"}, "f": {0: "n"}})
'''


def family(encoder):
    return "clip" if encoder.startswith("clip-") else "dinov2"


def peak_gmacs(work):
    """The CPU's measured peak fp32 GMAC/s (tools/fma_peak.c: every core's FMA units busy)."""
    exe = os.path.join(work, "fma_peak")
    run(["cc", "-O3", "-fopenmp", "-o", exe, os.path.join(HERE, "fma_peak.c")], who="cc fma_peak.c")
    line = run([exe], dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count())), "fma_peak").stdout.strip()
    return {"gmacs": float(re.search(r"gmacs=([\d.]+)", line).group(1)), "source": "tools/fma_peak.c: " + line}


def run(cmd, env=None, who=""):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"bench_vit: {who or cmd[0]} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return r


def vecbench(a, images, out, env):
    shutil.rmtree(out, ignore_errors=True)
    fmt = "none" if images.startswith("synthetic:") else "npy"
    r = run(["/usr/bin/time", "-v", a.vecbench, "vectorize", "--model", a.model, "--images", images, "--out", out,
             "--format", fmt, "--progress", "0"], env, "vecbench")
    route = re.search(r"engine (\w+), strategy (\S+) on (\S+) =.*?batch (\d+)", r.stderr + r.stdout)
    return {"img_per_s": float(re.search(r"img_per_s=([\d.]+)", r.stdout).group(1)),
            "wall_s": float(re.search(r"wall_s=([\d.]+)", r.stdout).group(1)),
            "peak_rss_mb": int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024,
            "route": route.group(0) if route else "?"}


def torch_peer(a, python, mode):
    r = run([python, "-c", TORCH_PEER, HERE, a.encoder, a.protocol, a.sd, str(a.seconds), mode],
            dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count())), f"{python} {mode}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def printed_rate(cmd, env, who):
    r = run(cmd, env, who)
    line = [x for x in r.stdout.splitlines() if "img_per_s=" in x][-1]
    return {"img_per_s": float(re.search(r"img_per_s=([\d.]+)", line).group(1)), "line": line}


def best_of(configs):
    got = {name: fn() for name, fn in configs.items()}
    name = max(got, key=lambda k: got[k]["img_per_s"])
    return {"img_per_s": got[name]["img_per_s"], "best": name, "sweep": got}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoder", default="dinov2-vit-l-14")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--images", type=int, default=8,
                    help="vecbench runs 2N photos and 2N synthetic images (printed rate: after its replicas' start)")
    ap.add_argument("--resummarize", metavar="FILE", help="recompute FILE of the first version (see resummarize) and exit")
    ap.add_argument("--seconds", type=float, default=8.0, help="each peer's timed window")
    ap.add_argument("--vecbench", default=os.path.join(HERE, "..", "build", "vecbench"))
    ap.add_argument("--torch-venv", default=os.path.join(VENVS, "torch"))
    ap.add_argument("--compile-mode", default="default", help="torch.compile's mode (default, max-autotune, ...)")
    ap.add_argument("--peers", default="torch113,torch,compile,ort,ov",
                    help="which peers run: torch113 (Debian's eager), torch (the venv's eager), compile, ort, ov")
    ap.add_argument("--peak-gmacs", type=float, help="the CPU's peak fp32 GMAC/s (else estimated from lscpu)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", help="the JSON file to write (required unless --resummarize)")
    ap.add_argument("--allow-dirty", action="store_true", help="run a binary built from a dirty tree (said in the JSON)")
    a = ap.parse_args()
    if a.resummarize:
        return resummarize(a.resummarize)
    if not a.out:
        ap.error("--out is required")
    try:
        binary = binary_record(a.vecbench, a.allow_dirty or None)
    except Refused as e:
        sys.exit(f"bench_vit: refused: {e}")
    a.work = a.work or tempfile.mkdtemp(prefix="bench-vit-")
    os.makedirs(a.work, exist_ok=True)
    a.protocol = PROTOCOL[family(a.encoder)]
    sys.path.insert(0, HERE)
    import torch
    from vecbench_export import clip, dinov2
    sd = clip.seeded_visual(a.encoder, 1) if family(a.encoder) == "clip" else dinov2.seeded_checkpoint(a.encoder, 1)
    a.sd = os.path.join(a.work, "weights.pt")
    torch.save(sd, a.sd)
    del sd
    a.model = os.path.join(a.work, "model.pt")
    run([sys.executable, os.path.join(HERE, "export_encoder.py"), "--encoder", a.encoder, "--protocol", a.protocol,
         "--seed", "1", "--out", a.model], who="export_encoder.py")
    onnx = os.path.join(a.work, "model.onnx")
    run([sys.executable, "-c", EXPORT, HERE, a.encoder, a.protocol, a.sd, onnx], who="ONNX export")
    photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))[:2 * a.images]
    if len(photos) < 2 * a.images:
        sys.exit(f"bench_vit: {PHOTOS} has {len(photos)} JPEGs, --images {a.images} needs {2 * a.images}")
    lists = []
    for n in (a.images, 2 * a.images):
        lists.append(os.path.join(a.work, f"photos{n}.txt"))
        with open(lists[-1], "w") as f:
            f.write("".join(os.path.join(PHOTOS, p) + "\n" for p in photos[:n]))
    env = dict(os.environ, VECBENCH_CACHE=os.path.join(a.work, "cache"))
    size = str(run([sys.executable, "-c", f"import sys; sys.path.insert(0, {HERE!r}); from vecbench_export import "
                    f"encoders; print(encoders.shape_of({a.encoder!r})[0])"]).stdout.strip())
    peer_env = dict(os.environ, VECBENCH_PEER_SIZE=size)
    ort, ov = os.path.join(VENVS, "onnxruntime", "bin", "python"), os.path.join(VENVS, "openvino", "bin", "python")
    peers_dir = os.path.join(HERE, "peers")
    cores = str(os.cpu_count())
    secs = str(a.seconds)
    want = set(a.peers.split(","))
    runners = {}
    if "torch113" in want:
        runners["eager (torch 1.13)"] = lambda: torch_peer(a, "/usr/bin/python3", "eager")
    pyenv = os.path.join(a.torch_venv, "bin", "python")
    if os.path.exists(pyenv) and "torch" in want:
        runners["eager (PyPI torch)"] = lambda: torch_peer(a, pyenv, "eager")
    if os.path.exists(pyenv) and "compile" in want:
        runners[f"torch.compile ({a.compile_mode}, freezing)"] = lambda: torch_peer(a, pyenv, a.compile_mode)
    if os.path.exists(ort) and "ort" in want:
        runners["onnxruntime"] = lambda: best_of({
            f"batch 1, {cores} threads": lambda: printed_rate(
                [ort, os.path.join(peers_dir, "ort_bench.py"), onnx, "1", cores, secs, "1"], peer_env, "ort"),
            f"batch 1, {cores} processes x 1 thread": lambda: printed_rate(
                [ort, os.path.join(peers_dir, "ort_bench.py"), onnx, "1", "1", secs, cores], peer_env, "ort")})
    if os.path.exists(ov) and "ov" in want:
        runners["openvino"] = lambda: best_of({
            hint: lambda hint=hint: printed_rate(
                [ov, os.path.join(peers_dir, "openvino_bench.py"), onnx, "1", cores, "f32", secs, hint], peer_env, "ov")
            for hint in ("LATENCY", "THROUGHPUT")})
    vecbench(a, lists[0], os.path.join(a.work, "warm"), env)  # the first start, outside the rounds
    rounds = []
    for r in range(a.rounds):
        got = {"vecbench (photos)": vecbench(a, lists[1], os.path.join(a.work, "out"), env),
               "vecbench (model-only)": vecbench(a, f"synthetic:{2 * a.images}", os.path.join(a.work, "m"), env)}
        got.update({name: fn() for name, fn in runners.items()})
        rounds.append(got)
        rate_round(got, list(runners))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v['img_per_s']:.3f}" for k, v in got.items() if isinstance(v, dict)) +
              f"; best peer {got['best_peer']}; ratios whole job {got['ratio_whole_job']:.3f}, model-only "
              f"{got['ratio_model_only']:.3f}", flush=True)
    out = {"encoder": a.encoder, "protocol": a.protocol, "input_size": int(size), "cpu": lscpu(), "binary": binary,
           "images_per_vecbench_run": 2 * a.images, "peer_seconds": a.seconds, "peers": list(runners), "rounds": rounds,
           "peak": {"gmacs": a.peak_gmacs, "source": "--peak-gmacs"} if a.peak_gmacs else peak_gmacs(a.work),
           "gmac_per_image": gmac_per_image(a.encoder)}
    write(summarize(out), a.out)


def rate_round(got, peers):
    """A round's best peer and vecbench's ratios to it."""
    best = max(peers, key=lambda k: got[k]["img_per_s"])
    got["best_peer"] = best
    got["ratio_whole_job"] = got["vecbench (photos)"]["img_per_s"] / got[best]["img_per_s"]
    got["ratio_model_only"] = got["vecbench (model-only)"]["img_per_s"] / got[best]["img_per_s"]


def summarize(out):
    """Each runner's median and worst round, the ratios' median and worst round, the fraction of peak."""
    summary = {}
    for name in ["vecbench (photos)", "vecbench (model-only)", *out["peers"]]:
        v = [x[name]["img_per_s"] for x in out["rounds"]]
        summary[name] = {"median_img_per_s": statistics.median(v), "worst_img_per_s": min(v)}
        rss = [x[name]["peak_rss_mb"] for x in out["rounds"] if "peak_rss_mb" in x[name]]
        if rss:
            summary[name]["peak_rss_mb"] = max(rss)
    out["summary"] = summary
    for k in ("ratio_whole_job", "ratio_model_only"):
        v = [x[k] for x in out["rounds"]]
        out[k] = {"median": statistics.median(v), "worst": min(v)}
    out["fraction_of_peak_model_only"] = (summary["vecbench (model-only)"]["median_img_per_s"] * out["gmac_per_image"] /
                                          out["peak"]["gmacs"])
    return out


def write(out, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps({k: out[k] for k in ("summary", "ratio_whole_job", "ratio_model_only", "gmac_per_image",
                                          "fraction_of_peak_model_only")}, indent=2))


def resummarize(path):
    """A file of the first version (vecbench's rate as the difference of an N and a 2N run, which a
    slow start of the N run, e.g. the export read from disk after the host dropped its page cache,
    turned into 2.8x the physical rate): the 2N run's own printed rate instead (vectorize's clock
    starts after its replicas have: both runs gave the same rate where neither start was slow), the
    difference kept as steady_from_n_and_2n_img_per_s."""
    with open(path) as f:
        out = json.load(f)
    peers = [k for k, v in out["rounds"][0].items() if isinstance(v, dict) and not k.startswith("vecbench")]
    out.setdefault("peers", peers)
    for got in out["rounds"]:
        for k in ("vecbench (photos)", "vecbench (model-only)"):
            if "single_run_img_per_s" in got[k]:
                got[k]["steady_from_n_and_2n_img_per_s"] = got[k]["img_per_s"]
                got[k]["img_per_s"] = got[k].pop("single_run_img_per_s")
        rate_round(got, out["peers"])
    out["images_per_vecbench_run"] = 2 * out["images_per_vecbench_run"]
    out["resummarized"] = resummarize.__doc__.split("\n\n")[0].replace("\n", " ")
    write(summarize(out), path)


def gmac_per_image(encoder):
    """The matmuls' and attention's multiply-accumulates of one image (the patch embedding, each
    block's qkv, attention, projection and feed-forward, CLIP's projection), in GMAC."""
    from vecbench_export import clip, dinov2
    if family(encoder) == "clip":
        _, size, d, depth, patch, embed = clip.CLIP[encoder]
    else:
        _, d, depth, _, ffn = dinov2.DINOV2[encoder]
        size, patch, embed = dinov2.INPUT_SIZE, dinov2.PATCH, 0
    p = (size // patch) ** 2
    t = p + 1
    hidden = dinov2.swiglu_hidden(d) if family(encoder) == "dinov2" and dinov2.DINOV2[encoder][4] == "swiglu" else 4 * d
    ffn_macs = t * d * 2 * hidden + t * hidden * d if hidden != 4 * d else 2 * t * d * hidden
    block = t * d * 3 * d + 2 * t * t * d + t * d * d + ffn_macs
    return (p * 3 * patch * patch * d + depth * block + d * embed) / 1e9


if __name__ == "__main__":
    main()
