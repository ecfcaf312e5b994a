#!/usr/bin/env python3
"""Peer: PyTorch 2 (the torch and torchvision wheels, CPU) model-only throughput on a synthetic
batch: torchvision's Inception-v3 (random weights, fc removed: pool_3), channels_last, under
torch.inference_mode; MODE eager, or compile (torch.compile, Inductor, with its freezing of the
weights into the graph, PyTorch's advice for CPU inference), compiled before the clock.
usage: torch_bench.py MODE BATCH THREADS [SECONDS] [PROCESSES]
PROCESSES > 1: that many processes of THREADS threads each, started together after their
warm-up; img_per_s is the sum of their rates over the same window."""
import sys

from peer_procs import timed_rate, total_rate


def rate(mode, batch, threads, secs, start):
    import warnings

    import torch
    import torchvision
    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    m.fc = torch.nn.Identity()
    m = m.eval().to(memory_format=torch.channels_last)
    if mode == "compile":
        import torch._inductor.config as inductor
        inductor.freezing = True
        m = torch.compile(m)
    x = torch.rand(batch, 3, 299, 299).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():  # the first warm-up call compiles
        return timed_rate(lambda: m(x), batch, secs, start)


def main():
    mode, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if mode not in ("eager", "compile"):
        sys.exit(f"torch_bench: MODE is eager or compile, not {mode!r}")
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 8.0
    procs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    import torch
    import torchvision
    r = total_rate(rate, (mode, batch, threads, secs), procs, secs, "torch_bench")
    print(f"torch={torch.__version__} torchvision={torchvision.__version__} model_only mode={mode} "
          f"freezing={int(mode == 'compile')} channels_last=1 batch={batch} threads={threads} processes={procs} "
          f"img_per_s={r:.2f}")


if __name__ == "__main__":
    main()
