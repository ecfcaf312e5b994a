"""The two Inception-v3 architectures (tf2015 and torchvision) as pool-feature modules."""

from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
try:
    from torchvision.models import inception as tvi
except ImportError:  # a bare PyTorch (the GPU machine): the same blocks, our own copy
    from . import inception_blocks as tvi  # type: ignore[no-redef]

from .common import ARCH_INFO, CLASSIFIER_BUFFERS, FEATURE_DIM, INPUT_SIZE, LIKE_INFO, NORM_BUFFERS

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
        # the classifier after pool_3 (set_classifier; K = 0: none): not used by forward
        self.register_buffer("classifier_weight", torch.zeros(0, FEATURE_DIM, dtype=torch.float32))
        self.register_buffer("classifier_bias", torch.zeros(0, dtype=torch.float32))

    def set_classifier(self, weight: Tensor, bias: Tensor) -> None:
        self.classifier_weight = weight.detach().to(torch.float32).contiguous()
        self.classifier_bias = bias.detach().to(torch.float32).contiguous()

    @torch.jit.export
    def logits_unbiased(self, x: Tensor) -> Tensor:
        """pool_3 times the classifier's weight, without its bias (torch-fidelity's
        'logits_unbiased', the Inception Score's input), float32 [N,K]."""
        if self.classifier_weight.size(0) == 0:
            raise RuntimeError("this export has no classifier")
        return torch.mm(self.forward(x), self.classifier_weight.t())

    @torch.jit.export
    def logits(self, x: Tensor) -> Tensor:
        """The classifier's logits (softmax/logits of TF's graph), float32 [N,K]."""
        return self.logits_unbiased(x) + self.classifier_bias.unsqueeze(0)

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


def make_features(arch: str, like: Optional[str] = None) -> InceptionPoolFeatures:
    """The pool-feature module of `arch`, with the input normalization of the FID tool `like`
    (common.LIKE_INFO) instead of the architecture's own when given."""
    info = LIKE_INFO[like] if like else ARCH_INFO[arch]
    return InceptionPoolFeatures(build_inception3(arch), info["div"], info["mean"], info["std"])


def backbone_template(arch: str) -> Dict[str, Tuple[int, ...]]:
    """Backbone state_dict keys (torchvision layout, no fc/aux) -> shapes."""
    feats = make_features(arch)
    return {k: tuple(v.shape) for k, v in feats.state_dict().items()
            if k not in NORM_BUFFERS and k not in CLASSIFIER_BUFFERS}



def probe_input() -> Tensor:
    """A fixed smooth-ish RGB image in 0..255 (no RNG)."""
    ys = torch.linspace(0, 1, INPUT_SIZE).view(-1, 1)
    xs = torch.linspace(0, 1, INPUT_SIZE).view(1, -1)
    r = 127.5 + 127.5 * torch.sin(12.0 * xs + 3.0 * ys)
    g = 255.0 * xs * ys
    b = 127.5 + 127.5 * torch.cos(20.0 * ys * xs + 1.0)
    return torch.stack([r, g, b]).unsqueeze(0).contiguous()


