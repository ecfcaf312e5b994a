#!/usr/bin/env python3
"""Peer: ONNX Runtime (the onnxruntime wheel, CPU) model-only throughput on a synthetic batch.
usage: ort_bench.py MODEL.onnx BATCH THREADS [SECONDS] [PROCESSES]
PROCESSES > 1 (issue #50: ONNX Runtime's own advice for throughput on few cores is one session
per core): that many processes, each with its own session of THREADS intra-op threads, started
together after their warm-up; img_per_s is the sum of their rates over the same window.
$VECBENCH_PEER_SIZE: the input side (default 299, Inception-v3; 224 or 336 for the ViTs)."""
import os
import sys

import numpy as np

from peer_procs import timed_rate, total_rate

SIZE = int(os.environ.get("VECBENCH_PEER_SIZE", "299"))  # the input side (299: Inception-v3)


def rate(model, batch, threads, secs, start):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, SIZE, SIZE)).astype(np.float32)
    return timed_rate(lambda: sess.run(None, {name: x}), batch, secs, start)


def main():
    model, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
    procs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    import onnxruntime as ort
    r = total_rate(rate, (model, batch, threads, secs), procs, secs, "ort_bench")
    print(f"onnxruntime={ort.__version__} numpy={np.__version__} model_only batch={batch} threads={threads} "
          f"processes={procs} img_per_s={r:.2f}")


if __name__ == "__main__":
    main()
