#!/usr/bin/env python3
"""Peer: OpenVINO (the openvino wheel, CPU plugin) model-only throughput on a synthetic batch, the
ONNX model read directly; PRECISION f32 (default) or bf16 (INFERENCE_PRECISION_HINT; only where
the CPU has AVX-512 BF16, else it says why and exits 3).
usage: openvino_bench.py MODEL.onnx BATCH THREADS [f32|bf16] [SECONDS] [HINT] [STREAMS] [QUEUE]
HINT: LATENCY (default: one request, run synchronously) or THROUGHPUT (issue #50: OpenVINO's own
advice for throughput: STREAMS parallel streams, default its choice, fed by an AsyncInferQueue of
QUEUE requests, default the plugin's optimal number).
$VECBENCH_PEER_SIZE: the input side (default 299, Inception-v3; 224 or 336 for the ViTs)."""
import os
import sys
import time

import numpy as np

SIZE = int(os.environ.get("VECBENCH_PEER_SIZE", "299"))  # the input side (299: Inception-v3)
model, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
precision = sys.argv[4] if len(sys.argv) > 4 else "f32"
secs = float(sys.argv[5]) if len(sys.argv) > 5 else 8.0
hint = sys.argv[6] if len(sys.argv) > 6 else "LATENCY"
streams = sys.argv[7] if len(sys.argv) > 7 else "auto"
queue = int(sys.argv[8]) if len(sys.argv) > 8 else 0
if precision == "bf16" and "avx512_bf16" not in open("/proc/cpuinfo").read():
    print("openvino: skipped: bf16 needs a CPU with AVX-512 BF16 (no avx512_bf16 in /proc/cpuinfo)")
    sys.exit(3)
import openvino as ov  # noqa: E402

core = ov.Core()
cpu = core.get_property("CPU", "FULL_DEVICE_NAME")
m = core.read_model(model)
m.reshape([batch, 3, SIZE, SIZE])
print(f"openvino {ov.__version__}: compile_model on {cpu} ...", flush=True)
config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": hint}
if hint == "THROUGHPUT" and streams != "auto":
    config["NUM_STREAMS"] = int(streams)
compiled = core.compile_model(m, "CPU", config)
x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, SIZE, SIZE)).astype(np.float32)
if hint == "LATENCY":
    req = compiled.create_infer_request()
    for _ in range(3):
        req.infer({0: x})
    t0, n = time.time(), 0
    while time.time() - t0 < secs:
        req.infer({0: x})
        n += batch
    detail = ""
else:
    depth = queue or compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    q = ov.AsyncInferQueue(compiled, depth)
    done = [0]

    def finished(_request, _userdata):
        done[0] += batch

    q.set_callback(finished)
    for _ in range(2 * depth):  # warm-up: every request once, twice
        q.start_async({0: x})
    q.wait_all()
    done[0] = 0
    t0 = time.time()
    while time.time() - t0 < secs:
        q.start_async({0: x})  # blocks while every request is busy
    q.wait_all()
    n = done[0]
    detail = f" streams={compiled.get_property('NUM_STREAMS')} queue={depth}"
print(f"openvino={ov.__version__} numpy={np.__version__} model_only precision={precision} batch={batch} "
      f"threads={threads} hint={hint}{detail} img_per_s={n / (time.time() - t0):.2f}")
