"""Test helpers: an independent eager reference of the tf2015 Inception-v3 pool
features, written with plain torch.nn.functional ops over a state_dict in
torchvision's key layout (no torchvision modules, no code shared with
tools/export_inception.py), plus seeded random weights and common utilities.

Run everything with /usr/bin/python3 (Debian's torch 1.13)."""

import json
import os
import subprocess
import sys
from typing import Dict, Optional

import torch
import torch.nn.functional as F

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPORT_TOOL = os.path.join(REPO, "tools", "export_inception.py")
PYTHON = sys.executable  # the tests are run with /usr/bin/python3

TF_EPS = 1e-3


def run_export(*args, check=True):
    """Run the exporter CLI; returns CompletedProcess (text)."""
    cp = subprocess.run([PYTHON, EXPORT_TOOL, *args], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, universal_newlines=True)
    if check and cp.returncode != 0:
        raise AssertionError(f"export failed ({cp.returncode}):\n{cp.stdout}\n{cp.stderr}")
    return cp


def load_exported(path):
    extra = {"vecbench_meta.json": ""}
    m = torch.jit.load(path, map_location="cpu", _extra_files=extra)
    return m, json.loads(extra["vecbench_meta.json"])


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


# --------------------------------------------------------------------------
# Reference network
# --------------------------------------------------------------------------

def _conv_bn_relu(x, sd, name, stride=1, same=True, eps: Optional[Dict[str, float]] = None):
    w = sd[name + ".conv.weight"]
    pad = (w.shape[2] // 2, w.shape[3] // 2) if same else (0, 0)
    y = F.conv2d(x, w, bias=None, stride=stride, padding=pad)
    e = TF_EPS if eps is None else eps.get(name, TF_EPS)
    y = F.batch_norm(y, sd[name + ".bn.running_mean"], sd[name + ".bn.running_var"],
                     sd[name + ".bn.weight"], sd[name + ".bn.bias"], training=False, eps=e)
    return torch.clamp(y, min=0.0)


def _avg3_exclude_pad(x):
    """3x3/stride-1 mean over the part of each window inside the image."""
    c, h, w = x.shape[1], x.shape[2], x.shape[3]
    sums = F.conv2d(x, torch.ones(c, 1, 3, 3, dtype=x.dtype), padding=1, groups=c)

    def counts(n):
        v = torch.full((n,), 3.0, dtype=x.dtype)
        v[0] -= 1
        v[-1] -= 1
        return v
    cnt = counts(h).view(h, 1) * counts(w).view(1, w)
    return sums / cnt


def _max3_same(x):
    return F.max_pool2d(F.pad(x, (1, 1, 1, 1), value=float("-inf")), kernel_size=3, stride=1)


def _max3_s2(x):
    return F.max_pool2d(x, kernel_size=3, stride=2)


def tf2015_features(sd: Dict[str, torch.Tensor], x: torch.Tensor,
                    eps: Optional[Dict[str, float]] = None) -> torch.Tensor:
    """x: [N,3,299,299] RGB 0..255 -> [N,2048]."""
    def cbr(t, name, stride=1, same=True):
        return _conv_bn_relu(t, sd, name, stride, same, eps)

    x = (x - 128.0) / 128.0
    x = cbr(x, "Conv2d_1a_3x3", stride=2, same=False)
    x = cbr(x, "Conv2d_2a_3x3", same=False)
    x = cbr(x, "Conv2d_2b_3x3")
    x = _max3_s2(x)
    x = cbr(x, "Conv2d_3b_1x1")
    x = cbr(x, "Conv2d_4a_3x3", same=False)
    x = _max3_s2(x)
    for blk in ("Mixed_5b", "Mixed_5c", "Mixed_5d"):
        a = cbr(x, blk + ".branch1x1")
        b = cbr(cbr(x, blk + ".branch5x5_1"), blk + ".branch5x5_2")
        c = x
        for i in (1, 2, 3):
            c = cbr(c, f"{blk}.branch3x3dbl_{i}")
        d = cbr(_avg3_exclude_pad(x), blk + ".branch_pool")
        x = torch.cat([a, b, c, d], dim=1)
    blk = "Mixed_6a"
    a = cbr(x, blk + ".branch3x3", stride=2, same=False)
    b = cbr(cbr(x, blk + ".branch3x3dbl_1"), blk + ".branch3x3dbl_2")
    b = cbr(b, blk + ".branch3x3dbl_3", stride=2, same=False)
    x = torch.cat([a, b, _max3_s2(x)], dim=1)
    for blk in ("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"):
        a = cbr(x, blk + ".branch1x1")
        b = x
        for i in (1, 2, 3):
            b = cbr(b, f"{blk}.branch7x7_{i}")
        c = x
        for i in (1, 2, 3, 4, 5):
            c = cbr(c, f"{blk}.branch7x7dbl_{i}")
        d = cbr(_avg3_exclude_pad(x), blk + ".branch_pool")
        x = torch.cat([a, b, c, d], dim=1)
    blk = "Mixed_7a"
    a = cbr(cbr(x, blk + ".branch3x3_1"), blk + ".branch3x3_2", stride=2, same=False)
    b = x
    for i in (1, 2, 3):
        b = cbr(b, f"{blk}.branch7x7x3_{i}")
    b = cbr(b, blk + ".branch7x7x3_4", stride=2, same=False)
    x = torch.cat([a, b, _max3_s2(x)], dim=1)
    for blk, pool in (("Mixed_7b", _avg3_exclude_pad), ("Mixed_7c", _max3_same)):
        a = cbr(x, blk + ".branch1x1")
        t = cbr(x, blk + ".branch3x3_1")
        b = torch.cat([cbr(t, blk + ".branch3x3_2a"), cbr(t, blk + ".branch3x3_2b")], dim=1)
        t = cbr(cbr(x, blk + ".branch3x3dbl_1"), blk + ".branch3x3dbl_2")
        c = torch.cat([cbr(t, blk + ".branch3x3dbl_3a"), cbr(t, blk + ".branch3x3dbl_3b")], dim=1)
        d = cbr(pool(x), blk + ".branch_pool")
        x = torch.cat([a, b, c, d], dim=1)
    return x.mean(dim=(2, 3))


# --------------------------------------------------------------------------
# Seeded random weights in torchvision's layout
# --------------------------------------------------------------------------

def torchvision_shapes(num_classes=1008, aux_logits=True):
    """Keys and shapes of torchvision's Inception3 state_dict (layout only)."""
    from torchvision.models.inception import Inception3
    net = Inception3(num_classes=num_classes, aux_logits=aux_logits, init_weights=False)
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def random_tensor_for(key, shape, g):
    """O(1)-scale random values for one state_dict entry."""
    if key.endswith("num_batches_tracked"):
        return torch.tensor(0, dtype=torch.long)
    if key.endswith("conv.weight"):
        fan_in = shape[1] * shape[2] * shape[3]
        return torch.randn(shape, generator=g) * (2.0 / fan_in) ** 0.5
    if key.endswith("bn.weight"):
        return 0.8 + 0.4 * torch.rand(shape, generator=g)
    if key.endswith("bn.bias"):
        return 0.05 * torch.randn(shape, generator=g)
    if key.endswith("running_mean"):
        return 0.05 * torch.randn(shape, generator=g)
    if key.endswith("running_var"):
        return 0.8 + 0.4 * torch.rand(shape, generator=g)
    if key.endswith("weight"):  # fc layers
        return torch.randn(shape, generator=g) * (1.0 / shape[-1]) ** 0.5
    return 0.01 * torch.randn(shape, generator=g)


def random_state_dict(seed, num_classes=1008, aux_logits=True):
    g = torch.Generator().manual_seed(seed)
    return {k: random_tensor_for(k, s, g)
            for k, s in sorted(torchvision_shapes(num_classes, aux_logits).items())}


def random_images(seed, n=2, size=299):
    """Seeded RGB images in 0..255: half smooth gradients, half noise."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand((n, 3, 8, 8), generator=g) * 255.0
    smooth = F.interpolate(low, size=(size, size), mode="bilinear", align_corners=False)
    noise = torch.rand((n, 3, size, size), generator=g) * 255.0
    return (0.7 * smooth + 0.3 * noise).clamp(0.0, 255.0)
