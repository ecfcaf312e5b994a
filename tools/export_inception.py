#!/usr/bin/env python3
"""Export an Inception-v3 pool-feature extractor as TorchScript for vecbench.

Run with Debian's interpreter (/usr/bin/python3, torch 1.13, torchvision 0.14).

The saved module's forward(x) takes float32 [N,3,H,W] RGB in 0..255 (H=W=299
for the intended use, not normalized), applies the architecture's input
normalization itself and returns float32 [N,2048]: the global average pool
after Mixed_7c, flattened (no dropout, no fc).

Architectures
  tf2015       The network of TF's classify_image_graph_def.pb
               (inception-2015-12-05), the one FID is defined with:
               torchvision's Inception3 layout with 1008 classes, but the
               pool branches of Mixed_5b-5d, Mixed_6b-6e and Mixed_7b average
               without counting padding, and Mixed_7c's pool branch is a 3x3
               max pool.  Input normalization (x-128)/128.
  torchvision  torchvision's Inception3 (transform_input=False); input
               normalization x/255, then ImageNet mean/std.

Weight sources (exactly one; default --seed 0)
  --seed N           deterministic synthetic weights: fan-in scaled conv
                     init, BN statistics calibrated on 3 seeded images (smooth
                     to uniform noise) so that the pool features are O(1).
  --weights FILE     a state_dict in torchvision's key layout (a dict of
                     tensors, or {'state_dict': ...}); AuxLogits.* ignored,
                     fc.* (any class count) checked for shape but unused.
  --from-tf FILE.pb  classify_image_graph_def.pb, read straight from the
                     protobuf wire format (no TensorFlow, no protobuf package).
                     Kernels HWIO -> OIHW; BN gamma is used only if present
                     and the <scope>/batchnorm node does not say
                     scale_after_normalization=false (else ones); the node's
                     variance_epsilon, if present, sets the BN eps.

The saved file carries an extra file "vecbench_meta.json" with keys
format_version (1), arch, weight_source ("seed:N" | "weights:<basename>" |
"from-tf:<basename>"), weight_sha256 (of the source file; for --seed, of the
float32 bytes of the floating state_dict tensors in sorted key order),
input_layout, input_size, normalization, feature_dim, resize_default
("tf-legacy" | "bilinear"), torch_version, created_utc.

The module's state_dict has torchvision's backbone keys (Conv2d_1a_3x3.* ..
Mixed_7c.*, no fc, no AuxLogits) plus the buffers input_div, input_mean,
input_std: forward computes (x / input_div - input_mean) / input_std.
Synthetic (--seed) models amplify input perturbations roughly 100x, so
float32 round-off alone gives ~1e-5 relative feature differences between
otherwise equivalent computations.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torchvision.models import inception as tvi

PROG = "export_inception.py"
META_NAME = "vecbench_meta.json"
META_FORMAT_VERSION = 1
INPUT_SIZE = 299
FEATURE_DIM = 2048
TF2015_CLASSES = 1008
TORCHVISION_CLASSES = 1000

ARCH_INFO = {
    "tf2015": {
        "div": 1.0,
        "mean": (128.0, 128.0, 128.0),
        "std": (128.0, 128.0, 128.0),
        "normalization": "(x-128)/128",
        "resize_default": "tf-legacy",
        "num_classes": TF2015_CLASSES,
    },
    "torchvision": {
        "div": 255.0,
        "mean": (0.485, 0.456, 0.406),
        "std": (0.229, 0.224, 0.225),
        "normalization": "(x/255-[0.485,0.456,0.406])/[0.229,0.224,0.225]",
        "resize_default": "bilinear",
        "num_classes": TORCHVISION_CLASSES,
    },
}

# Buffers of the feature module that hold the input normalization.
NORM_BUFFERS = ("input_div", "input_mean", "input_std")


class ExportError(Exception):
    """A user-facing error: message names the file and the cause."""


# ---------------------------------------------------------------------------
# tf2015 blocks: same parameters (and state_dict keys) as torchvision's blocks,
# different pooling in the pool branch.
# ---------------------------------------------------------------------------

class TFInceptionA(tvi.InceptionA):
    """Mixed_5b-5d: pool branch averages over the valid (unpadded) window."""

    def _forward(self, x: Tensor) -> List[Tensor]:
        out1 = self.branch1x1(x)
        out5 = self.branch5x5_2(self.branch5x5_1(x))
        out3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        pooled = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)
        return [out1, out5, out3, self.branch_pool(pooled)]


class TFInceptionC(tvi.InceptionC):
    """Mixed_6b-6e: pool branch averages over the valid (unpadded) window."""

    def _forward(self, x: Tensor) -> List[Tensor]:
        out1 = self.branch1x1(x)
        out7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        dbl = self.branch7x7dbl_1(x)
        dbl = self.branch7x7dbl_2(dbl)
        dbl = self.branch7x7dbl_3(dbl)
        dbl = self.branch7x7dbl_4(dbl)
        dbl = self.branch7x7dbl_5(dbl)
        pooled = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)
        return [out1, out7, dbl, self.branch_pool(pooled)]


class _TFInceptionEBase(tvi.InceptionE):
    def _towers(self, x: Tensor) -> List[Tensor]:
        out1 = self.branch1x1(x)
        t = self.branch3x3_1(x)
        out3 = torch.cat([self.branch3x3_2a(t), self.branch3x3_2b(t)], 1)
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        outd = torch.cat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)], 1)
        return [out1, out3, outd]


class TFInceptionEAvg(_TFInceptionEBase):
    """Mixed_7b: pool branch averages over the valid (unpadded) window."""

    def _forward(self, x: Tensor) -> List[Tensor]:
        outs = self._towers(x)
        pooled = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)
        outs.append(self.branch_pool(pooled))
        return outs


class TFInceptionEMax(_TFInceptionEBase):
    """Mixed_7c: pool branch is a 3x3 max pool (stride 1, pad 1)."""

    def _forward(self, x: Tensor) -> List[Tensor]:
        outs = self._towers(x)
        pooled = F.max_pool2d(x, kernel_size=3, stride=1, padding=1)
        outs.append(self.branch_pool(pooled))
        return outs


def build_inception3(arch: str, num_classes: Optional[int] = None) -> tvi.Inception3:
    """torchvision Inception3 (no aux head), with tf2015 blocks swapped in."""
    if num_classes is None:
        num_classes = ARCH_INFO[arch]["num_classes"]
    net = tvi.Inception3(num_classes=num_classes, aux_logits=False,
                         transform_input=False, init_weights=False)
    if arch == "tf2015":
        net.Mixed_5b = TFInceptionA(192, pool_features=32)
        net.Mixed_5c = TFInceptionA(256, pool_features=64)
        net.Mixed_5d = TFInceptionA(288, pool_features=64)
        net.Mixed_6b = TFInceptionC(768, channels_7x7=128)
        net.Mixed_6c = TFInceptionC(768, channels_7x7=160)
        net.Mixed_6d = TFInceptionC(768, channels_7x7=160)
        net.Mixed_6e = TFInceptionC(768, channels_7x7=192)
        net.Mixed_7b = TFInceptionEAvg(1280)
        net.Mixed_7c = TFInceptionEMax(2048)
    elif arch != "torchvision":
        raise ValueError(arch)
    return net


class InceptionPoolFeatures(nn.Module):
    """[N,3,H,W] RGB 0..255 -> [N,2048] pool features (after Mixed_7c)."""

    channels_last: bool

    def __init__(self, net: tvi.Inception3, div: float, mean, std):
        super().__init__()
        self.channels_last = False  # set by --fuse prepacked: activations stay NHWC end to end
        self.Conv2d_1a_3x3 = net.Conv2d_1a_3x3
        self.Conv2d_2a_3x3 = net.Conv2d_2a_3x3
        self.Conv2d_2b_3x3 = net.Conv2d_2b_3x3
        self.Conv2d_3b_1x1 = net.Conv2d_3b_1x1
        self.Conv2d_4a_3x3 = net.Conv2d_4a_3x3
        self.Mixed_5b = net.Mixed_5b
        self.Mixed_5c = net.Mixed_5c
        self.Mixed_5d = net.Mixed_5d
        self.Mixed_6a = net.Mixed_6a
        self.Mixed_6b = net.Mixed_6b
        self.Mixed_6c = net.Mixed_6c
        self.Mixed_6d = net.Mixed_6d
        self.Mixed_6e = net.Mixed_6e
        self.Mixed_7a = net.Mixed_7a
        self.Mixed_7b = net.Mixed_7b
        self.Mixed_7c = net.Mixed_7c
        # x -> (x / div - mean) / std, per channel, in this exact order of float ops
        self.register_buffer("input_div", torch.full((1, 1, 1, 1), float(div), dtype=torch.float32))
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4 or x.size(1) != 3:
            raise RuntimeError("expected input of shape [N,3,H,W] (RGB, 0..255)")
        x = (x / self.input_div - self.input_mean) / self.input_std
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        x = self.Conv2d_1a_3x3(x)
        x = self.Conv2d_2a_3x3(x)
        x = self.Conv2d_2b_3x3(x)
        x = F.max_pool2d(x, kernel_size=3, stride=2)
        x = self.Conv2d_3b_1x1(x)
        x = self.Conv2d_4a_3x3(x)
        x = F.max_pool2d(x, kernel_size=3, stride=2)
        x = self.Mixed_5b(x)
        x = self.Mixed_5c(x)
        x = self.Mixed_5d(x)
        x = self.Mixed_6a(x)
        x = self.Mixed_6b(x)
        x = self.Mixed_6c(x)
        x = self.Mixed_6d(x)
        x = self.Mixed_6e(x)
        x = self.Mixed_7a(x)
        x = self.Mixed_7b(x)
        x = self.Mixed_7c(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return torch.flatten(x, 1)


class PrepackedConvReLU(nn.Module):
    """conv + batch norm + ReLU as one oneDNN convolution with a fused ReLU post-op
    (mkldnn_prepacked::conv2d_prepack/run, CPU only). BN is folded into the weights at export;
    the weights are prepacked on the first call (for that call's input shape) and kept: a
    prepacked context does not survive torch.jit.save/load in LibTorch 1.13, plain tensors do."""

    ctx: Optional[torch.classes.mkldnn.ConvOpContext]

    def __init__(self, basic: tvi.BasicConv2d):
        super().__init__()
        conv, bn = basic.conv, basic.bn
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        self.register_buffer("weight", (conv.weight * scale.reshape(-1, 1, 1, 1)).detach().contiguous())
        self.register_buffer("bias", (bn.bias - bn.running_mean * scale).detach().contiguous())
        self.stride: List[int] = list(conv.stride)
        self.padding: List[int] = list(conv.padding)
        self.dilation: List[int] = list(conv.dilation)
        self.groups: int = conv.groups
        self.ctx = None

    def forward(self, x: Tensor) -> Tensor:
        ctx = self.ctx
        if ctx is None:
            # The prepack picks the weight's blocked format from the weight's own memory format: a
            # channels_last weight gets the format the NHWC convolution runs with; a plain one gets
            # the NCHW format and is reordered again on every call (9 ms of ~110 per image here).
            # empty(channels_last).copy_ also sets the strides of 1x1 kernels, which .contiguous()
            # leaves as they are (a [O,I,1,1] tensor counts as channels_last-contiguous already).
            w = torch.empty(self.weight.size(), dtype=self.weight.dtype,
                            memory_format=torch.channels_last).copy_(self.weight)
            ctx = torch.ops.mkldnn_prepacked.conv2d_prepack(w, self.bias, self.stride, self.padding,
                                                            self.dilation, self.groups, x.size(), "relu")
            self.ctx = ctx
        return torch.ops.mkldnn_prepacked.conv2d_run(x, ctx)


def fuse_prepacked(model: "InceptionPoolFeatures") -> None:
    """Replaces every BasicConv2d (conv+BN+ReLU) by PrepackedConvReLU and keeps activations in
    channels_last, so no layout reorder runs between layers (results/PERFORMANCE.md)."""
    if not hasattr(torch.ops.mkldnn_prepacked, "conv2d_prepack"):
        raise ExportError("--fuse prepacked: this PyTorch has no mkldnn_prepacked ops")

    def replace(mod: nn.Module) -> None:
        for name, child in mod.named_children():
            if isinstance(child, tvi.BasicConv2d):
                setattr(mod, name, PrepackedConvReLU(child))
            else:
                replace(child)

    replace(model)
    model.channels_last = True


def make_features(arch: str) -> InceptionPoolFeatures:
    info = ARCH_INFO[arch]
    return InceptionPoolFeatures(build_inception3(arch), info["div"], info["mean"], info["std"])


def backbone_template(arch: str) -> Dict[str, Tuple[int, ...]]:
    """Backbone state_dict keys (torchvision layout, no fc/aux) -> shapes."""
    feats = make_features(arch)
    return {k: tuple(v.shape) for k, v in feats.state_dict().items()
            if k not in NORM_BUFFERS}


def state_dict_sha256(sd: Dict[str, Tensor]) -> str:
    """sha256 of the float32 bytes of the floating tensors, in sorted key order."""
    h = hashlib.sha256()
    for k in sorted(sd):
        v = sd[k]
        if torch.is_tensor(v) and v.is_floating_point():
            h.update(v.detach().to(torch.float32).contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _fmt_shape(s) -> str:
    return "[" + ",".join(str(int(d)) for d in s) + "]"


def _fmt_list(items: List[str], limit: int = 6) -> str:
    items = sorted(items)
    more = "" if len(items) <= limit else f" ... (+{len(items) - limit} more)"
    return ", ".join(items[:limit]) + more


# ---------------------------------------------------------------------------
# --weights: torchvision-layout state_dict
# ---------------------------------------------------------------------------

def check_and_prepare_state_dict(sd, arch: str, path: str) -> Dict[str, Tensor]:
    """Validate a torchvision-layout state_dict; return the backbone tensors.

    AuxLogits.* is ignored; fc.weight/fc.bias are optional and unused, but if
    present must be [K,2048]/[K]; *.num_batches_tracked is optional; anything
    else must match the architecture's keys and shapes exactly."""
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict):
        raise ExportError(f"{path}: expected a state_dict (dict of tensors), got {type(sd).__name__}")
    if not sd:
        raise ExportError(f"{path}: the state_dict is empty")
    non_str = [repr(k) for k in sd if not isinstance(k, str)]
    if non_str:
        raise ExportError(f"{path}: state_dict has non-string keys: {_fmt_list(non_str)}")
    if all(k.startswith("module.") for k in sd):
        sd = {k[len("module."):]: v for k, v in sd.items()}

    template = backbone_template(arch)
    out: Dict[str, Tensor] = {}
    unexpected, bad_shape, bad_type = [], [], []
    fc_w, fc_b = sd.get("fc.weight"), sd.get("fc.bias")
    for k, v in sd.items():
        if k.startswith("AuxLogits."):
            continue
        if k in ("fc.weight", "fc.bias"):
            continue
        if k not in template:
            unexpected.append(k)
            continue
        if not torch.is_tensor(v):
            bad_type.append(f"{k} ({type(v).__name__})")
            continue
        if k.endswith("num_batches_tracked"):
            out[k] = v.detach().to(torch.long).reshape(())
            continue
        if not v.is_floating_point():
            bad_type.append(f"{k} ({v.dtype})")
            continue
        if tuple(v.shape) != template[k]:
            bad_shape.append(f"{k}: expected {_fmt_shape(template[k])}, got {_fmt_shape(v.shape)}")
            continue
        out[k] = v.detach().to(torch.float32).contiguous()
    missing = [k for k in template if k not in sd and not k.endswith("num_batches_tracked")]
    if fc_w is not None or fc_b is not None:
        ok = (torch.is_tensor(fc_w) and torch.is_tensor(fc_b) and fc_w.dim() == 2
              and fc_w.shape[1] == FEATURE_DIM and fc_b.dim() == 1 and fc_b.shape[0] == fc_w.shape[0])
        if not ok:
            ws = _fmt_shape(fc_w.shape) if torch.is_tensor(fc_w) else repr(type(fc_w).__name__)
            bs = _fmt_shape(fc_b.shape) if torch.is_tensor(fc_b) else repr(type(fc_b).__name__)
            bad_shape.append(f"fc.weight/fc.bias: expected [K,{FEATURE_DIM}]/[K], got {ws}/{bs}")
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing key(s): {_fmt_list(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected key(s): {_fmt_list(unexpected)}")
    if bad_shape:
        problems.append(f"{len(bad_shape)} wrong shape(s): {_fmt_list(bad_shape)}")
    if bad_type:
        problems.append(f"{len(bad_type)} non-float/non-tensor value(s): {_fmt_list(bad_type)}")
    if problems:
        raise ExportError(f"{path}: not a {arch} Inception-v3 state_dict (torchvision key layout): "
                          + "; ".join(problems))
    for k in template:
        if k.endswith("num_batches_tracked") and k not in out:
            out[k] = torch.tensor(0, dtype=torch.long)
    bad_vals = [k for k, v in out.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad_vals:
        raise ExportError(f"{path}: non-finite values in {_fmt_list(bad_vals)}")
    neg_var = [k for k, v in out.items() if k.endswith("running_var") and (v < 0).any()]
    if neg_var:
        raise ExportError(f"{path}: negative BN variance in {_fmt_list(neg_var)}")
    return out


def load_weights_file(path: str, arch: str) -> Dict[str, Tensor]:
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:  # older torch without weights_only
            obj = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - report any load failure
        raise ExportError(f"{path}: cannot read as a PyTorch state_dict ({type(e).__name__}: {e})")
    return check_and_prepare_state_dict(obj, arch, path)


# ---------------------------------------------------------------------------
# --from-tf: minimal protobuf wire-format reader for GraphDef
# ---------------------------------------------------------------------------

DT_FLOAT = 1


def _read_varint(buf, pos: int, end: int) -> Tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint too long")


def _iter_fields(buf, start: int, end: int):
    """Yield (field_number, wire_type, value) for a message in buf[start:end].

    value: int for varints; (lo, hi) offsets for fixed64/fixed32/bytes."""
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise ValueError(f"invalid field number 0 at offset {pos}")
        if wt == 0:
            v, pos = _read_varint(buf, pos, end)
            yield field, wt, v
        elif wt == 1:
            if pos + 8 > end:
                raise ValueError("truncated fixed64")
            yield field, wt, (pos, pos + 8)
            pos += 8
        elif wt == 2:
            n, pos = _read_varint(buf, pos, end)
            if pos + n > end:
                raise ValueError(f"length-delimited field {field} runs past its message")
            yield field, wt, (pos, pos + n)
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                raise ValueError("truncated fixed32")
            yield field, wt, (pos, pos + 4)
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt} (field {field}) at offset {pos}")
    if pos != end:
        raise ValueError("message overruns its length")


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


class TFGraphConsts:
    """The Const tensors (lazily decoded) and a few node attrs of a GraphDef."""

    def __init__(self, data: bytes):
        self.buf = memoryview(data)
        self.consts: Dict[str, Tuple[int, int]] = {}   # name -> TensorProto range
        self.attrs: Dict[str, Dict[str, Tuple[int, int]]] = {}  # name -> attr -> AttrValue range
        self.ops: Dict[str, str] = {}
        n = len(self.buf)
        for field, wt, val in _iter_fields(self.buf, 0, n):
            if field == 1 and wt == 2:
                self._parse_node(*val)

    def _parse_node(self, lo: int, hi: int) -> None:
        buf = self.buf
        name, op = None, None
        attrs: Dict[str, Tuple[int, int]] = {}
        for field, wt, val in _iter_fields(buf, lo, hi):
            if wt != 2:
                continue
            if field == 1:
                name = bytes(buf[val[0]:val[1]]).decode("utf-8")
            elif field == 2:
                op = bytes(buf[val[0]:val[1]]).decode("utf-8")
            elif field == 5:  # map<string, AttrValue> entry
                key, value = None, None
                for f2, w2, v2 in _iter_fields(buf, *val):
                    if f2 == 1 and w2 == 2:
                        key = bytes(buf[v2[0]:v2[1]]).decode("utf-8")
                    elif f2 == 2 and w2 == 2:
                        value = v2
                if key is not None and value is not None:
                    attrs[key] = value
        if name is None:
            return
        self.ops[name] = op or ""
        self.attrs[name] = attrs
        if op == "Const" and "value" in attrs:
            for f3, w3, v3 in _iter_fields(buf, *attrs["value"]):
                if f3 == 8 and w3 == 2:  # AttrValue.tensor
                    self.consts[name] = v3

    def attr_float(self, node: str, key: str) -> Optional[float]:
        rng = self.attrs.get(node, {}).get(key)
        if rng is None:
            return None
        for f, wt, v in _iter_fields(self.buf, *rng):
            if f == 4 and wt == 5:  # AttrValue.f
                return float(np.frombuffer(self.buf[v[0]:v[1]], dtype="<f4")[0])
        return None

    def attr_bool(self, node: str, key: str) -> Optional[bool]:
        rng = self.attrs.get(node, {}).get(key)
        if rng is None:
            return None
        for f, wt, v in _iter_fields(self.buf, *rng):
            if f == 5 and wt == 0:  # AttrValue.b
                return bool(v)
        return False  # present but default (false) value

    def has(self, name: str) -> bool:
        return name in self.consts

    def tensor(self, name: str) -> np.ndarray:
        """Decode a DT_FLOAT Const as a numpy float32 array."""
        buf = self.buf
        dtype, shape, content, floats = 0, [], None, []
        for f, wt, v in _iter_fields(buf, *self.consts[name]):
            if f == 1 and wt == 0:
                dtype = v
            elif f == 2 and wt == 2:
                for f2, w2, v2 in _iter_fields(buf, *v):
                    if f2 == 2 and w2 == 2:  # dim
                        size = 0
                        for f3, w3, v3 in _iter_fields(buf, *v2):
                            if f3 == 1 and w3 == 0:
                                size = _int64(v3)
                        shape.append(size)
                    elif f2 == 3 and w2 == 0 and v2:
                        raise ValueError(f"Const {name!r} has unknown rank")
            elif f == 4 and wt == 2:
                content = v
            elif f == 5 and wt == 2:  # packed float_val
                floats.append(np.frombuffer(buf[v[0]:v[1]], dtype="<f4"))
            elif f == 5 and wt == 5:  # unpacked float_val
                floats.append(np.frombuffer(buf[v[0]:v[1]], dtype="<f4"))
        if dtype != DT_FLOAT:
            raise ValueError(f"Const {name!r} has dtype enum {dtype}, expected DT_FLOAT (1)")
        if any(d < 0 for d in shape):
            raise ValueError(f"Const {name!r} has an unknown dimension {shape}")
        count = int(np.prod(shape)) if shape else 1
        if content is not None and content[1] > content[0]:
            nbytes = content[1] - content[0]
            if nbytes != 4 * count:
                raise ValueError(f"Const {name!r}: tensor_content has {nbytes} bytes, "
                                 f"shape {shape} needs {4 * count}")
            arr = np.frombuffer(buf[content[0]:content[1]], dtype="<f4").copy()
        else:
            vals = np.concatenate(floats) if floats else np.zeros(0, np.float32)
            if vals.size > count:
                raise ValueError(f"Const {name!r}: {vals.size} float_val for shape {shape}")
            if vals.size == 0:
                arr = np.zeros(count, np.float32)
            elif vals.size < count:  # TF semantics: the last value repeats
                arr = np.concatenate([vals, np.full(count - vals.size, vals[-1], np.float32)])
            else:
                arr = vals.copy()
        return arr.astype(np.float32, copy=False).reshape(shape)


def _tf_conv_name(i: int) -> str:
    return "conv" if i == 0 else f"conv_{i}"


def tf_scope_map() -> Dict[str, str]:
    """torchvision BasicConv2d prefix -> TF scope in classify_image_graph_def.pb.

    Inside each TF block, the branches are `conv` (plain 1x1 or the stride-2
    3x3), then towers `tower`, `tower_1`, `tower_2` in torchvision's branch
    order; a tower's convs are conv, conv_1, ... in sequence, and the parallel
    1x3/3x1 pair of an E block lives in `<tower>/mixed/{conv,conv_1}`."""
    m: Dict[str, str] = {}
    for i, name in enumerate(("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3",
                              "Conv2d_3b_1x1", "Conv2d_4a_3x3")):
        m[name] = _tf_conv_name(i)

    def seq(block: str, scope: str, tower: str, torch_names: List[str]) -> None:
        base = f"{scope}/{tower}/" if tower else f"{scope}/"
        for i, tn in enumerate(torch_names):
            m[f"{block}.{tn}"] = base + _tf_conv_name(i)

    def tf_block(i: int) -> str:
        return "mixed" if i == 0 else f"mixed_{i}"

    for i, block in enumerate(("Mixed_5b", "Mixed_5c", "Mixed_5d")):          # mixed .. mixed_2
        s = tf_block(i)
        seq(block, s, "", ["branch1x1"])
        seq(block, s, "tower", ["branch5x5_1", "branch5x5_2"])
        seq(block, s, "tower_1", ["branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"])
        seq(block, s, "tower_2", ["branch_pool"])
    s = tf_block(3)                                                            # mixed_3
    seq("Mixed_6a", s, "", ["branch3x3"])
    seq("Mixed_6a", s, "tower", ["branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"])
    for i, block in enumerate(("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e")):  # mixed_4 .. 7
        s = tf_block(4 + i)
        seq(block, s, "", ["branch1x1"])
        seq(block, s, "tower", [f"branch7x7_{j}" for j in (1, 2, 3)])
        seq(block, s, "tower_1", [f"branch7x7dbl_{j}" for j in (1, 2, 3, 4, 5)])
        seq(block, s, "tower_2", ["branch_pool"])
    s = tf_block(8)                                                            # mixed_8
    seq("Mixed_7a", s, "tower", ["branch3x3_1", "branch3x3_2"])
    seq("Mixed_7a", s, "tower_1", [f"branch7x7x3_{j}" for j in (1, 2, 3, 4)])
    for i, block in enumerate(("Mixed_7b", "Mixed_7c")):                       # mixed_9, mixed_10
        s = tf_block(9 + i)
        seq(block, s, "", ["branch1x1"])
        seq(block, s, "tower", ["branch3x3_1"])
        seq(block, s, "tower/mixed", ["branch3x3_2a", "branch3x3_2b"])
        seq(block, s, "tower_1", ["branch3x3dbl_1", "branch3x3dbl_2"])
        seq(block, s, "tower_1/mixed", ["branch3x3dbl_3a", "branch3x3dbl_3b"])
        seq(block, s, "tower_2", ["branch_pool"])
    return m


def load_from_tf(path: str, arch: str) -> Tuple[Dict[str, Tensor], Dict[str, float]]:
    """Returns (backbone state_dict, {bn prefix: eps}) read from a GraphDef."""
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        g = TFGraphConsts(data)
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise ExportError(f"{path}: not a valid GraphDef protobuf ({e})")
    if not g.consts:
        raise ExportError(f"{path}: GraphDef has no Const nodes")

    template = backbone_template(arch)
    scopes = tf_scope_map()
    convs = sorted({k[:-len(".conv.weight")] for k in template if k.endswith(".conv.weight")})
    if sorted(scopes) != convs:  # internal consistency of the map
        raise AssertionError("TF scope map does not cover the torchvision convs exactly")

    sd: Dict[str, Tensor] = {}
    eps: Dict[str, float] = {}
    missing, bad = [], []

    def get(name: str) -> Optional[np.ndarray]:
        if not g.has(name):
            missing.append(name)
            return None
        try:
            return g.tensor(name)
        except ValueError as e:
            bad.append(str(e))
            return None

    def put(key: str, arr: Optional[np.ndarray], tf_name: str) -> None:
        if arr is None:
            return
        want = template[key]
        if tuple(arr.shape) != want:
            bad.append(f"{tf_name}: shape {_fmt_shape(arr.shape)} maps to {key} "
                       f"which needs {_fmt_shape(want)}")
            return
        sd[key] = torch.from_numpy(np.ascontiguousarray(arr))

    for tprefix in convs:
        scope = scopes[tprefix]
        w = get(f"{scope}/conv2d_params")
        if w is not None:
            if w.ndim != 4:
                bad.append(f"{scope}/conv2d_params: expected a 4-d HWIO kernel, got {_fmt_shape(w.shape)}")
            else:
                put(f"{tprefix}.conv.weight", w.transpose(3, 2, 0, 1), f"{scope}/conv2d_params (HWIO->OIHW)")
        bn = f"{scope}/batchnorm"
        put(f"{tprefix}.bn.bias", get(f"{bn}/beta"), f"{bn}/beta")
        put(f"{tprefix}.bn.running_mean", get(f"{bn}/moving_mean"), f"{bn}/moving_mean")
        put(f"{tprefix}.bn.running_var", get(f"{bn}/moving_variance"), f"{bn}/moving_variance")
        # BatchNormWithGlobalNormalization ignores gamma unless scale_after_normalization.
        scale = g.attr_bool(bn, "scale_after_normalization")
        n_out = template[f"{tprefix}.bn.weight"][0]
        if g.has(f"{bn}/gamma") and scale is not False:
            put(f"{tprefix}.bn.weight", get(f"{bn}/gamma"), f"{bn}/gamma")
        else:
            sd[f"{tprefix}.bn.weight"] = torch.ones(n_out)
        e = g.attr_float(bn, "variance_epsilon")
        if e is not None:
            eps[f"{tprefix}.bn"] = e
        sd[f"{tprefix}.bn.num_batches_tracked"] = torch.tensor(0, dtype=torch.long)
    # The classifier is not part of the features; check it if present.
    if g.has("softmax/weights"):
        try:
            fw = g.tensor("softmax/weights")
            if fw.ndim != 2 or fw.shape[0] != FEATURE_DIM:
                bad.append(f"softmax/weights: expected [{FEATURE_DIM},K], got {_fmt_shape(fw.shape)}")
            elif g.has("softmax/biases"):
                fb = g.tensor("softmax/biases")
                if tuple(fb.shape) != (fw.shape[1],):
                    bad.append(f"softmax/biases: expected [{fw.shape[1]}], got {_fmt_shape(fb.shape)}")
        except ValueError as e:
            bad.append(str(e))
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing Const node(s): {_fmt_list(missing)}")
    if bad:
        problems.append(f"{len(bad)} bad tensor(s): {_fmt_list(bad, 4)}")
    if problems:
        raise ExportError(f"{path}: not an inception-2015-12-05 GraphDef: " + "; ".join(problems))
    bad_vals = [k for k, v in sd.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad_vals:
        raise ExportError(f"{path}: non-finite values in {_fmt_list(bad_vals)}")
    return sd, eps


# ---------------------------------------------------------------------------
# --seed: synthetic weights with O(1) activations
# ---------------------------------------------------------------------------

def calibration_images(g: torch.Generator) -> Tensor:
    """3 seeded images in 0..255: multi-scale smooth noise, 50/50 blend, uniform noise."""
    n, size = 3, INPUT_SIZE
    smooth = torch.zeros(n, 3, size, size)
    for s, w in ((2, 1.0), (6, 0.7), (20, 0.5), (75, 0.35), (size, 0.25)):
        z = torch.randn((n, 3, s, s), generator=g)
        smooth += w * F.interpolate(z, size=(size, size), mode="bilinear", align_corners=False)
    smooth = smooth / smooth.flatten(1).std(1).view(n, 1, 1, 1)
    smooth = (127.5 + 60.0 * smooth).clamp(0.0, 255.0)
    noise = torch.rand((n, 3, size, size), generator=g) * 255.0
    a = torch.tensor([0.0, 0.5, 1.0]).view(n, 1, 1, 1)
    return (1.0 - a) * smooth + a * noise


def seeded_state_dict(arch: str, seed: int) -> Dict[str, Tensor]:
    g = torch.Generator().manual_seed(seed)
    feats = make_features(arch)
    with torch.no_grad():
        for name, mod in feats.named_modules():
            if isinstance(mod, nn.Conv2d):
                fan_in = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) * math.sqrt(2.0 / fan_in))
            elif isinstance(mod, nn.BatchNorm2d):
                mod.weight.fill_(1.0)
                mod.bias.zero_()
                mod.reset_running_stats()
                mod.momentum = None  # cumulative average over the calibration batches
        # Calibrate the BN statistics (batch statistics, train mode) on seeded
        # images ranging from smooth "natural-like" to uniform noise, so that
        # photos, flat images and noise all give O(1) features.
        feats.train()
        feats(calibration_images(g))
        feats.eval()
    sd = {k: v.detach().clone() for k, v in feats.state_dict().items()
          if k not in NORM_BUFFERS}
    for k in sd:
        if k.endswith("num_batches_tracked"):
            sd[k] = torch.tensor(0, dtype=torch.long)
    return sd


# ---------------------------------------------------------------------------

def probe_input() -> Tensor:
    """A fixed smooth-ish RGB image in 0..255 (no RNG)."""
    ys = torch.linspace(0, 1, INPUT_SIZE).view(-1, 1)
    xs = torch.linspace(0, 1, INPUT_SIZE).view(1, -1)
    r = 127.5 + 127.5 * torch.sin(12.0 * xs + 3.0 * ys)
    g = 255.0 * xs * ys
    b = 127.5 + 127.5 * torch.cos(20.0 * ys * xs + 1.0)
    return torch.stack([r, g, b]).unsqueeze(0).contiguous()


def export(args) -> str:
    t0 = time.time()
    arch = args.arch
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise ExportError(f"{args.out}: output directory {out_dir} does not exist")
    bn_eps: Dict[str, float] = {}
    if args.weights is not None:
        sd = load_weights_file(args.weights, arch)
        source = f"weights:{os.path.basename(args.weights)}"
        sha = file_sha256(args.weights)
    elif args.from_tf is not None:
        if arch != "tf2015":
            raise ExportError(f"{args.from_tf}: --from-tf holds the tf2015 network; use --arch tf2015")
        sd, bn_eps = load_from_tf(args.from_tf, arch)
        source = f"from-tf:{os.path.basename(args.from_tf)}"
        sha = file_sha256(args.from_tf)
    else:
        seed = 0 if args.seed is None else args.seed
        sd = seeded_state_dict(arch, seed)
        source = f"seed:{seed}"
        sha = state_dict_sha256(sd)

    model = make_features(arch)
    res = model.load_state_dict(sd, strict=False)
    if res.unexpected_keys or set(res.missing_keys) - set(NORM_BUFFERS):
        raise AssertionError(f"internal: state_dict mismatch {res}")
    for name, mod in model.named_modules():
        if name in bn_eps:
            mod.eps = float(bn_eps[name])
    model.eval()
    fuse = getattr(args, "fuse", "none")
    if fuse == "prepacked":
        with torch.no_grad():
            unfused = model(probe_input())
        fuse_prepacked(model)
        model.eval()

    scripted = torch.jit.script(model)
    scripted.eval()
    with torch.no_grad():
        x = probe_input()
        ref = model(x)
        got = scripted(x)
    if tuple(got.shape) != (1, FEATURE_DIM) or not torch.isfinite(got).all():
        raise ExportError(f"{source}: exported model gives non-finite or mis-shaped features")
    rel = float((got - ref).norm() / ref.norm().clamp_min(1e-30))
    if rel > 1e-4:
        raise AssertionError(f"internal: scripted and eager model differ (rel {rel:.3g})")
    if fuse == "prepacked":
        rel_fused = float((got - unfused).norm() / unfused.norm().clamp_min(1e-30))
        if rel_fused > 1e-4:
            raise AssertionError(f"internal: fused model differs from the plain one (rel {rel_fused:.3g})")
    fmean = float(got.mean())
    if source.startswith("seed:") and not (0.05 <= fmean <= 20.0):
        raise AssertionError(f"internal: synthetic pool features not O(1) (mean {fmean:.4g})")

    if fuse == "prepacked":  # the probe built contexts; they must not be saved (cannot be loaded)
        for mod in scripted.modules():
            if mod.original_name == "PrepackedConvReLU":
                mod.ctx = None

    meta = {
        "format_version": META_FORMAT_VERSION,
        "arch": arch,
        "weight_source": source,
        "weight_sha256": sha,
        "input_layout": "NCHW float32 RGB 0..255",
        "input_size": INPUT_SIZE,
        "normalization": ARCH_INFO[arch]["normalization"],
        "feature_dim": FEATURE_DIM,
        "resize_default": ARCH_INFO[arch]["resize_default"],
        "torch_version": torch.__version__,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fuse": fuse,
        # a prepacked model must not be frozen/optimized after loading (freezing would constant-fold
        # its lazily built contexts away); it is already folded and runs on CPU only
        "optimize_after_load": fuse == "none",
        "devices": "cpu" if fuse == "prepacked" else "any",
    }
    out = args.out
    tmp = f"{out}.tmp{os.getpid()}"
    try:
        torch.jit.save(scripted, tmp, _extra_files={META_NAME: json.dumps(meta, sort_keys=True)})
        os.replace(tmp, out)
    except OSError as e:
        raise ExportError(f"{out}: cannot write ({e})")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return (f"{PROG}: wrote {out} arch={arch} source={source} sha256={sha[:16]} "
            f"probe_feature_mean={fmean:.4g} ({time.time() - t0:.1f}s)")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    p.add_argument("--arch", choices=sorted(ARCH_INFO), default="tf2015")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=int, help="synthetic weights from this seed (default 0)")
    src.add_argument("--weights", metavar="FILE", help="PyTorch state_dict, torchvision key layout")
    src.add_argument("--from-tf", metavar="GRAPH.pb", dest="from_tf",
                     help="classify_image_graph_def.pb (inception-2015-12-05)")
    p.add_argument("--fuse", choices=["none", "prepacked"], default="none",
                   help="prepacked: conv+BN+ReLU as oneDNN prepacked convolutions with a fused ReLU, "
                        "activations in channels_last (CPU only, faster; see results/PERFORMANCE.md)")
    args = p.parse_args(argv)
    if args.seed is not None and not 0 <= args.seed < 2 ** 63:
        p.error("--seed must be in 0 .. 2^63-1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        print(export(args), flush=True)
    except ExportError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
