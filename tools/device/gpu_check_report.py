#!/usr/bin/env python3
"""The GPU check's markdown report (tools/device/gpu_check.sh writes OUT_DIR, this reads it):
one table row per run of every `vecbench run` result file (median img/s, verification), the
`vectorize` decode runs (--decode cpu / gpu, and --engine none, the decode ceiling), and the
issue's targets computed from them, each ratio from runs of this one check:
  - data-parallel on cuda:0/3 (best batch) >= 1.5x the seed-style loop (sequential cuda:0 batch 1);
  - naive on cuda:0/3 shows the seed's slowdown against sequential cuda:0 at the same batch;
  - end to end (gpu decode) >= 80 % of min(decode ceiling, model ceiling).
Standard library only (the GPU machine has no registry).
  gpu_check_report.py OUT_DIR > OUT_DIR/gpu_check.md"""
import glob
import json
import os
import statistics
import sys


def runs_of(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        try:
            d = json.load(open(path))
        except (OSError, ValueError):
            continue
        if not isinstance(d, dict) or "runs" not in d:
            continue
        prec = d.get("config", {}).get("requested", {}).get("precision", "fp32")
        for r in d["runs"]:
            p = r.get("params", {})
            rate = r.get("summary", {}).get("images_per_s", {}).get("median")
            v = r.get("verification") or {}
            rows.append({"experiment": d.get("name", "?"), "precision": prec, "strategy": p.get("strategy"),
                         "devices": p.get("devices"), "batch": p.get("batch"), "input": p.get("input"),
                         "img_s": rate, "rel": v.get("max_rel_diff"), "tol": v.get("rel_tolerance"),
                         "status": r.get("status")})
    return rows


def decode_runs(out):
    got = {}
    for path in glob.glob(os.path.join(out, "decode_*_r*.json")):
        name = os.path.basename(path)[len("decode_"):].rsplit("_r", 1)[0]  # cpu_torchscript, gpu_none, ...
        try:
            s = json.load(open(path))
        except (OSError, ValueError):
            continue
        got.setdefault(name, []).append(s)
    return got


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def main(out):
    rows = runs_of(out)
    print("# GPU check\n")
    print("Every row is one run of `tools/device/gpu_check.sh` (median images/s over its repetitions;")
    print("verification against the CPU fp32 reference).\n")
    print("| experiment | precision | strategy | devices | batch | input | img/s | max rel diff | tolerance | status |")
    print("|---|---|---|---|---:|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['experiment']} | {r['precision']} | {r['strategy']} | {r['devices']} | {r['batch']} | "
              f"{r['input']} | {fmt(r['img_s'])} | {fmt(r['rel'], '.2e')} | {fmt(r['tol'], '.0e')} | {r['status']} |")
    dec = decode_runs(out)
    if dec:
        print("\n## Decoding real JPEGs (`vectorize`, data-parallel cuda:0/3, batch 32, 1 GB cap each)\n")
        print("| decode | engine | rounds | img/s (median) | on device | host fallbacks |")
        print("|---|---|---:|---:|---:|---:|")
        for k in sorted(dec):
            d, eng = k.split("_", 1)
            rates = [s.get("images_per_s", 0.0) for s in dec[k]]
            print(f"| {d} | {eng} | {len(rates)} | {statistics.median(rates):.1f} | "
                  f"{dec[k][0].get('device_decoded', '-')} | {dec[k][0].get('device_decode_fallbacks', '-')} |")
    fp32 = [r for r in rows if r["precision"] == "fp32" and r["input"] == "synthetic" and r["img_s"]]

    def best(strategy, devices, batch=None):
        c = [r["img_s"] for r in fp32 if r["strategy"] == strategy and r["devices"] == devices and
             (batch is None or r["batch"] == batch)]
        return max(c) if c else None

    print("\n## Targets (ratios within this check)\n")
    seed = best("sequential", "cuda:0", 1)
    dp3 = best("data-parallel", "cuda:0/3")
    if seed and dp3:
        print(f"- data-parallel cuda:0/3 (best batch) {dp3:.1f} img/s vs the seed-style loop (sequential cuda:0 "
              f"batch 1) {seed:.1f}: {dp3 / seed:.2f}x (target >= 1.5x: {'met' if dp3 / seed >= 1.5 else 'NOT met'})")
    for b in (1, 32, 128):
        nv, sq = best("naive", "cuda:0/3", b), best("sequential", "cuda:0", b)
        if nv and sq:
            print(f"- batch {b}: naive cuda:0/3 {nv:.1f} img/s vs sequential cuda:0 {sq:.1f}: {nv / sq:.2f}x "
                  f"({'the seed slowdown shows' if nv < sq else 'no slowdown'})")
    if "gpu_torchscript" in dec and "gpu_none" in dec:
        e2e = statistics.median(s.get("images_per_s", 0.0) for s in dec["gpu_torchscript"])
        ceiling_decode = statistics.median(s.get("images_per_s", 0.0) for s in dec["gpu_none"])
        model = best("data-parallel", "cuda:0/3", 32)
        if model:
            lim = min(ceiling_decode, model)
            print(f"- end to end with GPU decode {e2e:.1f} img/s vs min(decode ceiling {ceiling_decode:.1f}, model "
                  f"ceiling {model:.1f}) = {lim:.1f}: {e2e / lim:.0%} (target >= 80 %: "
                  f"{'met' if e2e >= 0.8 * lim else 'NOT met'})")
    else:
        print("- end to end against the decode ceiling: not measured (no decode runs; see the log)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
