#!/usr/bin/env python3
"""Writes the whole-job benchmark's result (tools/bench_whole_job.sh): medians per command,
the ratios of issues #13 and #29 and whether each target holds, and the main ratios taken round
by round (paired: median and range; a drift of the machine's speed between rounds cancels), as
OUT.md and OUT.json.
usage: bench_whole_job_report.py RAW.jsonl OUT ROUTE_LINE CORES UPTIME [VERSION_LINE]
The machine (CPU model, family/model, the ISA extensions that matter here) is read from
/proc/cpuinfo and written into both files. PROVENANCE (and PROVENANCE_OLD, for OLD_VECBENCH) in
the environment: tools/provenance.py's JSON record of the binary, whose commit and state (clean
or dirty) both files then give; without it, only VERSION_LINE (reports written again from old raw
runs). Both files open with a headline: the figures a summary may quote, with the CPU they are
from."""
import json
import os
import re
import statistics
import sys

from provenance import markdown_line

raw, out, route, cores, uptime = sys.argv[1:6]
version = sys.argv[6] if len(sys.argv) > 6 else ""


def provenance(var):
    """tools/provenance.py's record in the file named by environment variable VAR, or None."""
    path = os.environ.get(var, "")
    return json.load(open(path)) if path else None


binary, binary_old = provenance("PROVENANCE"), provenance("PROVENANCE_OLD")


def cpu_record(path="/proc/cpuinfo"):
    """The first processor's model name, family/model and the ISA flags the engines choose by."""
    info = {}
    for line in open(path):
        if not line.strip():
            break
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "avx_vnni", "amx_tile"]
    flags = info.get("flags", "").split()
    return {"cpu_model": info.get("model name", "unknown"), "cpu_family": info.get("cpu family"),
            "cpu_model_number": info.get("model"), "cpu_isa": [f for f in wanted if f in flags]}


machine = cpu_record()
# tools/bench_whole_job.sh CPUID_MASK=...: the programs saw CPUID without some of these flags
mask = os.environ.get("CPUID_MASK", "")
MASK_SEEN = {"avx2": "AVX2 and FMA only (no AVX-512, no VNNI, no AMX), as an AMD Zen 3",
             "avx512": "AVX-512 with VNNI and BF16, no AMX and no AVX512-FP16, as an AMD Zen 4"}
if mask:
    machine["cpuid_mask"] = mask
runs = [json.loads(l) for l in open(raw) if l.strip()]
by = {}
for r in runs:
    by.setdefault(r["name"], []).append(r)
IMAGES = {"default-60": 60, "default-100": 100, "int8-100": 100, "bf16-100": 100, "default-100-vc": 100, "seed-style-100-vc": 100,
          "old-default-60": 60, "old-default-100": 100, "old-default-100-vc": 100}


def med(name, key):
    vals = [r[key] for r in by.get(name, []) if r.get(key) is not None]
    return statistics.median(vals) if vals else None


# Commands whose rate is the img/s they printed (peers, model-only and large-photo runs); the
# others' is their images over their wall time.
PRINTS_RATE = ("large-", "model-only", "ort", "ov-", "ncnn-", "torch-", "sweep-")
# The fp32 model-only peers of each round (*-best: the best of each peer's sweep, issue #50)
FP32_PEERS = ("ort-b8-t2", "ov-b8-t2", "ort-best", "ov-best", "ncnn-best", "torch-best")


def printed_ips(r):
    """The img/s a run printed itself, or None."""
    m = re.search(r"img_per_s=([\d.]+)", r["line"])
    return float(m.group(1)) if m else None


def images(name):
    return 100 if name.startswith("seed-") else IMAGES[name]


def line_ips(name):
    """Median of the img/s a command printed itself (vecbench's own pipeline figure)."""
    vals = [v for v in (printed_ips(r) for r in by.get(name, [])) if v is not None]
    return statistics.median(vals) if vals else None


def ips(name):
    if name.startswith(PRINTS_RATE):
        return line_ips(name)
    w = med(name, "wall_s")
    return images(name) / w if w else None


def run_ips(name, r):
    """One run's img/s (as ips() takes it, for one run)."""
    if name.startswith(PRINTS_RATE):
        return printed_ips(r)
    return images(name) / r["wall_s"] if r.get("wall_s") else None


def paired_best(a, peers):
    """a's img/s over the best of `peers` in each round: (median, min, max, rounds), or None."""
    ra = [run_ips(a, r) for r in by.get(a, [])]
    best = []
    for k in range(len(ra)):
        rates = [run_ips(p, by[p][k]) for p in peers if len(by.get(p, [])) > k]
        best.append(max((x for x in rates if x), default=None))
    q = [x / y for x, y in zip(ra, best) if x and y]
    return (statistics.median(q), min(q), max(q), len(q)) if q else None


def each_round(a, peers):
    """Per round: a's img/s, the best of `peers` in that round (name, img/s) and the ratio."""
    rows = []
    for k, r in enumerate(by.get(a, [])):
        rates = {p: run_ips(p, by[p][k]) for p in peers if len(by.get(p, [])) > k}
        rates = {p: x for p, x in rates.items() if x}
        if rates and run_ips(a, r):
            best = max(rates, key=rates.get)
            rows.append((k + 1, run_ips(a, r), best, rates[best], run_ips(a, r) / rates[best]))
    return rows


def paired(a, b):
    """a's img/s over b's, round by round (the k-th run of each: the rounds interleave every
    command, so a drift of the machine's speed cancels): (median, min, max, rounds), or None."""
    ra = [run_ips(a, r) for r in by.get(a, [])]
    rb = [run_ips(b, r) for r in by.get(b, [])]
    q = [x / y for x, y in zip(ra, rb) if x and y]
    return (statistics.median(q), min(q), max(q), len(q)) if q else None


summary = {n: {"runs": len(v), "wall_s": med(n, "wall_s"), "rss_mb": med(n, "rss_kb") / 1024,
               "first_output_s": med(n, "first_output_s"), "img_per_s": ips(n)} for n, v in by.items()}
targets = []
if "default-100" in summary and "ort-b8-t2" in summary:  # the base set (BASE=0 skips it)
    ort = summary["ort-b8-t2"]["img_per_s"]
    d100, d60 = summary["default-100"]["img_per_s"], summary["default-60"]["img_per_s"]
    seed = summary["seed-style-100-vc"]["img_per_s"]
    m = re.search(r"on (cpu/(\d+)|cpu)\b.*?batch (\d+)", route)
    replicas = int(m.group(2)) if m and m.group(2) else 1
    batch = int(m.group(3)) if m else 4
    one_batch_s = batch * replicas / d100  # one replica's batch at the run's throughput
    startup = summary["default-100"]["first_output_s"]
    rss = max(summary["default-60"]["rss_mb"], summary["default-100"]["rss_mb"])
    peers = {k: summary[k]["img_per_s"] for k in FP32_PEERS if k in summary}
    best_peer = max(peers, key=peers.get)
    targets += [
        (f"default command, 100 photos vs the best model-only peer (`{best_peer}`, fp32; #29, #50)",
         d100 / peers[best_peer], ">= 1.2x", d100 / peers[best_peer] >= 1.2),
        ("default command, 100 photos vs ONNX Runtime model-only (b8, 2 threads)", d100 / ort, ">= 0.9x", d100 / ort >= 0.9),
    ]
    if "model-only-default" in summary:  # start-up and decoding off the critical path (#29)
        mo = summary["model-only-default"]["img_per_s"]
        targets.append(("default command, 100 photos (whole process) vs its own model-only rate (default route, "
                        "synthetic input)", d100 / mo, "-> 1.0x", d100 / mo >= 0.95))
        targets.append((f"vecbench's model-only rate vs the better peer (`{best_peer}`)", mo / peers[best_peer],
                        ">= 1.2x", mo / peers[best_peer] >= 1.2))
    # the opt-in routes (#29): not the default, not for FID; each beside the fp32 peers and its own peers
    for prec, own_peers in (("int8", ("ort-int8-b8-t2", "ov-int8-b8-t2")), ("bf16", ("ov-bf16-b8-t2",))):
        if f"{prec}-100" not in summary:
            continue
        whole, model = summary[f"{prec}-100"]["img_per_s"], summary.get(f"model-only-{prec}", {}).get("img_per_s")
        targets.append((f"opt-in {prec} (`--precision {prec}`), 100 photos, whole process vs the better fp32 "
                        f"model-only peer (`{best_peer}`)", whole / peers[best_peer], "(opt-in; no target)", True))
        if model and "model-only-default" in summary:
            targets.append((f"{prec} model-only rate vs fp32 model-only rate (default route, synthetic input)",
                            model / summary["model-only-default"]["img_per_s"], "(opt-in; no target)", True))
        same = {k: summary[k]["img_per_s"] for k in own_peers if k in summary}
        if same:
            best = max(same, key=same.get)
            targets.append((f"opt-in {prec}, 100 photos, whole process vs the better {prec} model-only peer "
                            f"(`{best}`)", whole / same[best], "(opt-in; no target)", True))
            if model:
                targets.append((f"{prec} model-only rate vs the better {prec} peer (`{best}`)", model / same[best],
                                "(opt-in; no target)", True))
    targets += [
        ("default command, 60 photos vs ONNX Runtime model-only", d60 / ort, ">= 0.8x", d60 / ort >= 0.8),
        ("default command (.vc), 100 photos vs the seed-style TorchScript sequential batch-1 run (.vc)",
         summary["default-100-vc"]["img_per_s"] / seed, ">= 2.0x", summary["default-100-vc"]["img_per_s"] / seed >= 2.0),
        (f"start-up: process start to first feature written (s), 100 photos; one batch = {one_batch_s:.2f} s",
         startup, f"<= {0.5 + one_batch_s:.2f} s", startup is not None and startup <= 0.5 + one_batch_s),
        ("peak RSS of the default command (MB), max of 60 and 100 photos", rss, "<= 600 MB", rss <= 600),
    ]
if "old-default-100-vc" in summary and "seed-style-100-vc" in summary:  # "before", for comparison
    old_vc = summary["old-default-100-vc"]["img_per_s"] / summary["seed-style-100-vc"]["img_per_s"]
    targets.append(("before (OLD_VECBENCH's default command, .vc) vs the seed-style run", old_vc, ">= 2.0x",
                    old_vc >= 2.0))
if "large-default" in summary:
    dec, mod = summary["large-decode"]["img_per_s"], summary["large-model"]["img_per_s"]
    combined = 1.0 / (1.0 / dec + 1.0 / mod)
    e2e = summary["large-default"]["img_per_s"]
    targets.append((f"large photos: end to end vs 1/(1/decode + 1/model) = 1/(1/{dec:.2f} + 1/{mod:.2f}) = "
                    f"{combined:.2f} img/s (vecbench's own img/s)", e2e / combined, ">= 0.9x", e2e / combined >= 0.9))
for n in sorted((k for k in summary if k.startswith("seed-dp3-b")), key=lambda k: int(k[len("seed-dp3-b"):])):
    b = n[len("seed-dp3-b"):]
    dp, sq = summary[n]["img_per_s"], summary.get(f"seed-seq-b{b}", {}).get("img_per_s")
    if sq:
        targets.append((f"the seed's 3 virtual devices, batch {b}: data-parallel cpu/3 vs sequential cpu (whole "
                        f"process, 100 photos, .vc)", dp / sq, ">= 1.0x (never slower)", dp / sq >= 1.0))
pairs = []  # (what, (median, min, max, rounds)): ratios taken within each round
if "default-100" in by:
    for peer in FP32_PEERS:
        pairs.append((f"default command, 100 photos, vs `{peer}`", paired("default-100", peer)))
    pairs.append(("**default command, 100 photos, vs the best fp32 peer of each round**",
                  paired_best("default-100", FP32_PEERS)))
    pairs.append(("default command, 100 photos, vs its own model-only rate", paired("default-100", "model-only-default")))
    pairs.append(("default command, 100 photos: after (this binary) vs before (`OLD_VECBENCH`)",
                  paired("default-100", "old-default-100")))
    pairs.append(("opt-in int8, 100 photos, vs the default command", paired("int8-100", "default-100")))
    pairs.append(("opt-in bf16, 100 photos, vs the default command", paired("bf16-100", "default-100")))
pairs = [(w, p) for w, p in pairs if p]


def spread(name):
    """(max - min) / median of a command's img/s over the rounds, or None."""
    v = [x for x in (run_ips(name, r) for r in by.get(name, [])) if x]
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else None


def headline():
    """The figures a summary may quote (issue #63), each as this file gives it, or None without the base set."""
    if "default-100" not in by or not any(p in summary for p in FP32_PEERS):
        return None
    peers = {k: summary[k]["img_per_s"] for k in FP32_PEERS if k in summary}
    best = max(peers, key=peers.get)
    d100 = summary["default-100"]["img_per_s"]
    rounds = paired_best("default-100", FP32_PEERS)
    mo = summary.get("model-only-default", {}).get("img_per_s")
    steal = [r["steal_share"] for r in runs if r.get("steal_share") is not None]
    h = {"cpu": f"{machine['cpu_model']} (family {machine['cpu_family']} model {machine['cpu_model_number']})",
         "cpuid_mask": mask or None, "peers_at": "their best (swept first)" if any(n.startswith("sweep-") for n in by)
         else "fixed settings (ONNX Runtime b8 x 2 threads, OpenVINO LATENCY b8 x 2 threads)",
         "whole_job_img_per_s": d100, "best_peer": best, "best_peer_img_per_s": peers[best],
         "ratio_of_medians": d100 / peers[best], "paired_median": rounds[0] if rounds else None,
         "worst_round": rounds[1] if rounds else None, "rounds": rounds[3] if rounds else 0,
         "model_only_ratio": mo / peers[best] if mo else None,
         "max_steal_share": max(steal) if steal else None, "whole_job_spread": spread("default-100"),
         "model_only_spread": spread("model-only-default"),
         "binary_commit": binary["commit"] if binary else None, "binary_dirty": binary["dirty"] if binary else None}
    return h


def headline_md(h):
    goal = lambda v: "" if v is None else (" (met)" if v >= 1.2 else " (**under the 1.2x goal**)")
    num = lambda v, f="{:.2f}": "-" if v is None else f.format(v)
    where = h["cpu"] + (f", CPUID masked to {h['cpuid_mask']}" if h["cpuid_mask"] else "")
    state = ("binary not recorded" if h["binary_dirty"] is None else
             f"binary {h['binary_commit']}, **dirty tree**" if h["binary_dirty"] else f"binary {h['binary_commit']}, clean")
    host = (f"The host: steal up to {num(h['max_steal_share'] and 100 * h['max_steal_share'], '{:.1f}')} % in a run"
            if h["max_steal_share"] is not None else "The host: steal not recorded")
    return (f"**Headline** ({where}; {state}; peers at {h['peers_at']}): the default command, 100 photos, whole "
            f"process: {h['whole_job_img_per_s']:.2f} img/s. Against the best fp32 peer of each round: median "
            f"{num(h['paired_median'])}{goal(h['paired_median'])} over {h['rounds']} rounds, worst round "
            f"{num(h['worst_round'])}{goal(h['worst_round'])}; ratio of the medians (against `{h['best_peer']}`, "
            f"{h['best_peer_img_per_s']:.2f} img/s): {h['ratio_of_medians']:.2f}{goal(h['ratio_of_medians'])}; "
            f"vecbench's model-only rate against it: {num(h['model_only_ratio'])}{goal(h['model_only_ratio'])}. "
            f"{host}; vecbench's own runs spread {num(h['whole_job_spread'] and 100 * h['whole_job_spread'], '{:.0f}')} % "
            f"(whole job) and {num(h['model_only_spread'] and 100 * h['model_only_spread'], '{:.0f}')} % (model only) "
            "from min to max over the median.\n\n")


head = headline()
json.dump({"machine": machine, "vecbench": version, "binary": binary, "binary_before": binary_old, "headline": head,
           "route": route, "cores": cores, "uptime": uptime, "summary": summary, "runs": runs,
           "targets": [{"what": t[0], "value": t[1], "target": t[2], "met": t[3]} for t in targets],
           "paired": [{"what": w, "median": p[0], "min": p[1], "max": p[2], "rounds": p[3]} for w, p in pairs]},
          open(out + ".json", "w"), indent=1)
with open(out + ".md", "w") as f:
    f.write(f"# Whole job (issues #13, #29), {out.rsplit('/', 1)[-1]}\n\n")
    f.write(f"`tools/bench_whole_job.sh` on {cores} cores of {machine['cpu_model']} (family "
            f"{machine['cpu_family']} model {machine['cpu_model_number']}; {', '.join(machine['cpu_isa'])}); "
            f"load when it ended: `{uptime.strip()}`.\n")
    if mask:
        f.write(f"**CPUID masked** (`CPUID_MASK={mask}`, tools/cpuid_mask.c through LD_AUDIT): every measured program "
                f"saw {MASK_SEEN.get(mask, mask)}, and took that CPU's code, on this machine's cores and caches "
                "(not that CPU's: its figures are a proxy, not a measurement there).\n")
    if binary:
        f.write(markdown_line(binary) + "\n")
    elif version:
        f.write(f"Binary: `{version.strip()}`\n")
    if binary_old:
        f.write(markdown_line(binary_old, "Before (`OLD_VECBENCH`)") + "\n")
    f.write(f"Default route: `{route.strip()}`\n\n")
    if head:
        f.write(headline_md(head))
    f.write("Commands (photo sets as the script builds them; `default-*` is `vecbench vectorize --images LIST "
            "--out OUT` with no other flag, no profile; `seed-style` adds `--format vc --engine torchscript "
            "--strategy sequential --devices cpu --batch 1 --decode-threads 1`; `old-default-*` is OLD_VECBENCH's "
            "default command; `ort-b8-t2` is `tools/peers/ort_bench.py inc.onnx 8 2 15`, `ov-b8-t2` `tools/peers/openvino_bench.py inc.onnx 8 2 f32 15`). Peak RSS in MiB "
            "(GNU time's %M / 1024). `large-default` is the default command on the LARGE photos, `large-decode` "
            "the same with `--engine none --decode-threads <cores> --format none` (the decode ceiling), "
            "`large-model` the default command on synthetic input (the model ceiling); their img/s is the "
            "figure vecbench printed (pipeline, not whole process). `seed-dp3-bB` / `seed-seq-bB`: the 100 photos "
            "to `.vc` with `--strategy data-parallel --devices cpu/3 --force` / `--strategy sequential --devices cpu` "
            "at `--batch B`. `int8-100` / `model-only-int8`: `default-100` / `model-only-default` with `--precision int8 "
            "--calibration CAL` (CAL: `vecbench calibrate` on the 60 photos, before the rounds); `ort-int8-b8-t2` / `ov-int8-b8-t2`: the "
            "peers' own int8 models (`tools/peers/quantize_int8.py` on the same 60 photos: ONNX Runtime's "
            "quantize_static QDQ per-channel, OpenVINO's nncf.quantize) in the same benchmark scripts. `bf16-100` / "
            "`model-only-bf16`: `default-100` / `model-only-default` with `--precision bf16`; `ov-bf16-b8-t2`: "
            "`tools/peers/openvino_bench.py inc.onnx 8 2 bf16 15`.\n\n")
    sweep = [n for n in summary if n.startswith("sweep-")]
    if sweep:
        f.write("The peers' settings, swept before the rounds (issue #50; 10 s each; `sweep-ort-pPtTbB`: "
                "`tools/peers/ort_bench.py inc.onnx B T 10 P`, P processes of T threads; `sweep-ov-HINT-bB-sS-qQ`: "
                "`tools/peers/openvino_bench.py inc.onnx B 2 f32 10 HINT S Q`, S streams and an async queue of Q "
                "requests for THROUGHPUT, auto/0: the plugin's choice; `sweep-ncnn-pPtT`: `tools/peers/ncnn_bench.py "
                "inc.ncnn.param T 10 P`, batch 1, fp32, Winograd on; `sweep-torch-MODE-pPtTbB`: "
                "`tools/peers/torch_bench.py MODE B T 10 P`, eager or torch.compile with freezing); the best of each "
                "peer (" + ", ".join(f"`{os.environ[k]}`" for k in ("ORT_BEST", "OV_BEST", "NCNN_BEST", "TORCH_BEST")
                                     if os.environ.get(k)) +
                ") ran in every round as `ort-best` / `ov-best` / `ncnn-best` / `torch-best` (15 s):\n\n"
                "| setting | img/s |\n|---|---:|\n")
        for n in sweep:
            f.write(f"| `{n}` | {summary[n]['img_per_s']:.2f} |\n")
        f.write("\n")
    f.write("| command | runs | wall s (median) | img/s | peak RSS MB | first feature written s |\n|---|---:|---:|---:|---:|---:|\n")
    for n, s in summary.items():
        if n.startswith("sweep-"):
            continue
        fo = "" if s["first_output_s"] is None else f"{s['first_output_s']:.2f}"
        f.write(f"| `{n}` | {s['runs']} | {s['wall_s']:.2f} | {s['img_per_s']:.2f} | {s['rss_mb']:.0f} | {fo} |\n")
    f.write("\n(The peers, `ort-*`, `ov-*`, `ncnn-*`, `torch-*`: img/s is their own model-only figure; their wall time "
            "includes a fixed 15 s loop.)\n\n")
    f.write("| target | value | wanted | met |\n|---|---:|---|---|\n")
    for what, v, want, ok in targets:
        f.write(f"| {what} | {v:.2f} | {want} | {'yes' if ok else 'NO'} |\n")
    if pairs:
        f.write("\nThe same ratios taken round by round (each round runs every command once, so a drift of the "
                "machine's speed between rounds cancels): median and range over the rounds.\n\n"
                "| ratio of img/s | median | min | max | rounds |\n|---|---:|---:|---:|---:|\n")
        for what, (m, lo, hi, n) in pairs:
            f.write(f"| {what} | {m:.3f} | {lo:.3f} | {hi:.3f} | {n} |\n")
    rounds = each_round("default-100", FP32_PEERS) if "default-100" in by else []
    if rounds:
        f.write("\nEach round: the default command on the 100 photos against the best fp32 peer of that round "
                "(#50), and vecbench's own model-only rate in the same round. Every program's rate moves with the "
                "host's speed of its moment, a short whole-job run's most, in either direction: read the worst "
                "and the best round alike, not one of them explained away.\n\n"
                "| round | default-100 img/s | best peer | its img/s | ratio | model-only-default img/s |\n"
                "|---:|---:|---|---:|---:|---:|\n")
        mo = by.get("model-only-default", [])
        for k, a, best, b, q in rounds:
            m = f"{run_ips('model-only-default', mo[k - 1]):.2f}" if len(mo) >= k else ""
            f.write(f"| {k} | {a:.2f} | `{best}` | {b:.2f} | {q:.3f} | {m} |\n")
print(open(out + ".md").read())
