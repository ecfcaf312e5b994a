#!/usr/bin/env python3
"""Plots vecbench result files (schema_version 1).

usage: plot_results.py RESULT.json... --out DIR

Writes DIR/throughput_vs_devices.png (one line per strategy: x = devices, y = median images/s,
error bars min..max over reps; with several runs at one device count, the best median is drawn)
and DIR/stage_times.png (stacked bars of per-image stage times, ms, per run).
Exit status: 0 done, 2 bad arguments or unreadable result file, 3 matplotlib not available.
Uses only the standard library and matplotlib (Agg backend); run it with /usr/bin/python3.
"""
import argparse
import json
import math
import os
import sys

STAGES = ["read", "decode", "resize", "assemble", "h2d", "forward", "d2h", "write"]


def device_count(spec):
    """Same rule as vecbench::device_count: "cpu" -> 1, "cpu/3" -> 3, "a,b/2" -> 3; 0 if unparseable."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return int(spec)
    if not isinstance(spec, str) or not spec:
        return 0
    total = 0
    for part in spec.split(","):
        if not part or part.startswith("/"):
            return 0
        if "/" in part:
            n = part.rsplit("/", 1)[1]
            if not n.isdigit():
                return 0
            total += int(n)
        else:
            total += 1
    return total


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("schema_version") != 1:
        raise ValueError(f"schema_version {doc.get('schema_version')!r} is not supported (expected 1)")
    return doc


def file_labels(results):
    """A short distinct label per result file: its name, plus host or index when names repeat."""
    names = [str(d.get("name", "?")) for d in results]
    if len(set(names)) == len(names):
        return names
    names = [f"{n}@{d.get('meta', {}).get('host', '?')}" for n, d in zip(names, results)]
    return names if len(set(names)) == len(names) else [f"{i}:{n}" for i, n in enumerate(names)]


def plot_throughput(plt, results, out):
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    drawn = 0
    colors = {}  # strategy -> colour; one line style per file
    labels = file_labels(results)
    for fi, doc in enumerate(results):
        by_strategy = {}
        for run in doc.get("runs", []):
            ips = run.get("summary", {}).get("images_per_s", {})
            n = device_count(run.get("params", {}).get("devices"))
            if run.get("status") != "ok" or n <= 0 or not finite(ips.get("median")):
                continue
            points = by_strategy.setdefault(str(run["params"].get("strategy", "?")), {})
            if n not in points or ips["median"] > points[n]["median"]:
                points[n] = ips
        for strategy, points in by_strategy.items():
            xs = sorted(points)
            med = [points[x]["median"] for x in xs]
            lo = [m - (points[x]["min"] if finite(points[x].get("min")) else m) for x, m in zip(xs, med)]
            hi = [(points[x]["max"] if finite(points[x].get("max")) else m) - m for x, m in zip(xs, med)]
            label = strategy if len(results) == 1 else f"{labels[fi]}: {strategy}"
            color = colors.setdefault(strategy, f"C{len(colors) % 10}")
            ax.errorbar(xs, med, yerr=[lo, hi], marker="os^D"[fi % 4], linestyle=["-", "--", ":", "-."][fi % 4],
                        color=color, capsize=4, label=label)
            drawn += 1
    if drawn:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_xticks(sorted({int(x) for line in ax.get_lines() for x in line.get_xdata()}))
    else:
        ax.text(0.5, 0.5, "no finished runs", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("devices")
    ax.set_ylabel("images/s (median; bars: min-max over reps)")
    ax.set_title("Throughput vs devices (best configuration per device count)")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput_vs_devices.png"), dpi=100)
    plt.close(fig)


def run_label(run, varying):
    """The id's words for params that vary between the plotted runs (strategy/devices: value only)."""
    kept = []
    for word in run["id"].split():
        key, _, value = word.partition("=")
        if key in varying:
            kept.append(value if key in ("strategy", "devices") else word)
    return " ".join(kept) if kept else run["id"]


def plot_stages(plt, results, out):
    rows = []  # (label, {stage: ms})
    labels = file_labels(results)
    for fi, doc in enumerate(results):
        runs = [r for r in doc.get("runs", []) if r.get("summary", {}).get("stage_s_per_image")]
        keys = {}
        for r in runs:
            for k, v in r.get("params", {}).items():
                keys.setdefault(k, set()).add(str(v))
        varying = {k for k, vals in keys.items() if len(vals) > 1}
        for r in runs:
            label = run_label(r, varying)
            if len(results) > 1:
                label = f"{labels[fi]}: {label}"
            rows.append((label, {k: 1e3 * v for k, v in r["summary"]["stage_s_per_image"].items() if finite(v)}))
    stages = STAGES + sorted({k for _, st in rows for k in st if k not in STAGES})
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 5))
    if rows:
        bottom = [0.0] * len(rows)
        xs = list(range(len(rows)))
        for stage in stages:
            vals = [st.get(stage, 0.0) for _, st in rows]
            if not any(vals):
                continue
            ax.bar(xs, vals, bottom=bottom, label=stage)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(xs)
        ax.set_xticklabels([lbl.replace(" ", "\n") for lbl, _ in rows], fontsize=7)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax.text(0.5, 0.5, "no run recorded stage times", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("ms per image (summed over threads)")
    ax.set_title("Stage time per image (median over reps)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "stage_times.png"), dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Plot vecbench result files.")
    ap.add_argument("results", nargs="+", help="result JSON files (schema_version 1)")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"plot_results.py: matplotlib not available ({e})", file=sys.stderr)
        return 3
    results = []
    for path in args.results:
        try:
            results.append(load(path))
        except (OSError, ValueError) as e:
            print(f"plot_results.py: {path}: {e}", file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    plot_throughput(plt, results, args.out)
    plot_stages(plt, results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
