#!/usr/bin/env python3
"""Writes the golden result files (schema_version 1) used by the compare/report/schema tests.

Run from anywhere: /usr/bin/python3 tests/data/compare/make_golden.py
The files are committed; re-run this only when the format or the test scenarios change, and
update the expected values in tests/core/test_compare.cpp and test_report.cpp accordingly.

Scenarios (per-rep images/s; 5 reps unless said otherwise):
  base.json            reference experiment "golden" on host "ref-box"
  new_faster.json      data-parallel cpu/2 +20% (-> FASTER); cpu/8 run gone, cpu/3 run added
  new_slower.json      data-parallel cpu/2 -20% (-> SLOWER), pipeline -5% (significant, but under
                       the 10% threshold -> SAME)
  new_noisy.json       data-parallel cpu/2 median -11% but spread wide (-> SAME: not significant)
  few_reps.json        2 reps per run, data-parallel cpu/2 halved (-> UNKNOWN)
  new_other_host.json  every run exactly half as fast on host "slow-box": raw compare SLOWER,
                       --normalize-by strategy=sequential SAME
"""
import copy
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = 40
BASE = {"batch": 1, "threads": 1, "resize": "tf-legacy", "input": "files"}
ORDER = ["strategy", "devices", "batch", "threads", "resize", "input"]


def run_id(params):
    keys = [k for k in ORDER if k in params] + sorted(k for k in params if k not in ORDER)
    return " ".join(f"{k}={params[k]}" for k in keys)


def percentile(v, q):  # same arithmetic as vecbench::stats::percentile
    v = sorted(v)
    if len(v) == 1:
        return v[0]
    pos = q / 100.0 * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(v):
    if not v:
        return {"median": None, "min": None, "max": None, "rel_spread": None, "count": 0}
    med = percentile(v, 50.0)
    return {"median": med, "min": min(v), "max": max(v),
            "rel_spread": (max(v) - min(v)) / abs(med) if med != 0 else 0.0, "count": len(v)}


def device_count(spec):
    return int(spec.split("/")[1]) if "/" in spec else 1


def stage_s(strategy):
    s = {"read": 0.2, "decode": 1.2, "resize": 0.4, "assemble": 0.04, "h2d": 0.0, "forward": 2.0,
         "d2h": 0.0, "write": 0.16}
    if strategy == "data-parallel":
        s["forward"] = 2.2
    if strategy == "pipeline":
        s["assemble"] = 0.08
    return s


def make_run(params, ips, status="ok", reason=""):
    strategy, devices = params["strategy"], params["devices"]
    external = strategy.startswith("external:")
    n = device_count(devices)
    samples = []
    for rep, x in enumerate(ips):
        s = {"rep": rep, "images": IMAGES, "failed": 0, "wall_s": IMAGES / x, "images_per_s": x}
        if not external:
            s["stage_s"] = stage_s(strategy)
            s["latency_ms"] = {"p50": 100.0 + rep, "p90": 120.0 + rep, "p99": 150.0 + rep}
            s["devices"] = [{"name": f"{devices}#{i}", "images": IMAGES // n, "busy_fraction": 0.95,
                             "peak_memory_bytes": 0, "batches": IMAGES // n, "busy_s": 0.95 * s["wall_s"]}
                            for i in range(n)]
            s["queue_depth"] = [] if strategy == "sequential" else [[0.0, 0], [0.5, 3], [1.0, 2]]
        else:
            s["devices"], s["queue_depth"] = [], []
        s["peak_rss_bytes"] = 500000000
        s["setup_s"] = 1.5
        samples.append(s)
    summary = {"images_per_s": summarize([s["images_per_s"] for s in samples]),
               "wall_s": summarize([s["wall_s"] for s in samples])}
    if samples and not external:
        summary["latency_ms"] = {k: summarize([s["latency_ms"][k] for s in samples])
                                 for k in ("p50", "p90", "p99")}
        summary["stage_s_per_image"] = {k: percentile([s["stage_s"][k] / s["images"] for s in samples], 50.0)
                                        for k in samples[0]["stage_s"]}
    verification = None
    if status == "ok" and not external and strategy != "sequential":
        diff = 1.2e-7 if strategy == "pipeline" else 0.0
        verification = {"reference": "sequential", "compared_images": IMAGES, "max_abs_diff": diff,
                        "max_rel_diff": diff * 3}
    return {"id": run_id(params), "params": params, "status": status, "reason": reason,
            "effective": {"devices": [{"name": f"{devices}#{i}", "threads": params.get("threads", 1)}
                                      for i in range(n)], "decode_threads": 1, "prefetch_batches": 4},
            "samples": samples, "summary": summary, "verification": verification}


def p(strategy, devices, **kw):
    d = {"strategy": strategy, "devices": devices}
    d.update(BASE)
    d.update(kw)
    return d


SEQ, SEQ2 = p("sequential", "cpu"), p("sequential", "cpu", threads=2)
DP2, DP4, DP3 = p("data-parallel", "cpu/2"), p("data-parallel", "cpu/4"), p("data-parallel", "cpu/3")
PIPE, CUDA, ERR = p("pipeline", "cpu/2"), p("data-parallel", "cuda:0/2"), p("data-parallel", "cpu/8")
EXT = {"strategy": "external:torchserve", "devices": "cpu", "batch": 1}

BASE_IPS = {
    run_id(SEQ): [10.0, 10.1, 9.9, 10.2, 9.8],
    run_id(SEQ2): [9.5, 9.6, 9.4, 9.55, 9.45],
    run_id(DP2): [18.0, 18.2, 17.8, 18.1, 17.9],
    run_id(DP4): [30.0, 30.3, 29.7, 30.1, 29.9],
    run_id(PIPE): [15.0, 15.1, 14.9, 15.2, 14.8],
    run_id(EXT): [12.0, 12.1, 11.9, 12.2, 11.8],
}


def experiment(ips, host="ref-box", runs=None):
    runs = runs or [SEQ, SEQ2, DP2, DP4, PIPE, CUDA, ERR, EXT]
    out = []
    for params in runs:
        rid = run_id(params)
        if params is CUDA:
            out.append(make_run(params, [], "skipped", "no CUDA device available"))
        elif params is ERR:
            out.append(make_run(params, [], "error", "replica 5: std::bad_alloc while loading the model"))
        else:
            out.append(make_run(params, ips[rid]))
    return {
        "schema_version": 1,
        "name": "golden",
        "meta": {"argv": ["vecbench", "run", "experiments/golden.json"], "vecbench_version": "0.1.0",
                 "git_sha": "0123456789ab", "git_dirty": False, "date_utc": "2026-11-30T07:00:00Z",
                 "host": host, "cpu_model": "Golden CPU @ 3.0GHz" if host == "ref-box" else "Slow CPU",
                 "cpu_cores": 8, "gpus": [],
                 "versions": {"libtorch": "1.13.1", "opencv": "4.6.0", "cuda": None, "cudnn": None,
                              "compiler": "GNU 12.2.0"},
                 "model": {"path": "build/models/inception_tf2015_seed0.pt", "arch": "tf2015",
                           "weight_source": "seed:0", "weight_sha256": "ab" * 32}},
        "config": {"requested": {"name": "golden", "repetitions": len(next(iter(ips.values())))},
                   "effective": {"images": IMAGES}},
        "runs": out,
    }


def scaled(ips, rid, factor):
    d = copy.deepcopy(ips)
    d[rid] = [x * factor for x in d[rid]]
    return d


def write(name, doc):
    """Indented JSON, but each sample and each statistics object on one line (short diffs)."""
    compact = []

    def mark(o):
        if isinstance(o, dict) and ("rep" in o or "rel_spread" in o):
            compact.append(json.dumps(o, separators=(", ", ": ")))
            return f"@@{len(compact) - 1}@@"
        if isinstance(o, dict):
            return {k: mark(v) for k, v in o.items()}
        if isinstance(o, list):
            return [mark(v) for v in o]
        return o

    text = json.dumps(mark(doc), indent=1)
    for i, c in enumerate(compact):
        text = text.replace(f'"@@{i}@@"', c, 1)
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text + "\n")


def main():
    write("base.json", experiment(BASE_IPS))
    faster = scaled(BASE_IPS, run_id(DP2), 1.2)
    faster[run_id(DP3)] = [25.0, 25.2, 24.8, 25.1, 24.9]
    write("new_faster.json", experiment(faster, runs=[SEQ, SEQ2, DP2, DP3, DP4, PIPE, CUDA, EXT]))
    write("new_slower.json", experiment(scaled(scaled(BASE_IPS, run_id(DP2), 0.8), run_id(PIPE), 0.95)))
    noisy = dict(BASE_IPS)
    noisy[run_id(DP2)] = [12.0, 25.0, 16.0, 23.0, 15.5]
    write("new_noisy.json", experiment(noisy))
    few = {k: v[:2] for k, v in scaled(BASE_IPS, run_id(DP2), 0.5).items()}
    write("few_reps.json", experiment(few))
    write("new_other_host.json",
          experiment({k: [x * 0.5 for x in v] for k, v in BASE_IPS.items()}, host="slow-box"))


if __name__ == "__main__":
    main()
