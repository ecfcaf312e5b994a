"""--fuse prepacked: conv+BN+ReLU as prepacked oneDNN convolutions with a fused ReLU."""

from typing import List, Optional

import torch
import torch.nn as nn
from torch import Tensor
try:
    from torchvision.models import inception as tvi
except ImportError:  # a bare PyTorch (the GPU machine): the same blocks, our own copy
    from . import inception_blocks as tvi  # type: ignore[no-redef]

from .bn import fold_bn
from .common import ExportError

class PrepackedConvReLU(nn.Module):
    """conv + batch norm + ReLU as one oneDNN convolution with a fused ReLU post-op
    (mkldnn_prepacked::conv2d_prepack/run, CPU only). BN is folded into the weights at export;
    the weights are prepacked on the first call (for that call's input shape) and kept: a
    prepacked context does not survive torch.jit.save/load in LibTorch 1.13, plain tensors do."""

    ctx: Optional[torch.classes.mkldnn.ConvOpContext]

    def __init__(self, basic: tvi.BasicConv2d):
        super().__init__()
        conv, bn = basic.conv, basic.bn
        weight, bias = fold_bn(conv.weight, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.eps)
        self.register_buffer("weight", weight)
        self.register_buffer("bias", bias)
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


def fuse_prepacked(model: nn.Module) -> None:
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
