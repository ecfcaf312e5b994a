#!/usr/bin/env python3
"""Peer: ncnn (the ncnn wheel, CPU) model-only throughput on a synthetic image, the model
converted from the ONNX file by pnnx (tools/peers_setup.sh), fp32: fp16 and bf16 storage and
arithmetic and int8 off, Winograd (ncnn's own x86 F(6,3), the trick vecbench's lead rests on)
and the packed layout on. ncnn's extractor takes one image at a time.
usage: ncnn_bench.py MODEL.ncnn.param THREADS [SECONDS] [PROCESSES]
PROCESSES > 1: that many processes, each with its own net of THREADS threads, started together
after their warm-up; img_per_s is the sum of their rates over the same window."""
import sys

import numpy as np

from peer_procs import timed_rate, total_rate


def rate(param, threads, secs, start):
    import ncnn
    net = ncnn.Net()
    o = net.opt
    o.num_threads = threads
    o.use_winograd_convolution = True
    o.use_sgemm_convolution = True
    o.use_packing_layout = True
    o.use_fp16_packed = o.use_fp16_storage = o.use_fp16_arithmetic = False
    o.use_bf16_storage = False
    o.use_int8_inference = False
    if net.load_param(param) != 0 or net.load_model(param[: -len(".param")] + ".bin") != 0:
        sys.exit(f"ncnn_bench: cannot load {param} and its .bin")
    x = ncnn.Mat(np.random.default_rng(0).uniform(-1, 1, (3, 299, 299)).astype(np.float32))

    def once():
        ex = net.create_extractor()
        ex.input("in0", x)
        ret, out = ex.extract("out0")
        if ret != 0:
            sys.exit(f"ncnn_bench: extract failed ({ret})")
        return out

    return timed_rate(once, 1, secs, start)


def main():
    param, threads = sys.argv[1], int(sys.argv[2])
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
    procs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    import ncnn
    r = total_rate(rate, (param, threads, secs), procs, secs, "ncnn_bench")
    print(f"ncnn={ncnn.__version__} numpy={np.__version__} model_only batch=1 threads={threads} "
          f"processes={procs} winograd=1 fp32=1 img_per_s={r:.2f}")


if __name__ == "__main__":
    main()
