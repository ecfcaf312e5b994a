"""Export an encoder other than Inception-v3 as TorchScript for vecbench (tools/export_encoder.py).

Run with Debian's interpreter (/usr/bin/python3, torch 1.13, torchvision 0.14).

Encoders
  dinov2-vit-{s,b,l,g}-14  DINOv2's CLS token after the final norm (384, 768, 1024, 1536 floats), from
                           the checkpoint torch.hub downloads (dinov2_vit*14_pretrain.pth): dinov2.py
  vgg16                    torchvision's VGG-16 up to fc2, then ReLU (4096 floats: torch-fidelity's
                           'fc2_relu', its default for precision/recall), from torchvision's
                           vgg16-397923af.pth
  clip-vit-b-32, clip-vit-l-14, clip-vit-l-14-336px
                           CLIP's projected image embedding (512, 768, 768 floats; input 224, 224,
                           336), from OpenAI's TorchScript file read as data (ViT-B-32.pt,
                           ViT-L-14.pt, ViT-L-14-336px.pt; the image tower only): clip.py

Protocols (--protocol; the input normalization inside the module, the resize vecbench runs before it)
  torch-fidelity  TF1 bilinear to 224 (tf-legacy), (x - 255 mean) / (255 std) on 0..255 floats
  dgm-eval        Pillow's bicubic on the uint8 image (pil-bicubic-u8), x / 255, (x - mean) / std
  edm2            F.interpolate(bicubic, antialias=True) on floats (torch-bicubic-aa), x / 255, ImageNet
                  (EDM2's 'pil' resize mode is dgm-eval's protocol exactly)
  CLIP: torch-fidelity (TF1 bilinear to the input size, (x - 255 mean) / (255 std) with CLIP's mean/std);
        cmmd (google-research/cmmd: the centre square, Pillow's bicubic on the uint8 image
        (center-crop-pil-bicubic-u8), x / 255, CLIP's mean/std, the embedding L2-normalized);
        clean-fid (CLIP-FID, ViT-B/32: torchvision's Resize(224) + CenterCrop(224) on the PIL image
        (pil-bicubic-u8-short-side-crop), x / 255, CLIP's mean/std)

Weights: --weights FILE (checked key by key and shape by shape, read with torch.load(weights_only=True):
no code in the file runs) or --seed N (synthetic, labelled seed:N in the metadata).

The file carries vecbench_meta.json: format_version, arch (the encoder's name), like (the protocol),
weight_source, weight_sha256 (of the weights file; --seed: of the float32 tensors), input_size,
feature_dim, resize_default, normalization, optimize_after_load (false: the module runs as written, so
that its features are the reference network's operation for operation), torch_version, created_utc."""

import argparse
import datetime
import json
import os
import time
from typing import Dict

import torch
from torch import Tensor, nn

from . import clip, dinov2
from .common import (META_FORMAT_VERSION, META_NAME, ExportError, file_sha256, load_tensors, refuse, save_module,
                     state_dict_sha256)

PROG = "export_encoder.py"
ENCODERS = sorted(list(dinov2.DINOV2) + list(clip.CLIP) + ["vgg16"])
VGG16_FILE = "vgg16-397923af.pth"


class Vgg16Features(nn.Module):
    """torchvision's VGG-16 to fc2, then ReLU: [N,3,224,224] RGB 0..255 -> [N,4096]."""

    def __init__(self, protocol: str):
        super().__init__()
        import torchvision
        div, mean, std = dinov2.PROTOCOLS[protocol][:3]
        self.register_buffer("input_div", torch.tensor(div, dtype=torch.float32))
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32).reshape(1, 3, 1, 1))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32).reshape(1, 3, 1, 1))
        self.vgg = torchvision.models.vgg16()
        for tail in (6, 5, 4):  # torch-fidelity's: drop the last dropout, fc3's ReLU... up to fc2
            del self.vgg.classifier[tail]

    def forward(self, x: Tensor) -> Tensor:
        x = (x / self.input_div - self.input_mean) / self.input_std
        return torch.relu(self.vgg(x))


def vgg16_shapes() -> Dict[str, tuple]:
    import torchvision
    return {k: tuple(v.shape) for k, v in torchvision.models.vgg16().state_dict().items()}


def load_vgg16(path: str) -> Dict[str, Tensor]:
    sd = load_tensors(path, "VGG-16 weights")
    want = vgg16_shapes()
    if not isinstance(sd, dict):
        raise ExportError(f"{path}: not a state_dict (torchvision's vgg16-397923af.pth is one)")
    for k, shape in want.items():
        if k not in sd:
            raise ExportError(f"{path}: key {k} is missing: not torchvision's VGG-16 weights")
        if tuple(sd[k].shape) != shape:
            raise ExportError(f"{path}: key {k} has shape {list(sd[k].shape)}, VGG-16 needs {list(shape)}")
    extra = sorted(k for k in sd if k not in want)
    if extra:
        raise ExportError(f"{path}: unexpected key {extra[0]}: not torchvision's VGG-16 weights")
    return {k: v.float() for k, v in sd.items()}


def seeded_vgg16(seed: int) -> Dict[str, Tensor]:
    """Random VGG-16 weights in torchvision's layout, scaled by fan-in so that fc2 stays O(1)."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for k, shape in vgg16_shapes().items():
        if k.endswith("bias"):
            sd[k] = 0.01 * torch.randn(shape, generator=g)
        else:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            sd[k] = torch.randn(shape, generator=g) * (2.0 / fan_in) ** 0.5
    return sd


def build(encoder: str, protocol: str, sd: Dict[str, Tensor]) -> nn.Module:
    if encoder == "vgg16":
        m = Vgg16Features(protocol)
        own = {"vgg." + k: v for k, v in sd.items() if not k.startswith("classifier.6.")}
        own.update({k: getattr(m, k) for k in ("input_div", "input_mean", "input_std")})
        m.load_state_dict(own, strict=True)
    elif encoder in clip.CLIP:
        m = clip.ClipImageFeatures(encoder, protocol)
        m.load_visual(sd)
    else:
        m = dinov2.DinoV2Features(encoder, protocol)
        m.load_checkpoint(sd)
    return m.eval()


def protocols(encoder: str):
    """The protocol table of `encoder`'s family: (div, mean, std, resize_default, words) by name."""
    return clip.PROTOCOLS if encoder in clip.CLIP else dinov2.PROTOCOLS


def shape_of(encoder: str):
    """(input size, feature width) of `encoder`."""
    if encoder == "vgg16":
        return dinov2.INPUT_SIZE, 4096
    if encoder in clip.CLIP:
        return clip.input_size(encoder), clip.feature_dim(encoder)
    return dinov2.INPUT_SIZE, dinov2.DINOV2[encoder][1]


def weights_of(args):
    """(state_dict, weight_source, weight_sha256) of --weights or --seed."""
    if args.weights is not None:
        if args.encoder == "vgg16":
            sd = load_vgg16(args.weights)
        elif args.encoder in clip.CLIP:
            sd = clip.load_openai(args.weights, args.encoder)
        else:
            sd = dinov2.load_checkpoint(args.weights, args.encoder)
        return sd, f"weights:{os.path.basename(args.weights)}", file_sha256(args.weights)
    seed = 0 if args.seed is None else args.seed
    if args.encoder == "vgg16":
        sd = seeded_vgg16(seed)
    elif args.encoder in clip.CLIP:
        sd = clip.seeded_visual(args.encoder, seed)
    else:
        sd = dinov2.seeded_checkpoint(args.encoder, seed)
    return sd, f"seed:{seed}", state_dict_sha256(sd)


def export(args) -> str:
    t0 = time.time()
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise ExportError(f"{args.out}: output directory {out_dir} does not exist")
    sd, source, sha = weights_of(args)
    model = build(args.encoder, args.protocol, sd)
    scripted = torch.jit.script(model)
    scripted.eval()
    g = torch.Generator().manual_seed(1)
    size, dim = shape_of(args.encoder)
    x = torch.rand(2, 3, size, size, generator=g) * 255
    with torch.no_grad():
        ref, got = model(x), scripted(x)
    if tuple(got.shape) != (2, dim) or not torch.isfinite(got).all():
        raise ExportError(f"{source}: the exported model gives non-finite or mis-shaped features")
    if not torch.equal(ref, got):
        raise AssertionError("internal: the scripted and eager modules differ")
    div, mean, std, resize, words = protocols(args.encoder)[args.protocol]
    meta = {
        "format_version": META_FORMAT_VERSION,
        "arch": args.encoder,
        "like": args.protocol,
        "weight_source": source,
        "weight_sha256": sha,
        "input_layout": "NCHW float32 RGB 0..255",
        "input_size": size,
        "feature_dim": dim,
        "resize_default": resize,
        "normalization": f"(x/{div:g}-{[round(m, 6) for m in mean]})/{[round(s, 6) for s in std]}",
        "pipeline": words,
        "optimize_after_load": False,
        "torch_version": torch.__version__,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    save_module(scripted, args.out, {META_NAME: json.dumps(meta, sort_keys=True)})
    return (f"{PROG}: wrote {args.out} encoder={args.encoder} protocol={args.protocol} source={source} "
            f"sha256={sha[:16]} ({time.time() - t0:.1f}s)")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    p.add_argument("--error-file", metavar="FILE", help="on a refusal, also write its reason here (vecbench reads it)")
    p.add_argument("--encoder", required=True, choices=ENCODERS)
    p.add_argument("--protocol", required=True, choices=sorted(set(dinov2.PROTOCOLS) | set(clip.PROTOCOLS)),
                   help="the tool whose preprocessing the module and its resize follow")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=int, help="synthetic weights from this seed (default 0)")
    src.add_argument("--weights", metavar="FILE", help="the checkpoint the tool downloads (checked key by key)")
    args = p.parse_args(argv)
    if args.encoder == "vgg16" and args.protocol != "torch-fidelity":
        p.error("vgg16 is torch-fidelity's extractor: --protocol torch-fidelity")
    if args.protocol not in protocols(args.encoder):
        p.error(f"{args.encoder} has the protocols {', '.join(sorted(protocols(args.encoder)))}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        print(export(args), flush=True)
    except ExportError as e:
        return refuse(PROG, e, args.error_file)
    return 0
