#!/usr/bin/env python3
"""Peer: OpenVINO (the openvino wheel, CPU plugin) model-only throughput on a synthetic batch, the
ONNX model read directly; PRECISION f32 (default) or bf16 (INFERENCE_PRECISION_HINT; only where
the CPU has AVX-512 BF16, else it says why and exits 3).
usage: openvino_bench.py MODEL.onnx BATCH THREADS [f32|bf16] [SECONDS]"""
import sys
import time

import numpy as np

model, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
precision = sys.argv[4] if len(sys.argv) > 4 else "f32"
secs = float(sys.argv[5]) if len(sys.argv) > 5 else 8.0
if precision == "bf16" and "avx512_bf16" not in open("/proc/cpuinfo").read():
    print("openvino: skipped: bf16 needs a CPU with AVX-512 BF16 (no avx512_bf16 in /proc/cpuinfo)")
    sys.exit(3)
import openvino as ov  # noqa: E402

core = ov.Core()
cpu = core.get_property("CPU", "FULL_DEVICE_NAME")
m = core.read_model(model)
m.reshape([batch, 3, 299, 299])
print(f"openvino {ov.__version__}: compile_model on {cpu} ...", flush=True)
compiled = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision,
                                         "PERFORMANCE_HINT": "LATENCY"})
req = compiled.create_infer_request()
x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, 299, 299)).astype(np.float32)
for _ in range(3):
    req.infer({0: x})
t0, n = time.time(), 0
while time.time() - t0 < secs:
    req.infer({0: x})
    n += batch
print(f"openvino={ov.__version__} numpy={np.__version__} model_only precision={precision} batch={batch} "
      f"threads={threads} img_per_s={n / (time.time() - t0):.2f}")
