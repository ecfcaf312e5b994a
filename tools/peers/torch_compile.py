#!/usr/bin/env python3
"""Peer: what a user writes today with current PyTorch (the torch and torchvision wheels, CPU):
torchvision's Inception-v3 (synthetic weights, fc removed), channels_last, torch.compile
(Inductor), fed end to end by a DataLoader (PIL decode, convert('RGB'), resize 299, workers),
features written to one .npy. Compilation happens before the clock (on a warm-up batch).
usage: torch_compile.py OUT.npy IMG...   env: BATCH (8), WORKERS (1), THREADS (2), COMPILE (1)"""
import os
import sys
import time
import warnings

import numpy as np
import torch
import torchvision
from PIL import Image

warnings.filterwarnings("ignore")
batch, workers = int(os.environ.get("BATCH", 8)), int(os.environ.get("WORKERS", 1))
threads, compile_ = int(os.environ.get("THREADS", 2)), os.environ.get("COMPILE", "1") == "1"
torch.set_num_threads(threads)
out, paths = sys.argv[1], sys.argv[2:]


class Photos(torch.utils.data.Dataset):
    def __len__(self):
        return len(paths)

    def __getitem__(self, i):
        with Image.open(paths[i]) as f:
            a = np.asarray(f.convert("RGB").resize((299, 299), Image.BILINEAR), dtype=np.float32)
        return torch.from_numpy((a - 128.0) / 128.0).permute(2, 0, 1)


torch.manual_seed(0)
m = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True)
m.fc = torch.nn.Identity()
m = m.eval().to(memory_format=torch.channels_last)
run = torch.compile(m) if compile_ else m
t_compile = time.time()
with torch.inference_mode():
    for n in sorted({batch, len(paths) % batch} - {0}):  # every batch size the loader will give
        run(torch.zeros(n, 3, 299, 299).contiguous(memory_format=torch.channels_last))
t_compile = time.time() - t_compile
loader = torch.utils.data.DataLoader(Photos(), batch_size=batch, num_workers=workers)
feats = []
t0 = time.time()
with torch.inference_mode():
    for x in loader:
        feats.append(run(x.contiguous(memory_format=torch.channels_last)).numpy())
np.save(out, np.concatenate(feats))
dt = time.time() - t0
print(f"torch={torch.__version__} torchvision={torchvision.__version__} compile={'inductor' if compile_ else 'none'} "
      f"channels_last=1 batch={batch} workers={workers} threads={threads} compile_s={t_compile:.1f} "
      f"images={len(paths)} seconds={dt:.2f} img_per_s={len(paths) / dt:.2f}")
