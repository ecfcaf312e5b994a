#!/usr/bin/env python3
"""Peer: ONNX Runtime (the onnxruntime wheel, CPU) model-only throughput on a synthetic batch.
usage: ort_bench.py MODEL.onnx BATCH THREADS [SECONDS]"""
import sys
import time

import numpy as np
import onnxruntime as ort

model, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
secs = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
name = sess.get_inputs()[0].name
x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, 299, 299)).astype(np.float32)
for _ in range(3):
    sess.run(None, {name: x})
t0, n = time.time(), 0
while time.time() - t0 < secs:
    sess.run(None, {name: x})
    n += batch
print(f"onnxruntime={ort.__version__} numpy={np.__version__} model_only batch={batch} threads={threads} "
      f"img_per_s={n / (time.time() - t0):.2f}")
