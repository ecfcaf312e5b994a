"""Test helper: a stand-in for NVIDIA's inception-2015-12-05.pt (the TorchScript file StyleGAN2-ADA's
metrics and clean-fid load; it cannot be fetched here) in that file's own format, so that
clean-fid's own code runs on it and vecbench imports it as it would the real file.

The real file, as clean-fid uses it and NVIDIA's published source of its module (the Apache-2.0
Inception "for FID metrics" of StyleGAN2-ADA/StyleGAN-XL) defines it: `torch.jit.load(path)`, its
`layers` module (the Inception layers under the TF graph's scope names: `conv`, `conv_1` ...
`mixed_10`, `pool2`; a tower's convs nested as `tower.conv_1`, the E blocks' named flat as
`tower_mixed_conv`; each conv one module with the parameters `weight`, `beta`, `mean` and `var`:
the convolution, then a batch norm with a shift and no scale, eps 0.001, then ReLU) applied to
(x-128)/128 in clean-fid's "clean" mode, and its forward `(img, return_features=False,
use_fp16=False, no_output_bias=False)` in the "legacy_tensorflow" mode: the image resized to 299 by
`affine_grid`/`grid_sample` (bilinear, border) as TF1's ResizeBilinear does (source = destination
* in/out), then (x-128)/128, the layers, and the features or the softmax of `output`. This module
is written from that description; its weights come from a state_dict in torchvision's key layout
(the tests' seeded tf2015 weights, whose batch norms have scale 1).

Run with /usr/bin/python3 (Debian's torch 1.13): a file it saves loads in any later LibTorch.
"""
from collections import OrderedDict
from typing import Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class _Conv(nn.Module):
    """One layer: convolution without bias, the TF graph's batch norm (shift, no scale, eps 0.001), ReLU."""

    def __init__(self, cin: int, cout: int, k, stride: int = 1, pad=0):
        super().__init__()
        kh, kw = (k, k) if isinstance(k, int) else k
        self.stride = stride
        self.pad: List[int] = [pad, pad] if isinstance(pad, int) else list(pad)
        # parameters, as the file has them (state_dict keys), never trained: no gradients
        self.weight = nn.Parameter(torch.zeros(cout, cin, kh, kw), requires_grad=False)
        self.beta = nn.Parameter(torch.zeros(cout), requires_grad=False)
        self.mean = nn.Parameter(torch.zeros(cout), requires_grad=False)
        self.var = nn.Parameter(torch.ones(cout), requires_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        y = F.conv2d(x, self.weight, None, self.stride, self.pad)
        return F.relu(F.batch_norm(y, self.mean, self.var, None, self.beta, False, 0.0, 0.001))


def _seq(*convs: Tuple[str, nn.Module]) -> nn.Sequential:
    return nn.Sequential(OrderedDict(convs))


def _avg3() -> nn.Module:
    return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)


class _A(nn.Module):
    def __init__(self, cin: int, pool_features: int):
        super().__init__()
        self.conv = _Conv(cin, 64, 1)
        self.tower = _seq(("conv", _Conv(cin, 48, 1)), ("conv_1", _Conv(48, 64, 5, pad=2)))
        self.tower_1 = _seq(("conv", _Conv(cin, 64, 1)), ("conv_1", _Conv(64, 96, 3, pad=1)),
                            ("conv_2", _Conv(96, 96, 3, pad=1)))
        self.tower_2 = _seq(("pool", _avg3()), ("conv", _Conv(cin, pool_features, 1)))

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.conv(x), self.tower(x), self.tower_1(x), self.tower_2(x)], 1)


class _B(nn.Module):
    def __init__(self, cin: int):
        super().__init__()
        self.conv = _Conv(cin, 384, 3, stride=2)
        self.tower = _seq(("conv", _Conv(cin, 64, 1)), ("conv_1", _Conv(64, 96, 3, pad=1)),
                          ("conv_2", _Conv(96, 96, 3, stride=2)))
        self.pool = nn.MaxPool2d(3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.conv(x), self.tower(x), self.pool(x)], 1)


class _C(nn.Module):
    def __init__(self, cin: int, c7: int):
        super().__init__()
        row, col = ((1, 7), (0, 3)), ((7, 1), (3, 0))
        self.conv = _Conv(cin, 192, 1)
        self.tower = _seq(("conv", _Conv(cin, c7, 1)), ("conv_1", _Conv(c7, c7, row[0], pad=row[1])),
                          ("conv_2", _Conv(c7, 192, col[0], pad=col[1])))
        self.tower_1 = _seq(("conv", _Conv(cin, c7, 1)), ("conv_1", _Conv(c7, c7, col[0], pad=col[1])),
                            ("conv_2", _Conv(c7, c7, row[0], pad=row[1])), ("conv_3", _Conv(c7, c7, col[0], pad=col[1])),
                            ("conv_4", _Conv(c7, 192, row[0], pad=row[1])))
        self.tower_2 = _seq(("pool", _avg3()), ("conv", _Conv(cin, 192, 1)))

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.conv(x), self.tower(x), self.tower_1(x), self.tower_2(x)], 1)


class _D(nn.Module):
    def __init__(self, cin: int):
        super().__init__()
        self.tower = _seq(("conv", _Conv(cin, 192, 1)), ("conv_1", _Conv(192, 320, 3, stride=2)))
        self.tower_1 = _seq(("conv", _Conv(cin, 192, 1)), ("conv_1", _Conv(192, 192, (1, 7), pad=(0, 3))),
                            ("conv_2", _Conv(192, 192, (7, 1), pad=(3, 0))), ("conv_3", _Conv(192, 192, 3, stride=2)))
        self.pool = nn.MaxPool2d(3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.tower(x), self.tower_1(x), self.pool(x)], 1)


class _E(nn.Module):
    def __init__(self, cin: int, max_pool: bool):
        super().__init__()
        self.conv = _Conv(cin, 320, 1)
        self.tower_conv = _Conv(cin, 384, 1)
        self.tower_mixed_conv = _Conv(384, 384, (1, 3), pad=(0, 1))
        self.tower_mixed_conv_1 = _Conv(384, 384, (3, 1), pad=(1, 0))
        self.tower_1_conv = _Conv(cin, 448, 1)
        self.tower_1_conv_1 = _Conv(448, 384, 3, pad=1)
        self.tower_1_mixed_conv = _Conv(384, 384, (1, 3), pad=(0, 1))
        self.tower_1_mixed_conv_1 = _Conv(384, 384, (3, 1), pad=(1, 0))
        self.tower_2_pool = nn.MaxPool2d(3, stride=1, padding=1) if max_pool else _avg3()
        self.tower_2_conv = _Conv(cin, 192, 1)

    def forward(self, x: Tensor) -> Tensor:
        a = self.tower_conv(x)
        b = self.tower_1_conv_1(self.tower_1_conv(x))
        return torch.cat([self.conv(x), self.tower_mixed_conv(a), self.tower_mixed_conv_1(a),
                          self.tower_1_mixed_conv(b), self.tower_1_mixed_conv_1(b),
                          self.tower_2_conv(self.tower_2_pool(x))], 1)


class NvidiaInception(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = _seq(
            ("conv", _Conv(3, 32, 3, stride=2)), ("conv_1", _Conv(32, 32, 3)), ("conv_2", _Conv(32, 64, 3, pad=1)),
            ("pool0", nn.MaxPool2d(3, stride=2)), ("conv_3", _Conv(64, 80, 1)), ("conv_4", _Conv(80, 192, 3)),
            ("pool1", nn.MaxPool2d(3, stride=2)),
            ("mixed", _A(192, 32)), ("mixed_1", _A(256, 64)), ("mixed_2", _A(288, 64)), ("mixed_3", _B(288)),
            ("mixed_4", _C(768, 128)), ("mixed_5", _C(768, 160)), ("mixed_6", _C(768, 160)), ("mixed_7", _C(768, 192)),
            ("mixed_8", _D(768)), ("mixed_9", _E(1280, False)), ("mixed_10", _E(2048, True)),
            ("pool2", nn.AvgPool2d(8, stride=8)))
        self.output = nn.Linear(2048, 1008)

    def forward(self, img: Tensor, return_features: bool = False, use_fp16: bool = False,
                no_output_bias: bool = False) -> Tensor:
        n, c, h, w = img.shape
        x = img.to(torch.float16 if use_fp16 else torch.float32)
        # TF1's ResizeBilinear (align_corners=False, no half-pixel centres): source = dest * in/299,
        # as a grid_sample with align_corners=False whose grid is shifted by half an output pixel
        # less half an input pixel
        theta = torch.eye(2, 3, dtype=x.dtype, device=x.device)
        theta[0, 2] = 1.0 / w - 1.0 / 299.0
        theta[1, 2] = 1.0 / h - 1.0 / 299.0
        grid = F.affine_grid(theta.unsqueeze(0).repeat(n, 1, 1), [n, c, 299, 299], align_corners=False)
        x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        x = (x - 128.0) / 128.0
        features = self.layers(x).reshape(-1, 2048)
        if return_features:
            return features
        logits = F.linear(features.float(), self.output.weight, None if no_output_bias else self.output.bias)
        return F.softmax(logits, 1)


def _tv_to_nvidia() -> Dict[str, str]:
    """torchvision BasicConv2d prefix -> this file's conv prefix (under `layers.`)."""
    m = {"Conv2d_1a_3x3": "conv", "Conv2d_2a_3x3": "conv_1", "Conv2d_2b_3x3": "conv_2", "Conv2d_3b_1x1": "conv_3",
         "Conv2d_4a_3x3": "conv_4"}

    def block(tv: str, nv: str, pairs: List[Tuple[str, str]]):
        for a, b in pairs:
            m[f"{tv}.{a}"] = f"{nv}.{b}"

    for tv, nv in (("Mixed_5b", "mixed"), ("Mixed_5c", "mixed_1"), ("Mixed_5d", "mixed_2")):
        block(tv, nv, [("branch1x1", "conv"), ("branch5x5_1", "tower.conv"), ("branch5x5_2", "tower.conv_1"),
                       ("branch3x3dbl_1", "tower_1.conv"), ("branch3x3dbl_2", "tower_1.conv_1"),
                       ("branch3x3dbl_3", "tower_1.conv_2"), ("branch_pool", "tower_2.conv")])
    block("Mixed_6a", "mixed_3", [("branch3x3", "conv"), ("branch3x3dbl_1", "tower.conv"),
                                  ("branch3x3dbl_2", "tower.conv_1"), ("branch3x3dbl_3", "tower.conv_2")])
    for tv, nv in (("Mixed_6b", "mixed_4"), ("Mixed_6c", "mixed_5"), ("Mixed_6d", "mixed_6"), ("Mixed_6e", "mixed_7")):
        block(tv, nv, [("branch1x1", "conv"), ("branch7x7_1", "tower.conv"), ("branch7x7_2", "tower.conv_1"),
                       ("branch7x7_3", "tower.conv_2"), ("branch7x7dbl_1", "tower_1.conv"),
                       ("branch7x7dbl_2", "tower_1.conv_1"), ("branch7x7dbl_3", "tower_1.conv_2"),
                       ("branch7x7dbl_4", "tower_1.conv_3"), ("branch7x7dbl_5", "tower_1.conv_4"),
                       ("branch_pool", "tower_2.conv")])
    block("Mixed_7a", "mixed_8", [("branch3x3_1", "tower.conv"), ("branch3x3_2", "tower.conv_1"),
                                  ("branch7x7x3_1", "tower_1.conv"), ("branch7x7x3_2", "tower_1.conv_1"),
                                  ("branch7x7x3_3", "tower_1.conv_2"), ("branch7x7x3_4", "tower_1.conv_3")])
    for tv, nv in (("Mixed_7b", "mixed_9"), ("Mixed_7c", "mixed_10")):
        block(tv, nv, [("branch1x1", "conv"), ("branch3x3_1", "tower_conv"), ("branch3x3_2a", "tower_mixed_conv"),
                       ("branch3x3_2b", "tower_mixed_conv_1"), ("branch3x3dbl_1", "tower_1_conv"),
                       ("branch3x3dbl_2", "tower_1_conv_1"), ("branch3x3dbl_3a", "tower_1_mixed_conv"),
                       ("branch3x3dbl_3b", "tower_1_mixed_conv_1"), ("branch_pool", "tower_2_conv")])
    return m


def save_nvidia_inception(sd: Dict[str, Tensor], path: str) -> None:
    """Saves the stand-in, with the weights of `sd` (torchvision's key layout: tf2015 plus fc of 1008
    classes; every batch norm's scale 1), as a TorchScript file at `path`."""
    net = NvidiaInception().eval()
    mine = {}
    for tv, nv in _tv_to_nvidia().items():
        if not torch.all(sd[f"{tv}.bn.weight"] == 1):
            raise ValueError(f"{tv}: the file's batch norms have no scale; this one's is not 1")
        mine[f"layers.{nv}.weight"] = sd[f"{tv}.conv.weight"]
        mine[f"layers.{nv}.beta"] = sd[f"{tv}.bn.bias"]
        mine[f"layers.{nv}.mean"] = sd[f"{tv}.bn.running_mean"]
        mine[f"layers.{nv}.var"] = sd[f"{tv}.bn.running_var"]
    mine["output.weight"], mine["output.bias"] = sd["fc.weight"], sd["fc.bias"]
    net.load_state_dict(mine, strict=True)
    torch.jit.save(torch.jit.script(net), path)
