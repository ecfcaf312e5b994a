"""DINOv2 ViT-S/B/L/g 14 as a TorchScript feature module: the CLS token after the final norm.

The network is the one torch.hub.load('facebookresearch/dinov2', 'dinov2_vit{s,b,l,g}14') builds
(dinov2/hub/backbones.py: img_size 518, patch 14, layer scale, block_chunks 0, no registers,
interpolate_offset 0.1, no antialiasing; ViT-g with the fused SwiGLU FFN), written here from its
description so that Debian's torch 1.13 can script it, and checked key by key and shape by shape
against the checkpoint the hub downloads (dinov2_vit*14_pretrain.pth, loaded strictly there).

At 224 x 224 the hub interpolates the 37 x 37 position embedding (trained at 518) bicubically with
scale factors (16 + 0.1) / 37, not 16 / 37 (its interpolate_pos_encoding): the interpolated table
depends on the input size only, so it is computed once here by the same F.interpolate call and
stored in the module (buffer pos_embed_224).

forward(x) takes float32 [N,3,224,224] RGB 0..255 (resized by vecbench, the protocol's resize) and
normalizes as the protocol does: (x / div - mean) / std, div 255 and ImageNet's mean/std
(dgm-eval's ToTensor + Normalize, EDM2's x / 255), or div 1 and 255 x mean/std (torch-fidelity's
normalize on 0..255 floats)."""

import math
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .common import ExportError, load_tensors

PATCH = 14
TRAIN_GRID = 37  # 518 / 14
INPUT_SIZE = 224
INTERPOLATE_OFFSET = 0.1
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# encoder name: (hub entry, embed dim, depth, heads, ffn)
DINOV2 = {
    "dinov2-vit-s-14": ("dinov2_vits14", 384, 12, 6, "mlp"),
    "dinov2-vit-b-14": ("dinov2_vitb14", 768, 12, 12, "mlp"),
    "dinov2-vit-l-14": ("dinov2_vitl14", 1024, 24, 16, "mlp"),
    "dinov2-vit-g-14": ("dinov2_vitg14", 1536, 40, 24, "swiglu"),
}
# protocol: (div, mean, std, resize_default, words)
PROTOCOLS = {
    "torch-fidelity": (1.0, tuple(255 * m for m in IMAGENET_MEAN), tuple(255 * s for s in IMAGENET_STD), "tf-legacy",
                       "TF1 bilinear to 224 on 0..255 floats, normalize by 255 x ImageNet mean/std"),
    "dgm-eval": (255.0, IMAGENET_MEAN, IMAGENET_STD, "pil-bicubic-u8",
                 "Pillow's bicubic to 224 on the uint8 image, x/255, ImageNet mean/std"),
    "edm2": (255.0, IMAGENET_MEAN, IMAGENET_STD, "torch-bicubic-aa",
             "F.interpolate(bicubic, antialias=True) to 224 on floats, x/255, ImageNet mean/std"),
}


def checkpoint_name(encoder: str) -> str:
    return DINOV2[encoder][0] + "_pretrain.pth"


def swiglu_hidden(dim: int) -> int:
    hidden = int(dim * 4 * 2 / 3)  # SwiGLUFFNFused: 2/3 of mlp_ratio 4, rounded up to a multiple of 8
    return (hidden + 7) // 8 * 8


def expected_shapes(encoder: str) -> Dict[str, Tuple[int, ...]]:
    """Every key of the hub checkpoint and its shape."""
    _, dim, depth, _, ffn = DINOV2[encoder]
    s: Dict[str, Tuple[int, ...]] = {
        "cls_token": (1, 1, dim), "pos_embed": (1, TRAIN_GRID * TRAIN_GRID + 1, dim), "mask_token": (1, dim),
        "patch_embed.proj.weight": (dim, 3, PATCH, PATCH), "patch_embed.proj.bias": (dim,),
        "norm.weight": (dim,), "norm.bias": (dim,)}
    for i in range(depth):
        b = f"blocks.{i}."
        s.update({b + "norm1.weight": (dim,), b + "norm1.bias": (dim,), b + "norm2.weight": (dim,),
                  b + "norm2.bias": (dim,), b + "attn.qkv.weight": (3 * dim, dim), b + "attn.qkv.bias": (3 * dim,),
                  b + "attn.proj.weight": (dim, dim), b + "attn.proj.bias": (dim,), b + "ls1.gamma": (dim,),
                  b + "ls2.gamma": (dim,)})
        if ffn == "mlp":
            s.update({b + "mlp.fc1.weight": (4 * dim, dim), b + "mlp.fc1.bias": (4 * dim,),
                      b + "mlp.fc2.weight": (dim, 4 * dim), b + "mlp.fc2.bias": (dim,)})
        else:
            h = swiglu_hidden(dim)
            s.update({b + "mlp.w12.weight": (2 * h, dim), b + "mlp.w12.bias": (2 * h,),
                      b + "mlp.w3.weight": (dim, h), b + "mlp.w3.bias": (dim,)})
    return s


def check_state_dict(sd, encoder: str, path: str) -> None:
    """Refuses (ExportError naming the file and the key) anything but the plain checkpoint of `encoder`."""
    if not isinstance(sd, dict) or not all(isinstance(v, Tensor) for v in sd.values()):
        raise ExportError(f"{path}: not a DINOv2 checkpoint (a dict of tensors, as the hub's *_pretrain.pth)")
    if "register_tokens" in sd:
        n = tuple(sd["register_tokens"].shape)[1] if sd["register_tokens"].dim() == 3 else "?"
        raise ExportError(f"{path}: holds register_tokens ({n} registers): the checkpoint of the register variant "
                          f"({DINOV2[encoder][0]}_reg{n}), not {DINOV2[encoder][0]}'s, which "
                          f"{checkpoint_name(encoder)} must be")
    want = expected_shapes(encoder)
    missing = [k for k in want if k not in sd]
    if missing:
        raise ExportError(f"{path}: key {missing[0]} is missing ({len(missing)} missing): not {encoder}'s checkpoint")
    extra = sorted(k for k in sd if k not in want)
    if extra:
        raise ExportError(f"{path}: unexpected key {extra[0]} ({len(extra)} unexpected): not {encoder}'s checkpoint")
    for k, shape in want.items():
        if tuple(sd[k].shape) != shape:
            raise ExportError(f"{path}: key {k} has shape {list(sd[k].shape)}, {encoder} needs {list(shape)}")
        if not sd[k].is_floating_point():
            raise ExportError(f"{path}: key {k} is {sd[k].dtype}, not floating point")


def load_checkpoint(path: str, encoder: str) -> Dict[str, Tensor]:
    """The checkpoint at `path`, read with torch.load(weights_only=True) (tensors in dicts: no code
    runs), checked against `encoder`."""
    sd = load_tensors(path, "a DINOv2 checkpoint")
    check_state_dict(sd, encoder, path)
    return {k: v.float() for k, v in sd.items()}


def seeded_checkpoint(encoder: str, seed: int) -> Dict[str, Tensor]:
    """Random weights in the hub checkpoint's layout (keys, shapes), as DINOv2's init draws them
    (normal 0.02 for the tokens, the position embedding and the biases, fan-in scaled matrices, norms
    near 1) with layer scale 0.1, so that a random network's features stay O(1) and vary with the image."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for k, shape in expected_shapes(encoder).items():
        if k.endswith("gamma"):
            t = torch.full(shape, 0.1)
        elif k.startswith("norm") or ".norm" in k:
            t = torch.ones(shape) if k.endswith("weight") else torch.zeros(shape)
            t = t + 0.05 * torch.randn(shape, generator=g)
        elif k.endswith("bias") or k in ("cls_token", "pos_embed", "mask_token"):
            t = 0.02 * torch.randn(shape, generator=g)
        else:  # fan-in scaled, so that attention is not uniform and the CLS token depends on the image
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            t = torch.randn(shape, generator=g) * fan_in ** -0.5
        sd[k] = t.contiguous()
    return sd


def interpolated_pos_embed(pos_embed: Tensor, size: int) -> Tensor:
    """The hub's interpolate_pos_encoding for a size x size input: [1, 1 + (size/14)^2, dim]."""
    pos = pos_embed.float()
    dim = pos.shape[-1]
    n = pos.shape[1] - 1
    m = int(math.sqrt(n))
    w0 = size // PATCH
    s = float(w0 + INTERPOLATE_OFFSET) / m
    grid = F.interpolate(pos[:, 1:].reshape(1, m, m, dim).permute(0, 3, 1, 2), scale_factor=(s, s), mode="bicubic",
                         antialias=False)
    if tuple(grid.shape[-2:]) != (w0, w0):
        raise AssertionError(f"internal: interpolated grid {tuple(grid.shape)}")
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((pos[:, 0].unsqueeze(0), grid), dim=1)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.scale = float((dim // heads) ** -0.5)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape[0], x.shape[1], x.shape[2]
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class Mlp(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class SwiGLU(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        h = swiglu_hidden(dim)
        self.w12 = nn.Linear(dim, 2 * h)
        self.w3 = nn.Linear(h, dim)

    def forward(self, x: Tensor) -> Tensor:
        x12 = self.w12(x)
        x1, x2 = x12.chunk(2, dim=-1)
        return self.w3(F.silu(x1) * x2)


class LayerScale(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: str):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.ls1 = LayerScale(dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim) if ffn == "mlp" else SwiGLU(dim)
        self.ls2 = LayerScale(dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class PatchEmbed(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=PATCH, stride=PATCH)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class DinoV2Features(nn.Module):
    """RGB 0..255 [N,3,224,224] -> the CLS token after the final norm [N, dim]."""

    def __init__(self, encoder: str, protocol: str):
        super().__init__()
        _, dim, depth, heads, ffn = DINOV2[encoder]
        div, mean, std = PROTOCOLS[protocol][:3]
        self.register_buffer("input_div", torch.tensor(div, dtype=torch.float32))
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32).reshape(1, 3, 1, 1))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32).reshape(1, 3, 1, 1))
        self.patch_embed = PatchEmbed(dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        n = (INPUT_SIZE // PATCH) ** 2 + 1
        self.register_buffer("pos_embed_224", torch.zeros(1, n, dim))
        self.blocks = nn.ModuleList([Block(dim, heads, ffn) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def load_checkpoint(self, sd: Dict[str, Tensor]) -> None:
        own = {k: v for k, v in sd.items() if k not in ("pos_embed", "mask_token")}
        own["pos_embed_224"] = interpolated_pos_embed(sd["pos_embed"], INPUT_SIZE)
        own.update({k: getattr(self, k) for k in ("input_div", "input_mean", "input_std")})
        self.load_state_dict(own, strict=True)

    def forward(self, x: Tensor) -> Tensor:
        x = (x / self.input_div - self.input_mean) / self.input_std
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed_224
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)[:, 0].contiguous()


def hub_state_names(encoder: str) -> List[str]:
    return sorted(expected_shapes(encoder))
