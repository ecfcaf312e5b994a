#!/usr/bin/env python3
"""The GPU check's markdown report, from its work folder or its archive (tools/device/gpu_check.sh
writes both; it runs this after every step, so the report is there however far the check got, a
kill included):
  - every stage of the plan: ok / failed / timeout with its seconds and why, "started, did not
    end" for the one a kill stopped, or "not run: <why>";
  - one table row per run of every `vecbench run` result (median img/s, repetitions,
    verification; runs not reached yet say so), the smoke test and the `vectorize` decode runs
    (decode cpu / gpu, with the model and with --engine none, the decode ceiling, and the model on
    synthetic inputs, the model ceiling, in the same rounds);
  - the seed's question as ratios within this check, each at equal batch and each between runs of
    one interleaved `vecbench run` (the seed stage's; at the big batch, the more stage's), never a
    figure of one stage against another's: data-parallel on the split device (cuda:0/3) against
    sequential on cuda:0 and against data-parallel on cuda:0 (one replica: the equal-batch
    control), at batch 32 and 128, naive on the split device against sequential at batch 1 (the
    seed's slowdown), batching alone (sequential at batch 32 against 1); GPU against CPU
    decoding end to end (and against min(decode ceiling, model ceiling), all three from the decode
    stage's rounds); fp32 within 1e-4 of the CPU fp32 reference (fp16 2e-2, bf16 1e-1).
Standard library only (the GPU machine has no registry).
  gpu_check_report.py WORK_DIR | gpu_check.tar.gz > gpu_check.md"""
import io
import json
import os
import statistics
import sys
import tarfile

STAGES = [
    ("probe", "GPU, driver, torch/CUDA/cuDNN versions, the CUDA toolkit's files (probe.json)"),
    ("build", "the prebuilt binary, if this tree's, starts (else: configure and build `vecbench` here)"),
    ("smoke", "the binary answers: devices, the exported model, one model run, one decode run"),
    ("seed", "the seed's question at equal batch (fp32, TF32 off): sequential, data-parallel and naive"),
    ("decode", "end to end: GPU against CPU decoding; the decode ceilings (no model), the model ceiling (no decoding)"),
    ("verify_fp32", "fp32 against the CPU fp32 reference, photos"),
    ("fp16", "fp16 model runs (throughput)"),
    ("bf16", "bf16 model runs (throughput)"),
    ("verify_half", "fp16 and bf16 against the CPU fp32 reference, photos"),
    ("more", "the rest of fp32 at the big batch: sharded, mirrored, naive, data-parallel"),
]


class Files:
    """The check's files by relative path, from a folder or a .tar.gz."""

    def __init__(self, src):
        self.texts = {}
        if os.path.isdir(src):
            for root, dirs, names in os.walk(src):
                dirs[:] = [d for d in dirs if d not in ("photos", "jpegs", "vec")]
                for n in names:
                    p = os.path.join(root, n)
                    rel = os.path.relpath(p, src).replace(os.sep, "/")
                    if n.endswith((".json", ".tsv", ".txt")):
                        try:
                            with open(p, encoding="utf-8", errors="replace") as f:
                                self.texts[rel] = f.read()
                        except OSError:
                            pass
        elif os.path.isfile(src):
            with tarfile.open(src) as t:
                for m in t.getmembers():
                    if m.isfile() and m.name.endswith((".json", ".tsv", ".txt")):
                        rel = m.name[2:] if m.name.startswith("./") else m.name
                        self.texts[rel] = io.TextIOWrapper(t.extractfile(m), encoding="utf-8", errors="replace").read()

    def json(self, rel):
        try:
            return json.loads(self.texts[rel])
        except (KeyError, ValueError):
            return None

    def under(self, prefix, suffix=".json"):
        return sorted(k for k in self.texts if k.startswith(prefix) and k.endswith(suffix))


def stages_of(files):
    got = {}
    for line in files.texts.get("stages.tsv", "").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            got[parts[0]] = {"status": parts[1], "seconds": parts[2] if len(parts) > 2 else "",
                             "note": parts[3] if len(parts) > 3 else ""}
    return got


def runs_of(files):
    rows = []
    for rel in files.under("results/"):
        d = files.json(rel)
        if not isinstance(d, dict) or "runs" not in d:
            continue
        prec = d.get("config", {}).get("requested", {}).get("precision", "fp32")
        for r in d["runs"]:
            p = r.get("params", {})
            s = r.get("summary", {}).get("images_per_s", {})
            v = r.get("verification") or {}
            rows.append({"experiment": d.get("name", "?"), "precision": prec, "strategy": p.get("strategy"),
                         "devices": p.get("devices"), "batch": p.get("batch"), "input": p.get("input"),
                         "img_s": s.get("median"), "reps": s.get("count"), "rel": v.get("max_rel_diff"),
                         "tol": v.get("rel_tolerance"), "status": r.get("status"), "reason": r.get("reason"),
                         "memory": (r.get("effective") or {}).get("batch_memory")})
    return rows


def decode_runs(files):
    got = {}
    for rel in files.under("decode/decode_"):
        name = os.path.basename(rel)[len("decode_"):-len(".json")].rsplit("_r", 1)[0]  # gpu_torchscript, ...
        s = files.json(rel)
        if isinstance(s, dict):
            got.setdefault(name, []).append(s)
    return got


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def median_rate(runs):
    rates = [s.get("images_per_s") for s in runs if s.get("images_per_s")]
    return statistics.median(rates) if rates else None


def print_stages(stages, running):
    print("## Stages (in the order they run)\n")
    print("| stage | what | status | seconds | notes |")
    print("|---|---|---|---:|---|")
    for name, what in STAGES:
        st = stages.get(name)
        if st is None and running and running[0] == name:
            status, secs = "started", "-"
            note = (f"started at {running[1]} UTC and not ended: the check was stopped in this stage, or is "
                    "still in it; its finished steps are in the tables")
        elif st is None:
            status, secs, note = "not run", "-", "not reached (the check ended before it, or it is still running)"
        else:
            status, secs = st["status"], st["seconds"]
            note = ("not run: " if status == "skipped" else "") + st["note"]
        print(f"| {name} | {what} | {status} | {secs} | {note.replace('|', '/')} |")
    print()


def print_runs(rows):
    if not rows:
        print("No `vecbench run` results.\n")
        return
    print("## Model runs (`vecbench run`: median img/s over the repetitions)\n")
    print("| experiment | precision | strategy | devices | batch | input | img/s | reps | max rel diff | tolerance | status |")
    print("|---|---|---|---|---:|---|---:|---:|---:|---:|---|")
    for r in rows:
        status = r["status"] + (f" ({r['reason']})" if r.get("reason") else "")
        print(f"| {r['experiment']} | {r['precision']} | {r['strategy']} | {r['devices']} | {r['batch']} | "
              f"{r['input']} | {fmt(r['img_s'])} | {r['reps'] or '-'} | {fmt(r['rel'], '.2e')} | "
              f"{fmt(r['tol'], '.0e')} | {status.replace('|', '/')} |")
    pinned = sum(1 for r in rows if r.get("memory"))
    print(f"\nBatch buffers page-locked (copied to the GPU with no staging copy) in {pinned} of {len(rows)} runs.")
    print()


def print_decode(dec, files, check):
    smoke = [(rel, files.json(rel)) for rel in files.under("smoke/smoke_")]
    if smoke:
        print("## Smoke test (`vectorize`)\n")
        print("| run | images | img/s | failed | on device | host fallbacks |")
        print("|---|---:|---:|---:|---:|---:|")
        for rel, s in smoke:
            if isinstance(s, dict):
                print(f"| {os.path.basename(rel)[:-5]} | {s.get('images', '-')} | {fmt(s.get('images_per_s'))} | "
                      f"{s.get('failed', '-')} | {s.get('device_decoded', '-')} | {s.get('device_decode_fallbacks', '-')} |")
        print()
    if not dec:
        return
    print(f"## Decoding {check.get('decode_images', '?')} photos end to end (`vectorize`, data-parallel on "
          f"{check.get('split', '?')}, batch {check.get('batch', '?')})\n")
    print("| decode | engine | rounds | img/s (median) | on device | host fallbacks |")
    print("|---|---|---:|---:|---:|---:|")
    for k in sorted(dec):
        d, eng = k.split("_", 1)
        d = "none: synthetic inputs (the model ceiling)" if d == "synthetic" else d
        eng = f"{eng} (the decode ceiling)" if eng == "none" else eng
        print(f"| {d} | {eng} | {len(dec[k])} | {fmt(median_rate(dec[k]))} | "
              f"{dec[k][0].get('device_decoded', '-')} | {dec[k][0].get('device_decode_fallbacks', '-')} |")
    print()


def rate(rows, experiment, precision, strategy, devices, batch):
    """The median img/s of one run of one experiment (one interleaved `vecbench run`): a ratio of
    two rates from the same experiment compares runs measured side by side, never the best of
    several stages against one."""
    c = [r["img_s"] for r in rows if r["experiment"] == experiment and r["precision"] == precision and
         r["strategy"] == strategy and r["devices"] == devices and r["batch"] == batch and r["img_s"] and
         r["input"] == "synthetic"]
    return c[0] if len(c) == 1 else None


def why_not(stages, *names):
    for n in names:
        st = stages.get(n)
        if st is None:
            return f"stage {n} not reached"
        if st["status"] == "skipped":
            return f"stage {n} not run: {st['note']}"
        if st["status"] != "ok":
            return f"stage {n} {st['status']}: {st['note']}"
    return "no runs with figures (see the tables and the log)"


def ratio_line(what, a, a_name, b, b_name, stages, stage, verdict=None):
    """One target: a against b, both measured in this check, or why not."""
    if a and b:
        r = a / b
        tail = f" ({verdict(r)})" if verdict else ""
        print(f"- {what}: {a_name} {a:.1f} img/s vs {b_name} {b:.1f}: **{r:.2f}x**{tail}")
    else:
        print(f"- {what}: not measured ({why_not(stages, stage)})")


def print_targets(rows, dec, stages, check):
    one, split = check.get("single", "cuda:0"), check.get("split", "cuda:0/3")
    b1, b = check.get("batch_seed", 1), check.get("batch", 32)
    print("## The seed's question (ratios within this check, fp32, TF32 off)\n")
    if check.get("devices") == "cpu":
        print(f"Dry run: `{one}` stands for cuda:0 and `{split}` for cuda:0/3; the figures say nothing about a GPU.\n")
    seq_b, dp_split, dp_one = (rate(rows, "check_seed", "fp32", "sequential", one, b),
                               rate(rows, "check_seed", "fp32", "data-parallel", split, b),
                               rate(rows, "check_seed", "fp32", "data-parallel", one, b))
    ratio_line(f"split gain at equal batch {b}", dp_split, f"data-parallel {split}", seq_b, f"sequential {one}",
               stages, "seed", lambda r: "faster" if r > 1 else "not faster")
    ratio_line(f"replicas on one device at equal batch {b} (the control: one replica)", dp_split,
               f"data-parallel {split}", dp_one, f"data-parallel {one}", stages, "seed")
    seq_1, naive_1 = (rate(rows, "check_seed", "fp32", "sequential", one, b1),
                      rate(rows, "check_seed", "fp32", "naive", split, b1))
    ratio_line(f"the seed's mistake at batch {b1}", naive_1, f"naive {split}", seq_1, f"sequential {one}", stages,
               "seed", lambda r: "the seed's slowdown shows" if r < 1 else "no slowdown")
    ratio_line(f"batching alone ({b} against {b1})", seq_b, f"sequential {one} batch {b}", seq_1,
               f"sequential {one} batch {b1}", stages, "seed")
    bb = check.get("batch_big", 128)  # the same two questions at the big batch, from the `more` stage's run
    big = [rate(rows, "check_more", "fp32", s, d, bb) for s, d in
           (("data-parallel", split), ("sequential", one), ("data-parallel", one))]
    ratio_line(f"split gain at equal batch {bb} (stage more)", big[0], f"data-parallel {split}", big[1],
               f"sequential {one}", stages, "more", lambda r: "faster" if r > 1 else "not faster")
    ratio_line(f"replicas on one device at equal batch {bb} (stage more; the control)", big[0],
               f"data-parallel {split}", big[2], f"data-parallel {one}", stages, "more")
    dk = "gpu" if check.get("devices", "cuda") == "cuda" else "cpu"
    gpu_e2e, cpu_e2e = median_rate(dec.get("gpu_torchscript", [])), median_rate(dec.get("cpu_torchscript", []))
    if dk == "gpu":
        ratio_line("decoding on the GPU end to end", gpu_e2e, "--decode gpu", cpu_e2e, "--decode cpu", stages, "decode")
    # Both ceilings from the decode stage's own rounds: the decoder without the model (--engine
    # none) and the model on as many synthetic inputs (no decoding), by the same command.
    e2e, ceiling = median_rate(dec.get(f"{dk}_torchscript", [])), median_rate(dec.get(f"{dk}_none", []))
    model = median_rate(dec.get("synthetic_torchscript", []))
    if e2e and ceiling and model:
        lim = min(ceiling, model)
        print(f"- end to end with {dk} decoding {e2e:.1f} img/s vs min(decode ceiling {ceiling:.1f}, model ceiling "
              f"{model:.1f}) = {lim:.1f}: **{e2e / lim:.0%}** (target >= 80 %: {'met' if e2e >= 0.8 * lim else 'NOT met'})")
    else:
        print(f"- end to end >= 80 % of min(decode ceiling, model ceiling): not measured "
              f"({why_not(stages, 'decode')})")
    for prec, stage in (("fp32", "verify_fp32"), ("fp16", "verify_half"), ("bf16", "verify_half")):
        v = [r for r in rows if r["precision"] == prec and r["rel"] is not None]
        if v:
            worst = max(v, key=lambda r: r["rel"])
            tol = worst["tol"]
            ok = all(r["tol"] is None or r["rel"] <= r["tol"] for r in v)
            print(f"- {prec} against the CPU fp32 reference: largest relative difference **{worst['rel']:.2e}** "
                  f"({worst['strategy']} {worst['devices']} batch {worst['batch']}; tolerance {fmt(tol, '.0e')}): "
                  f"{'within' if ok else 'NOT within'} over {len(v)} runs")
        elif prec == "fp32" or check.get("devices", "cuda") == "cuda":
            print(f"- {prec} against the CPU fp32 reference: not measured ({why_not(stages, stage)})")
    print()


def print_probe(files):
    p = files.json("probe.json")
    smi = files.texts.get("logs/nvidia-smi.txt")
    if not p and not smi:
        return
    print("## Machine\n")
    if p:
        print(f"torch {p.get('torch', '-')} (CUDA {p.get('torch_cuda', '-')}, cuDNN {p.get('cudnn', '-')}), "
              f"{p.get('devices', 0)} device(s) {p.get('device_name') or ''}, {p.get('cpus', '?')} CPUs, "
              f"{p.get('glibc', '')}; CUDA toolkit {p.get('cuda_home', '?')}: headers {p.get('cuda_headers', {})}, "
              f"tools {p.get('tools', {})}\n")
    if smi:
        print("```\n" + smi.strip() + "\n```\n")


def main(src):
    files = Files(src)
    check = files.json("check.json") or {}
    stages, rows, dec = stages_of(files), runs_of(files), decode_runs(files)
    print("# GPU check\n")
    if not files.texts:
        print(f"Nothing to report: no files in {src}.")
        return
    print(f"`tools/device/gpu_check.sh --devices {check.get('devices', '?')}` "
          f"(deadline {check.get('deadline_s', '?')} s, started {check.get('started_utc', '?')}; "
          f"{check.get('model_images', '?')} images per model run, {check.get('decode_images', '?')} per decode run, "
          f"{check.get('verify_images', '?')} verified). The log is gpu_check.log, every file behind these tables "
          "is in gpu_check.tar.gz.\n")
    running = files.texts.get("running.txt", "").strip().split("\t")
    print_targets(rows, dec, stages, check)
    print_stages(stages, running if len(running) == 2 else None)
    print_runs(rows)
    print_decode(dec, files, check)
    print_probe(files)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
