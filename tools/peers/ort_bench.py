#!/usr/bin/env python3
"""Peer: ONNX Runtime (the onnxruntime wheel, CPU) model-only throughput on a synthetic batch.
usage: ort_bench.py MODEL.onnx BATCH THREADS [SECONDS] [PROCESSES]
PROCESSES > 1 (issue #50: ONNX Runtime's own advice for throughput on few cores is one session
per core): that many processes, each with its own session of THREADS intra-op threads, started
together after their warm-up; img_per_s is the sum of their rates over the same window."""
import multiprocessing as mp
import sys
import time

import numpy as np


def run(model, batch, threads, secs, barrier, out):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, 299, 299)).astype(np.float32)
    for _ in range(3):
        sess.run(None, {name: x})
    if barrier is not None:
        barrier.wait()
    t0, n = time.time(), 0
    while time.time() - t0 < secs:
        sess.run(None, {name: x})
        n += batch
    rate = n / (time.time() - t0)
    if out is None:
        return ort.__version__, rate
    out.put(rate)


def main():
    model, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
    procs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    if procs == 1:
        version, rate = run(model, batch, threads, secs, None, None)
    else:
        import onnxruntime as ort
        version = ort.__version__
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(procs), ctx.Queue()
        ps = [ctx.Process(target=run, args=(model, batch, threads, secs, barrier, out)) for _ in range(procs)]
        for p in ps:
            p.start()
        try:  # a process that fails puts nothing: do not wait for it forever
            rates = [out.get(timeout=secs + 600) for _ in ps]
        except Exception:
            for p in ps:
                p.kill()
            sys.exit("ort_bench: a process gave no rate (it failed: see above)")
        for p in ps:
            p.join()
            if p.exitcode != 0:
                sys.exit(f"ort_bench: a process failed (exit {p.exitcode})")
        rate = sum(rates)
    print(f"onnxruntime={version} numpy={np.__version__} model_only batch={batch} threads={threads} "
          f"processes={procs} img_per_s={rate:.2f}")


if __name__ == "__main__":
    main()
