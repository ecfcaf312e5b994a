"""Weight sources: a torchvision-layout state_dict (--weights), a GraphDef's Const nodes
(--from-tf) and deterministic synthetic weights (--seed)."""

import math
import os
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from .arch import backbone_template, make_features
from .common import ARCH_INFO, CLASSIFIER_BUFFERS, FEATURE_DIM, INPUT_SIZE, NORM_BUFFERS, ExportError, fmt_list, fmt_shape

def check_and_prepare_state_dict(sd, arch: str, path: str) -> Dict[str, Tensor]:
    """Validate a torchvision-layout state_dict; return the backbone tensors.

    AuxLogits.* is ignored; fc.weight/fc.bias (the classifier) are optional, but if
    present must be [K,2048]/[K] and are returned as float32 under their keys;
    *.num_batches_tracked is optional; anything else must match the architecture's
    keys and shapes exactly."""
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict):
        raise ExportError(f"{path}: expected a state_dict (dict of tensors), got {type(sd).__name__}")
    if not sd:
        raise ExportError(f"{path}: the state_dict is empty")
    non_str = [repr(k) for k in sd if not isinstance(k, str)]
    if non_str:
        raise ExportError(f"{path}: state_dict has non-string keys: {fmt_list(non_str)}")
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
            bad_shape.append(f"{k}: expected {fmt_shape(template[k])}, got {fmt_shape(v.shape)}")
            continue
        out[k] = v.detach().to(torch.float32).contiguous()
    missing = [k for k in template if k not in sd and not k.endswith("num_batches_tracked")]
    if fc_w is not None or fc_b is not None:
        ok = (torch.is_tensor(fc_w) and torch.is_tensor(fc_b) and fc_w.dim() == 2
              and fc_w.shape[1] == FEATURE_DIM and fc_b.dim() == 1 and fc_b.shape[0] == fc_w.shape[0])
        if not ok:
            ws = fmt_shape(fc_w.shape) if torch.is_tensor(fc_w) else repr(type(fc_w).__name__)
            bs = fmt_shape(fc_b.shape) if torch.is_tensor(fc_b) else repr(type(fc_b).__name__)
            bad_shape.append(f"fc.weight/fc.bias: expected [K,{FEATURE_DIM}]/[K], got {ws}/{bs}")
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing key(s): {fmt_list(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected key(s): {fmt_list(unexpected)}")
    if bad_shape:
        problems.append(f"{len(bad_shape)} wrong shape(s): {fmt_list(bad_shape)}")
    if bad_type:
        problems.append(f"{len(bad_type)} non-float/non-tensor value(s): {fmt_list(bad_type)}")
    if problems:
        raise ExportError(f"{path}: not a {arch} Inception-v3 state_dict (torchvision key layout): "
                          + "; ".join(problems))
    if fc_w is not None:
        out["fc.weight"] = fc_w.detach().to(torch.float32).contiguous()
        out["fc.bias"] = fc_b.detach().to(torch.float32).contiguous()
    for k in template:
        if k.endswith("num_batches_tracked") and k not in out:
            out[k] = torch.tensor(0, dtype=torch.long)
    bad_vals = [k for k, v in out.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad_vals:
        raise ExportError(f"{path}: non-finite values in {fmt_list(bad_vals)}")
    neg_var = [k for k, v in out.items() if k.endswith("running_var") and (v < 0).any()]
    if neg_var:
        raise ExportError(f"{path}: negative BN variance in {fmt_list(neg_var)}")
    return out


def is_torchscript_archive(path: str) -> bool:
    """Whether `path` is a TorchScript archive (a zip with code/ and constants.pkl), not a state_dict."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    return any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names)


def _canonical_scope(scope: str) -> str:
    """A layer's scope with '/' and '.' alike: the TF graph's "mixed_9/tower/mixed/conv" and NVIDIA's
    TorchScript "mixed_9.tower_mixed_conv" are one layer."""
    return scope.replace("/", "_").replace(".", "_")


# NVIDIA's per-layer parameters (one module per conv: the convolution, then the TF graph's batch
# norm, which has a shift and no scale, eps 0.001) -> torchvision's keys
_NVIDIA_LEAVES = {"weight": "conv.weight", "beta": "bn.bias", "mean": "bn.running_mean", "var": "bn.running_var"}


def nvidia_state_dict(sd: Dict[str, Tensor], path: str) -> Dict[str, Tensor]:
    """The state_dict of NVIDIA's inception-2015-12-05.pt (StyleGAN2-ADA's metrics network, which
    clean-fid loads from /tmp) in torchvision's key layout: its layers are the TF graph's scopes
    under `layers.` (a tower's convs nested, `mixed.tower.conv_1`, an E block's flat,
    `mixed_9.tower_mixed_conv`), each with `weight`, `beta`, `mean` and `var` (no scale: 1 here),
    its classifier `output.*`. Keys it does not know are passed on unchanged, for the layout check
    to name them."""
    by_scope = {_canonical_scope(tf): tv for tv, tf in tf_scope_map().items()}
    if len(by_scope) != len(tf_scope_map()):
        raise AssertionError("internal: two TF scopes share a canonical name")
    out: Dict[str, Tensor] = {}
    for k, v in sd.items():
        if k in ("output.weight", "output.bias"):
            out["fc." + k.split(".")[1]] = v
            continue
        scope, _, leaf = k.rpartition(".")            # layers.<scope>, weight | beta | mean | var
        tv = by_scope.get(_canonical_scope(scope[len("layers."):])) if scope.startswith("layers.") else None
        if tv is None or leaf not in _NVIDIA_LEAVES:
            out[k] = v
            continue
        out[f"{tv}.{_NVIDIA_LEAVES[leaf]}"] = v
    for tv in tf_scope_map():
        if f"{tv}.bn.running_var" in out and f"{tv}.bn.weight" not in out:
            out[f"{tv}.bn.weight"] = torch.ones_like(out[f"{tv}.bn.running_var"])
    return out


def load_weights_file(path: str, arch: str) -> Dict[str, Tensor]:
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    if is_torchscript_archive(path):  # NVIDIA's inception-2015-12-05.pt (clean-fid's)
        try:
            sd = torch.jit.load(path, map_location="cpu").state_dict()
        except Exception as e:  # noqa: BLE001 - report any load failure
            raise ExportError(f"{path}: cannot load this TorchScript archive ({type(e).__name__}: {e})")
        return check_and_prepare_state_dict(nvidia_state_dict(dict(sd), path), arch, path)
    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:  # older torch without weights_only
            obj = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - report any load failure
        raise ExportError(f"{path}: cannot read as a PyTorch state_dict ({type(e).__name__}: {e})")
    return check_and_prepare_state_dict(obj, arch, path)


# --from-tf

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
    import numpy as np  # --from-tf only: a bare PyTorch exports synthetic weights without NumPy

    from .protobuf import TFGraphConsts

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
            bad.append(f"{tf_name}: shape {fmt_shape(arr.shape)} maps to {key} "
                       f"which needs {fmt_shape(want)}")
            return
        sd[key] = torch.from_numpy(np.ascontiguousarray(arr))

    for tprefix in convs:
        scope = scopes[tprefix]
        w = get(f"{scope}/conv2d_params")
        if w is not None:
            if w.ndim != 4:
                bad.append(f"{scope}/conv2d_params: expected a 4-d HWIO kernel, got {fmt_shape(w.shape)}")
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
    # The classifier after pool_3 (softmax/logits = pool_3 x softmax/weights + softmax/biases):
    # returned as fc.weight [K,2048] / fc.bias [K] when present (no bias node: zeros).
    if g.has("softmax/weights"):
        try:
            fw = g.tensor("softmax/weights")
            if fw.ndim != 2 or fw.shape[0] != FEATURE_DIM:
                bad.append(f"softmax/weights: expected [{FEATURE_DIM},K], got {fmt_shape(fw.shape)}")
            else:
                fb = g.tensor("softmax/biases") if g.has("softmax/biases") else np.zeros(fw.shape[1], np.float32)
                if tuple(fb.shape) != (fw.shape[1],):
                    bad.append(f"softmax/biases: expected [{fw.shape[1]}], got {fmt_shape(fb.shape)}")
                else:
                    sd["fc.weight"] = torch.from_numpy(np.ascontiguousarray(fw.T, dtype=np.float32))
                    sd["fc.bias"] = torch.from_numpy(np.ascontiguousarray(fb, dtype=np.float32))
        except ValueError as e:
            bad.append(str(e))
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing Const node(s): {fmt_list(missing)}")
    if bad:
        problems.append(f"{len(bad)} bad tensor(s): {fmt_list(bad, 4)}")
    if problems:
        raise ExportError(f"{path}: not an inception-2015-12-05 GraphDef: " + "; ".join(problems))
    bad_vals = [k for k, v in sd.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad_vals:
        raise ExportError(f"{path}: non-finite values in {fmt_list(bad_vals)}")
    return sd, eps


# --seed: synthetic weights with O(1) activations

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
          if k not in NORM_BUFFERS and k not in CLASSIFIER_BUFFERS}
    for k in sd:
        if k.endswith("num_batches_tracked"):
            sd[k] = torch.tensor(0, dtype=torch.long)
    return sd


def seeded_classifier(arch: str, seed: int) -> Tuple[Tensor, Tensor]:
    """The synthetic classifier of --seed N: weight [K,2048] ~ N(0, 0.05^2), bias ~ N(0, 0.1^2)
    (K: the architecture's classes), from a generator of its own, so that the backbone's weights
    (and their sha256) are those of earlier exports of the same seed."""
    k = ARCH_INFO[arch]["num_classes"]
    g = torch.Generator().manual_seed((seed + 0x5EEDC1A5) % 2 ** 63)
    return torch.randn(k, FEATURE_DIM, generator=g) * 0.05, torch.randn(k, generator=g) * 0.1
