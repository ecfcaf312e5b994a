#!/usr/bin/env python3
"""Plots vecbench result files (schema_version 1).

usage: plot_results.py RESULT.json... --out DIR

Writes DIR/throughput_vs_devices.png (one line per strategy: x = devices, y = median images/s,
error bars min..max over reps; with several runs at one device count, the best median is drawn)
(drawn only at the device counts a strategy ran on; dashed: the ideal, best sequential x devices),
DIR/stage_times.png (horizontal stacked bars of per-image stage times, ms, one row per run, sorted),
DIR/timelines/<F>_<R>.png for every run R of file F whose sample names a trace file (relative to the
result file's folder): one lane per thread, spans coloured by stage, a few seconds of the steady
state when the run is long, and DIR/timeline_compare_<F>.png: naive above data-parallel on one time axis.
Exit status: 0 done, 2 bad arguments or unreadable result file, 3 matplotlib not available.
Uses only the standard library and matplotlib (Agg backend); run it with /usr/bin/python3.
"""
import argparse
import json
import math
import os
import sys
import textwrap

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


def effective_devices(run):
    """Devices the run actually used: effective.devices (sequential: 1), else the params' spec."""
    eff = run.get("effective", {}).get("devices")
    if isinstance(eff, list) and eff:
        return len(eff)
    return device_count(run.get("params", {}).get("devices"))


def plot_throughput(plt, results, out):
    """One line per strategy, drawn only at the device counts it ran on (sequential: 1), and the
    ideal line: the best sequential median times the device count."""
    fig, ax = plt.subplots(figsize=(8, 4.8))
    drawn = 0
    colors = {}  # strategy -> colour; one line style per file
    labels = file_labels(results)
    max_n, ideal = 1, None
    for fi, doc in enumerate(results):
        by_strategy = {}
        for run in doc.get("runs", []):
            ips = run.get("summary", {}).get("images_per_s", {})
            n = effective_devices(run)
            if run.get("status") != "ok" or n <= 0 or not finite(ips.get("median")):
                continue
            strategy = str(run["params"].get("strategy", "?"))
            points = by_strategy.setdefault(strategy, {})
            if n not in points or ips["median"] > points[n]["median"]:
                points[n] = ips
            if strategy == "sequential" and (ideal is None or ips["median"] > ideal):
                ideal = ips["median"]
            max_n = max(max_n, n)
        n_strategies = len(by_strategy)
        for k, (strategy, points) in enumerate(sorted(by_strategy.items())):
            xs = sorted(points)
            med = [points[x]["median"] for x in xs]
            lo = [m - (points[x]["min"] if finite(points[x].get("min")) else m) for x, m in zip(xs, med)]
            hi = [(points[x]["max"] if finite(points[x].get("max")) else m) - m for x, m in zip(xs, med)]
            label = strategy if len(results) == 1 else f"{labels[fi]}: {strategy}"
            color = colors.setdefault(strategy, f"C{len(colors) % 10}")
            single = strategy == "sequential"  # its one point (1 device): large, on top
            dodge = (k - (n_strategies - 1) / 2) * 0.05  # side by side where strategies share a count
            ax.errorbar([x + dodge for x in xs], med, yerr=[lo, hi], marker="*" if single else "os^D"[fi % 4],
                        markersize=14 if single else 7, zorder=5 if single else 2,
                        linestyle=["-", "--", ":", "-."][fi % 4], color=color, capsize=4, label=label)
            drawn += 1
    if ideal is not None:
        xs = list(range(1, max_n + 1))
        ax.plot(xs, [ideal * x for x in xs], color="0.5", linestyle="--", linewidth=1,
                label="ideal (best sequential x devices)")
    if drawn:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_xticks(list(range(1, max_n + 1)))
        ax.set_ylim(bottom=0)
    else:
        ax.text(0.5, 0.5, "no finished runs", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("devices the run used")
    ax.set_ylabel("images/s (median; bars: min-max)")
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


# One colour per span kind / stage, the same in every picture.
STAGE_COLORS = {"read": "#8c564b", "decode": "#ff7f0e", "resize": "#bcbd22", "assemble": "#e377c2",
                "h2d": "#17becf", "forward": "#1f77b4", "d2h": "#aec7e8", "write": "#2ca02c",
                "wait_input": "#f4a3a3", "wait_output": "#c5b0d5", "setup": "#b0b0b0"}
SPAN_LABELS = {"wait_input": "starved (waiting for input)", "wait_output": "blocked (waiting downstream)",
               "setup": "setup (load, warm-up)"}


def plot_stages(plt, results, out):
    """Horizontal stacked bars, one row per run, sorted by total ms per image, labelled with it."""
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
    rows.sort(key=lambda row: sum(row[1].values()))
    stages = STAGES + sorted({k for _, st in rows for k in st if k not in STAGES})
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.3 * len(rows) + 1.6)))
    if rows:
        left = [0.0] * len(rows)
        ys = list(range(len(rows)))
        for stage in stages:
            vals = [st.get(stage, 0.0) for _, st in rows]
            if not any(vals):
                continue
            ax.barh(ys, vals, left=left, height=0.75, label=stage, color=STAGE_COLORS.get(stage))
            left = [a + v for a, v in zip(left, vals)]
        for y, total in zip(ys, left):
            ax.text(total, y, f" {total:.1f}", va="center", fontsize=7)
        ax.set_yticks(ys)
        ax.set_yticklabels([lbl for lbl, _ in rows], fontsize=7)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlim(0, max(left) * 1.12 if max(left) > 0 else 1)
        ax.legend(fontsize=8, loc="lower right", ncol=4)
        ax.grid(True, axis="x", alpha=0.3)
    else:
        ax.text(0.5, 0.5, "no run recorded stage times", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("ms per image, summed over threads (median over reps); sorted by total")
    ax.set_title("Stage time per image")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "stage_times.png"), dpi=100)
    plt.close(fig)


def load_trace(path):
    """(lanes, begin_s, end_s) of a vecbench trace file: lanes = [(name, device, {kind: [(t_s, dur_s)]})] in
    display order (devices first), times in seconds from the start of the timed window."""
    with open(path) as f:
        doc = json.load(f)
    vb = doc.get("otherData", {}).get("vecbench", {})
    begin_us = float(vb.get("run_begin_us", 0.0))
    end_us = float(vb.get("run_end_us", 0.0))
    names, devices = {}, {l["tid"]: l.get("device", -1) for l in vb.get("lanes", [])}
    spans = {}
    for e in doc.get("traceEvents", []):
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e.get("args", {}).get("name", str(e["tid"]))
        elif e.get("ph") == "X":
            t = (float(e["ts"]) - begin_us) * 1e-6
            spans.setdefault(e["tid"], {}).setdefault(e["name"], []).append((t, float(e["dur"]) * 1e-6))
    order = sorted(names, key=lambda tid: (devices.get(tid, -1) < 0, devices.get(tid, -1), names[tid]))
    lanes = [(names[tid], devices.get(tid, -1), spans.get(tid, {})) for tid in order]
    return lanes, 0.0, (end_us - begin_us) * 1e-6


def steady_window(end_s, max_s=8.0):
    """The whole run, or max_s seconds of its steady state (from a quarter in) when it is over 2x longer."""
    if end_s <= max_s * 2:
        return 0.0, end_s, ""
    start = end_s * 0.25
    return start, start + max_s, f"{max_s:.0f} s of {end_s:.1f} s, steady state"


def draw_lanes(ax, lanes, lo, hi):
    kinds_seen = set()
    for y, (_, _, kinds) in enumerate(lanes):
        for kind, iv in kinds.items():
            shown = [(t, d) for t, d in iv if t + d >= lo and t <= hi]
            if not shown:
                continue
            kinds_seen.add(kind)
            waiting = kind in ("wait_input", "wait_output", "setup")
            ax.broken_barh(shown, (y - 0.38, 0.76), facecolors=STAGE_COLORS.get(kind, "k"),
                           alpha=0.6 if waiting else 1.0, edgecolor="white", linewidth=0.3)
    ax.set_yticks(list(range(len(lanes))))
    ax.set_yticklabels([name for name, _, _ in lanes], fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlim(lo, hi)
    ax.grid(True, axis="x", alpha=0.3)
    return kinds_seen


def legend_for(fig, kinds):
    import matplotlib.patches as mpatches
    order = STAGES + ["wait_input", "wait_output", "setup"]
    handles = [mpatches.Patch(color=STAGE_COLORS[k], label=SPAN_LABELS.get(k, k)) for k in order if k in kinds]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, max(1, len(handles))), fontsize=8, frameon=False)


def plot_timeline(plt, trace_path, title, out_png):
    lanes, _, end_s = load_trace(trace_path)
    lo, hi, note = steady_window(end_s)
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(lanes) + 1.9))
    kinds = draw_lanes(ax, lanes, lo, hi)
    ax.set_xlabel("seconds since the clock started" + (f" ({note})" if note else ""))
    ax.set_title(title, fontsize=10)
    legend_for(fig, kinds)
    fig.tight_layout(rect=(0, 0.09 if len(lanes) > 3 else 0.14, 1, 1))
    fig.savefig(out_png, dpi=100)
    plt.close(fig)


def traced_runs(doc, base_dir):
    """(run index, run, trace path) of every run whose first traced sample names a trace file that exists."""
    out = []
    for ri, run in enumerate(doc.get("runs", [])):
        for s in run.get("samples", []):
            f = (s.get("trace") or {}).get("file")
            if f:
                path = f if os.path.isabs(f) else os.path.join(base_dir, f)
                if os.path.isfile(path):
                    out.append((ri, run, path))
                break
    return out


def plot_compare(plt, pairs, out_png):
    """The traced runs in `pairs` [(title, path)] stacked on one time axis."""
    loaded = [(t, load_trace(p)) for t, p in pairs]
    end_s = max(tr[2] for _, tr in loaded)
    lo, hi, note = steady_window(end_s)
    heights = [max(1, len(tr[0])) for _, tr in loaded]
    fig, axes = plt.subplots(len(loaded), 1, sharex=True, figsize=(11, 0.45 * sum(heights) + 1.0 * len(loaded) + 1.2),
                             gridspec_kw={"height_ratios": heights})
    kinds = set()
    for ax, (title, (lanes, _, e)) in zip(axes, loaded):
        kinds |= draw_lanes(ax, lanes, lo, hi)
        ax.set_title(f"{title} ({e:.2f} s)", fontsize=9, loc="left")
    axes[-1].set_xlabel("seconds since the clock started (same axis for both)" + (f" ({note})" if note else ""))
    legend_for(fig, kinds)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out_png, dpi=100)
    plt.close(fig)


def plot_timelines(plt, results, paths, out):
    """timelines/<file>_<run>.png for every traced run; timeline_compare_<file>.png: naive above
    data-parallel on one time axis, where a file traced both."""
    os.makedirs(os.path.join(out, "timelines"), exist_ok=True)
    for fi, (doc, path) in enumerate(zip(results, paths)):
        runs = traced_runs(doc, os.path.dirname(os.path.abspath(path)))
        first = {}
        for ri, run, trace in runs:
            s = next((x for x in run.get("samples", []) if x.get("trace")), {})
            overlap = s.get("trace", {}).get("forward_overlap")
            p = run.get("params", {})
            title = (f"{p.get('strategy', '?')} on {p.get('devices', '?')}, batch {p.get('batch', '?')}: "
                     f"{s.get('images_per_s', float('nan')):.2f} img/s")
            if finite(overlap):
                title += f", forward overlap {overlap:.2f} device-equivalents"
            title = textwrap.fill(title, 120)
            plot_timeline(plt, trace, title, os.path.join(out, "timelines", f"{fi}_{ri}.png"))
            first.setdefault(str(run["params"].get("strategy")), (title, trace))
        if "naive" in first and "data-parallel" in first:
            plot_compare(plt, [first["naive"], first["data-parallel"]],
                         os.path.join(out, f"timeline_compare_{fi}.png"))


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
    plot_timelines(plt, results, args.results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
