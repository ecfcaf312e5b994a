#!/usr/bin/env python3
"""The hub's DINOv2 code (facebookresearch/dinov2 main: SDPA attention, needs torch 2) against the PyPI
dinov2 0.0.1.dev2 network that tests/py/encoder_tools.py's offline hub folder builds, on the same random
checkpoint (hub layout) and input: their CLS outputs (results/encoders/hub-vs-pypi-20261206.md).

  /usr/bin/python3 results/encoders/hub-vs-pypi-20261206.py TORCH2_PYTHON HUB_SRC PYPI_SRC
HUB_SRC: a checkout of the hub repository (its dinov2/ package); PYPI_SRC: the unpacked dinov2 wheel."""
import json, os, subprocess, sys, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from vecbench_export import dinov2 as D
out = {}
for enc, arch in (("dinov2-vit-s-14", "vit_small"), ("dinov2-vit-b-14", "vit_base")):
    torch.save(D.seeded_checkpoint(enc, 3), "/tmp/hubck.pth")
    code = ("import sys, torch, os\nos.environ['XFORMERS_DISABLED']='1'\nsys.path.insert(0, sys.argv[1])\n"
            "from dinov2.models import vision_transformer as v\n"
            "m = v.__dict__[sys.argv[2]](patch_size=14, img_size=518, init_values=1.0, block_chunks=0)\n"
            "m.load_state_dict(torch.load('/tmp/hubck.pth'), strict=True); m.eval()\n"
            "g = torch.Generator().manual_seed(0); x = torch.randn(4, 3, 224, 224, generator=g)\n"
            "with torch.no_grad(): y = m(x)\n"
            "torch.save(y, sys.argv[3]); print(torch.__version__)\n")
    v1 = subprocess.run([sys.argv[1], "-c", code, sys.argv[2], arch, "/tmp/y_hub.pt"], capture_output=True, text=True)
    v2 = subprocess.run([sys.argv[1], "-c", code, sys.argv[3], arch, "/tmp/y_pypi.pt"], capture_output=True, text=True)
    assert v1.returncode == 0 and v2.returncode == 0, (v1.stderr[-2000:], v2.stderr[-2000:])
    a, b = torch.load("/tmp/y_hub.pt"), torch.load("/tmp/y_pypi.pt")
    out[enc] = {"max_abs_diff": float((a - b).abs().max()), "max_abs": float(a.abs().max()),
                "rel": float((a - b).norm() / a.norm()), "torch": v1.stdout.strip()}
print(json.dumps(out, indent=1))
