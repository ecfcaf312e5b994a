"""Constants, the user-facing error and small helpers shared by the export package."""

import ctypes
import hashlib
import importlib.util
import os
import sys
from typing import Dict, List

import torch
from torch import Tensor

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

# The FID tools' own input pipelines on the tf2015 network (--like TOOL): the normalization each
# applies to RGB 0..255 and the resize it runs before it (vecbench's resize modes).
#   pytorch-fid     ToTensor (x/255), F.interpolate(bilinear, align_corners=False), then 2x-1
#   torch-fidelity  uint8 -> float, TF1's ResizeBilinear (align_corners=False), then (x-128)/128
#   tf              the seed's graph itself (--from-tf): the same as torch-fidelity after DecodeJpeg
#   clean-fid       its "clean" mode: Pillow's bicubic on float channels (clipped), then (x-128)/128
#                   into the layers of NVIDIA's inception-2015-12-05.pt
#   clean-fid-legacy-tensorflow
#                   that file's own forward: uint8 -> float, TF1's ResizeBilinear (grid_sample,
#                   border), then (x-128)/128: TF's pipeline, as torch-fidelity's
LIKE_INFO = {
    "pytorch-fid": {
        "div": 255.0,
        "mean": (0.5, 0.5, 0.5),
        "std": (0.5, 0.5, 0.5),
        "normalization": "(x/255-0.5)/0.5",
        "resize_default": "bilinear",
    },
    # TF's own pipeline, as tf2015's
    "torch-fidelity": {k: ARCH_INFO["tf2015"][k] for k in ("div", "mean", "std", "normalization", "resize_default")},
    "tf": {k: ARCH_INFO["tf2015"][k] for k in ("div", "mean", "std", "normalization", "resize_default")},
    "clean-fid": {**{k: ARCH_INFO["tf2015"][k] for k in ("div", "mean", "std", "normalization")},
                  "resize_default": "pil-bicubic"},
    "clean-fid-legacy-tensorflow": {k: ARCH_INFO["tf2015"][k]
                                    for k in ("div", "mean", "std", "normalization", "resize_default")},
}
# The weights file each tool's preset is imported from: a state_dict (--weights) or the TF graph (--from-tf).
LIKE_SOURCE = {"pytorch-fid": "weights", "torch-fidelity": "weights", "tf": "from_tf", "clean-fid": "weights",
               "clean-fid-legacy-tensorflow": "weights"}

# Buffers of the feature module that hold the input normalization.
NORM_BUFFERS = ("input_div", "input_mean", "input_std")
# The classifier (1008 classes for tf2015) after pool_3: buffers of the module (its logits() and
# logits_unbiased() methods use them; forward does not) and, for readers without LibTorch, the
# extra files CLASSIFIER_FILES (float32 .npy: weight [K,2048], bias [K]). K = 0: none.
CLASSIFIER_BUFFERS = ("classifier_weight", "classifier_bias")
CLASSIFIER_FILES = ("vecbench_fc_weight.npy", "vecbench_fc_bias.npy")


class ExportError(Exception):
    """A user-facing error: message names the file and the cause."""


def refuse(prog: str, e: ExportError, error_file) -> int:
    """Says why the export refused, on stderr and, when the caller named one (--error-file: vecbench
    reads the reason from it, never by searching the output's text), in that file. Exit status 2."""
    print(f"{prog}: error: {e}", file=sys.stderr)
    if error_file:
        with open(error_file, "w") as f:
            f.write(str(e))
    return 2



def float32_bytes(v: Tensor) -> bytes:
    """The tensor's values as float32 bytes, in memory order (NumPy's tobytes where there is
    NumPy; a bare PyTorch without it reads the tensor's memory)."""
    t = v.detach().to(torch.float32).contiguous().cpu()
    if importlib.util.find_spec("numpy") is None:
        return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())
    return t.numpy().tobytes()


def state_dict_sha256(sd: Dict[str, Tensor]) -> str:
    """sha256 of the float32 bytes of the floating tensors, in sorted key order."""
    h = hashlib.sha256()
    for k in sorted(sd):
        v = sd[k]
        if torch.is_tensor(v) and v.is_floating_point():
            h.update(float32_bytes(v))
    return h.hexdigest()


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def fmt_shape(s) -> str:
    return "[" + ",".join(str(int(d)) for d in s) + "]"


def fmt_list(items: List[str], limit: int = 6) -> str:
    items = sorted(items)
    more = "" if len(items) <= limit else f" ... (+{len(items) - limit} more)"
    return ", ".join(items[:limit]) + more


def npy_f32(t: Tensor) -> bytes:
    """A float32 tensor as the bytes of a NumPy .npy file (v1.0, C order; NumPy not needed)."""
    t = t.detach().to(torch.float32).contiguous()
    dims = ", ".join(str(d) for d in t.shape) + ("," if t.dim() == 1 else "")
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }"
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode("latin1") + float32_bytes(t)


def load_tensors(path: str, what: str):
    """`path` read with torch.load(weights_only=True) (tensors in dicts: no code in the file runs);
    ExportError naming the file when it cannot be (truncated, not a torch file, a pickle of more)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ExportError(f"{path}: cannot be read as {what} ({type(e).__name__}: {e})")


def save_module(scripted, out: str, extra: Dict[str, str]) -> None:
    """`scripted` with its extra files written to `out` atomically (a temp file renamed into place)."""
    tmp = f"{out}.tmp{os.getpid()}"
    try:
        torch.jit.save(scripted, tmp, _extra_files=extra)
        os.replace(tmp, out)
    except OSError as e:
        raise ExportError(f"{out}: cannot write ({e})")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
