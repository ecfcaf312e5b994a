"""CLIP's image towers (OpenAI's ViT-B/32, ViT-L/14, ViT-L/14@336px) as TorchScript feature modules.

The weights are OpenAI's files (ViT-B-32.pt, ViT-L-14.pt, ViT-L-14-336px.pt): TorchScript archives
of the whole CLIP model, fp16, which torch-fidelity 0.4 keeps as
$TORCH_HOME/hub/checkpoints/clip-vit-*-<sha256>.pt and OpenAI's `clip` package as ~/.cache/clip/*.pt.
They are read here without loading the archive as a program: its data.pkl is unpickled by an
unpickler that knows modules, tensors and nothing else (an archive naming any other class or
function is refused), and only the image tower's tensors (visual.*) are read from the archive's
data/ entries; the text tower is never loaded. Every visual.* key is checked against the encoder's
table, with its shape (ViT-L-14.pt named as the 336 px one is refused at visual.positional_embedding).

The network is OpenAI's VisionTransformer (clip/model.py, as torch-fidelity's
feature_extractor_clip.py copies it): the patch convolution without bias, the class embedding,
the position embedding, ln_pre, residual blocks of nn.MultiheadAttention and a QuickGELU MLP
(x * sigmoid(1.702 x)), ln_post of the class token, the projection `proj`: the image embedding
(512 or 768 floats, not normalized). forward(x) takes float32 [N,3,S,S] RGB 0..255 (resized by
vecbench, the protocol's resize) and normalizes as the protocol does; CMMD's protocol divides the
embedding by its L2 norm."""

import pickle
import zipfile
from collections import OrderedDict
from typing import Dict, Tuple

import torch
from torch import Tensor, nn

from .common import ExportError

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

# encoder: (OpenAI's file, input size, width, layers, patch, embedding)
CLIP = {
    "clip-vit-b-32": ("ViT-B-32.pt", 224, 768, 12, 32, 512),
    "clip-vit-l-14": ("ViT-L-14.pt", 224, 1024, 24, 14, 768),
    "clip-vit-l-14-336px": ("ViT-L-14-336px.pt", 336, 1024, 24, 14, 768),
}
# protocol: (div, mean, std, resize_default, words)
PROTOCOLS = {
    "torch-fidelity": (1.0, tuple(255 * m for m in CLIP_MEAN), tuple(255 * s for s in CLIP_STD), "tf-legacy",
                       "TF1 bilinear to the input size on 0..255 floats, normalize by 255 x CLIP's mean/std, "
                       "the projected image embedding"),
    "cmmd": (255.0, CLIP_MEAN, CLIP_STD, "center-crop-pil-bicubic-u8",
             "the centre square, Pillow's bicubic to the input size on the uint8 image, x/255, CLIP's mean/std, "
             "the image embedding L2-normalized (google-research/cmmd)"),
    # clean-fid's CLIP-FID: torchvision's Resize(224, BICUBIC) and CenterCrop(224) on the PIL image,
    # ToTensor() * 255, / 255, CLIP's mean/std (x / 255 * 255 is x for every byte in float32)
    "clean-fid": (255.0, CLIP_MEAN, CLIP_STD, "pil-bicubic-u8-short-side-crop",
                  "the shorter side to the input size by Pillow's bicubic on the uint8 image, the centre crop, "
                  "x/255, CLIP's mean/std, the projected image embedding (clean-fid's CLIP-FID)"),
}
# the protocols whose embedding is L2-normalized (CMMD's: scenic's image embeddings are)
NORMALIZED = {"cmmd"}


def input_size(encoder: str) -> int:
    return CLIP[encoder][1]


def feature_dim(encoder: str) -> int:
    return CLIP[encoder][5]


def expected_shapes(encoder: str) -> Dict[str, Tuple[int, ...]]:
    """Every visual.* key of OpenAI's file for `encoder`, with its shape."""
    _, size, w, layers, patch, embed = CLIP[encoder]
    grid = size // patch
    s: Dict[str, Tuple[int, ...]] = {
        "visual.class_embedding": (w,), "visual.positional_embedding": (grid * grid + 1, w),
        "visual.proj": (w, embed), "visual.conv1.weight": (w, 3, patch, patch),
        "visual.ln_pre.weight": (w,), "visual.ln_pre.bias": (w,), "visual.ln_post.weight": (w,),
        "visual.ln_post.bias": (w,)}
    for i in range(layers):
        b = f"visual.transformer.resblocks.{i}."
        s.update({b + "attn.in_proj_weight": (3 * w, w), b + "attn.in_proj_bias": (3 * w,),
                  b + "attn.out_proj.weight": (w, w), b + "attn.out_proj.bias": (w,),
                  b + "ln_1.weight": (w,), b + "ln_1.bias": (w,), b + "ln_2.weight": (w,), b + "ln_2.bias": (w,),
                  b + "mlp.c_fc.weight": (4 * w, w), b + "mlp.c_fc.bias": (4 * w,),
                  b + "mlp.c_proj.weight": (w, 4 * w), b + "mlp.c_proj.bias": (w,)})
    return s


# --- OpenAI's archive, read as data -------------------------------------------------------------

_DTYPES = {"HalfStorage": torch.float16, "FloatStorage": torch.float32, "DoubleStorage": torch.float64,
           "BFloat16Storage": torch.bfloat16}


class _Module:
    """A TorchScript module as its archive pickles it: its attributes, nothing run."""

    def __setstate__(self, state):
        self.attrs = state if isinstance(state, dict) else {}


class _Storage:
    def __init__(self, dtype, key, numel):
        self.dtype, self.key, self.numel = dtype, key, numel


class _Tensor:
    """A tensor named in data.pkl, read from the archive only when asked for."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)


def _rebuild_tensor(storage, offset, size, stride, *_):
    return _Tensor(storage, offset, size, stride)


class _ArchiveUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, path: str):
        import io
        super().__init__(io.BytesIO(data))
        self.path = path

    def find_class(self, module, name):
        if module.startswith("__torch__."):
            return _Module
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return name
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        raise ExportError(f"{self.path}: its data.pkl names {module}.{name}: not a CLIP model archive "
                          "(only modules and tensors are read from it)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and pid[1] in _DTYPES):
            raise ExportError(f"{self.path}: an unexpected record in its data.pkl ({str(pid)[:60]})")
        return _Storage(_DTYPES[pid[1]], str(pid[2]), int(pid[4]))


_MAX_DEPTH, _MAX_TENSORS, _MAX_PICKLE = 64, 100_000, 64 << 20


def _flatten(obj, prefix: str, out: Dict[str, _Tensor], seen: set, path: str) -> None:
    """Every tensor below module `obj`, by its dotted key. A module met twice (shared or a cycle),
    a tree deeper than _MAX_DEPTH or holding more than _MAX_TENSORS tensors is not a CLIP model."""
    if id(obj) in seen or prefix.count(".") > _MAX_DEPTH:
        raise ExportError(f"{path}: its modules share or nest beyond a model's ({prefix or 'the root'}): damaged")
    seen.add(id(obj))
    for name, v in getattr(obj, "attrs", {}).items():
        if isinstance(v, _Module):
            _flatten(v, prefix + str(name) + ".", out, seen, path)
        elif isinstance(v, _Tensor):
            out[prefix + str(name)] = v
            if len(out) > _MAX_TENSORS:
                raise ExportError(f"{path}: more than {_MAX_TENSORS} tensors: not a CLIP model")


def _read_tensor(z: zipfile.ZipFile, root: str, t: _Tensor, key: str, path: str) -> Tensor:
    member = f"{root}data/{t.storage.key}"
    item = torch.tensor([], dtype=t.storage.dtype).element_size()
    try:
        size = z.getinfo(member).file_size  # before reading: a member larger than its tensor is never inflated
    except KeyError:
        raise ExportError(f"{path}: {key}'s data ({member}) is missing: a truncated or damaged file")
    if size != t.storage.numel * item:
        raise ExportError(f"{path}: {key}'s data holds {size} bytes, not {t.storage.numel * item}: damaged")
    raw = z.read(member)
    if len(raw) != t.storage.numel * item:
        raise ExportError(f"{path}: {key}'s data holds {len(raw)} bytes, not {t.storage.numel * item}: damaged")
    extent = t.offset + sum((n - 1) * s for n, s in zip(t.size, t.stride)) + 1 if all(t.size) else 0
    if extent > t.storage.numel:
        raise ExportError(f"{path}: {key} reaches past its data: damaged")
    flat = torch.frombuffer(bytearray(raw), dtype=t.storage.dtype)
    return torch.as_strided(flat, t.size, t.stride, t.offset).clone().to(torch.float32)


def load_openai(path: str, encoder: str) -> Dict[str, Tensor]:
    """The image tower's tensors (visual.*, float32) of OpenAI's TorchScript file `path`, checked
    key by key against `encoder`'s; ExportError naming the file and the cause otherwise."""
    want = expected_shapes(encoder)
    try:
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
            if len(pkl) != 1:
                raise ExportError(f"{path}: not a TorchScript archive (no data.pkl): not OpenAI's {CLIP[encoder][0]}")
            root = pkl[0][: -len("data.pkl")]
            if z.getinfo(pkl[0]).file_size > _MAX_PICKLE:
                raise ExportError(f"{path}: its data.pkl is larger than a model's description: not OpenAI's file")
            obj = _ArchiveUnpickler(z.read(pkl[0]), path).load()
            if not isinstance(obj, _Module):
                raise ExportError(f"{path}: its data.pkl holds no module: not OpenAI's {CLIP[encoder][0]}")
            tensors: Dict[str, _Tensor] = {}
            _flatten(obj, "", tensors, set(), path)
            visual = {k: t for k, t in tensors.items() if k.startswith("visual.")}
            for k, shape in want.items():
                if k not in visual:
                    raise ExportError(f"{path}: key {k} is missing: not OpenAI's {CLIP[encoder][0]} "
                                      f"({encoder}'s image tower)")
                if visual[k].size != shape:
                    raise ExportError(f"{path}: key {k} has shape {list(visual[k].size)}, {encoder} needs "
                                      f"{list(shape)}: not OpenAI's {CLIP[encoder][0]}")
            extra = sorted(k for k in visual if k not in want)
            if extra:
                raise ExportError(f"{path}: unexpected key {extra[0]}: not OpenAI's {CLIP[encoder][0]}")
            return {k: _read_tensor(z, root, visual[k], k, path) for k in want}
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001  (any other damage: a bad zip, pickle, tensor record; named as such)
        raise ExportError(f"{path}: unreadable as OpenAI's {CLIP[encoder][0]} ({type(e).__name__}: {e}): "
                          "a truncated or damaged file?")


def seeded_visual(encoder: str, seed: int) -> Dict[str, Tensor]:
    """Random image-tower weights in OpenAI's layout, rounded to fp16 as its files hold them."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for k, shape in expected_shapes(encoder).items():
        if k.endswith("ln_1.weight") or k.endswith("ln_2.weight") or k.endswith("ln_pre.weight") or \
                k.endswith("ln_post.weight"):
            v = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif len(shape) == 1:
            v = 0.02 * torch.randn(shape, generator=g)
        else:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            v = torch.randn(shape, generator=g) * (1.0 / fan_in) ** 0.5
        sd[k] = v.to(torch.float16).to(torch.float32)
    return sd


# --- the network ---------------------------------------------------------------------------------

class QuickGELU(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(OrderedDict([("c_fc", nn.Linear(width, width * 4)), ("gelu", QuickGELU()),
                                              ("c_proj", nn.Linear(width * 4, width))]))
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x: Tensor) -> Tensor:
        y = self.ln_1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int):
        super().__init__()
        self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads) for _ in range(layers)])

    def forward(self, x: Tensor) -> Tensor:
        return self.resblocks(x)


class ClipImageFeatures(nn.Module):
    """OpenAI's VisionTransformer behind the protocol's input normalization: [N,3,S,S] RGB 0..255
    -> [N, embedding]."""

    def __init__(self, encoder: str, protocol: str):
        super().__init__()
        _, size, w, layers, patch, embed = CLIP[encoder]
        div, mean, std = PROTOCOLS[protocol][:3]
        self.register_buffer("input_div", torch.tensor(div, dtype=torch.float32))
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32).reshape(1, 3, 1, 1))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32).reshape(1, 3, 1, 1))
        grid = size // patch
        self.conv1 = nn.Conv2d(3, w, kernel_size=patch, stride=patch, bias=False)
        self.class_embedding = nn.Parameter(torch.zeros(w))
        self.positional_embedding = nn.Parameter(torch.zeros(grid * grid + 1, w))
        self.ln_pre = nn.LayerNorm(w)
        self.transformer = Transformer(w, layers, w // 64)
        self.ln_post = nn.LayerNorm(w)
        self.proj = nn.Parameter(torch.zeros(w, embed))
        self.l2_normalize = protocol in NORMALIZED

    def load_visual(self, sd: Dict[str, Tensor]) -> None:
        own = {k[len("visual."):]: v for k, v in sd.items()}
        own.update({k: getattr(self, k) for k in ("input_div", "input_mean", "input_std")})
        self.load_state_dict(own, strict=True)

    def forward(self, x: Tensor) -> Tensor:
        x = (x / self.input_div - self.input_mean) / self.input_std
        x = self.conv1(x)
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
        cls = self.class_embedding + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype, device=x.device)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding
        x = self.ln_pre(x).permute(1, 0, 2)
        x = self.transformer(x).permute(1, 0, 2)
        x = self.ln_post(x[:, 0, :]) @ self.proj
        if self.l2_normalize:
            x = x / x.norm(p=2, dim=-1, keepdim=True)
        return x
