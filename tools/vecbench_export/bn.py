"""Batch-norm folding: the one place in Python that folds BN into a convolution."""

from typing import Tuple

import torch
from torch import Tensor


def fold_bn(weight: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor,
            eps: float) -> Tuple[Tensor, Tensor]:
    """conv (no bias) followed by inference batch norm -> (weight, bias) of one convolution.

    scale = gamma / sqrt(var + eps); weight' = weight * scale (per output channel);
    bias' = beta - mean * scale, in this order of float32 operations."""
    scale = gamma / torch.sqrt(var + eps)
    w = (weight * scale.reshape(-1, *([1] * (weight.dim() - 1)))).detach().contiguous()
    b = (beta - mean * scale).detach().contiguous()
    return w, b
