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
                     fc.* (any class count; optional) kept as the classifier;
                     or NVIDIA's TorchScript inception-2015-12-05.pt (clean-fid's,
                     StyleGAN2-ADA's): its layers' state_dict, the TF graph's
                     scopes under layers., each with weight, beta, mean and var
                     (BN without scale: ones), output.* the classifier.
  --from-tf FILE.pb  classify_image_graph_def.pb, read straight from the
                     protobuf wire format (no TensorFlow, no protobuf package).
                     Kernels HWIO -> OIHW; BN gamma is used only if present
                     and the <scope>/batchnorm node does not say
                     scale_after_normalization=false (else ones); the node's
                     variance_epsilon, if present, sets the BN eps.

--like TOOL (pytorch-fid | torch-fidelity | clean-fid | clean-fid-legacy-tensorflow with --weights,
tf with --from-tf; --arch tf2015) gives the module that tool's input normalization (pytorch-fid: x/255,
then 2x-1; the others: (x-128)/128)
and that tool's resize as resize_default (bilinear | tf-legacy | pil-bicubic), and records "like" in the
metadata: `vecbench vectorize/stats/fid --like TOOL` import the tool's weights file this way.

The saved file carries an extra file "vecbench_meta.json" with keys
format_version (1), arch, weight_source ("seed:N" | "weights:<basename>" |
"from-tf:<basename>"), weight_sha256 (of the source file; for --seed, of the
float32 bytes of the floating state_dict tensors in sorted key order),
input_layout, input_size, normalization, feature_dim, resize_default
("tf-legacy" | "bilinear"), torch_version, created_utc, and, when the
weights have a classifier after pool_3 (a state_dict's fc.*, the graph's
softmax/weights and softmax/biases; --seed: a synthetic one), "classifier":
{classes K, weight, bias (the extra files' names), sha256 (of the two files'
bytes)}. The extra files vecbench_fc_weight.npy (float32 [K,2048]) and
vecbench_fc_bias.npy ([K]) hold it for readers without LibTorch (`vecbench
metrics --isc`); the module holds it too, as the buffers classifier_weight and
classifier_bias, used by its methods logits_unbiased(x) (pool_3 x weight^T:
torch-fidelity's Inception Score input) and logits(x) (plus the bias).

The module's state_dict has torchvision's backbone keys (Conv2d_1a_3x3.* ..
Mixed_7c.*, no fc, no AuxLogits) plus the buffers input_div, input_mean,
input_std (forward computes (x / input_div - input_mean) / input_std) and
classifier_weight, classifier_bias ([0,2048] and [0] when there is none).
Synthetic (--seed) models amplify input perturbations roughly 100x, so
float32 round-off alone gives ~1e-5 relative feature differences between
otherwise equivalent computations.
"""

import argparse
import datetime
import hashlib
import json
import os
import time
from typing import Dict

import torch

from .arch import make_features, probe_input
from .common import (ARCH_INFO, CLASSIFIER_BUFFERS, CLASSIFIER_FILES, FEATURE_DIM, INPUT_SIZE, LIKE_INFO, LIKE_SOURCE,
                     META_FORMAT_VERSION, META_NAME, NORM_BUFFERS, PROG, ExportError, file_sha256, npy_f32, refuse,
                     save_module, state_dict_sha256)
from .fused import fuse_prepacked
from .weights import load_from_tf, load_weights_file, seeded_classifier, seeded_state_dict


def export(args) -> str:
    t0 = time.time()
    arch = args.arch
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise ExportError(f"{args.out}: output directory {out_dir} does not exist")
    bn_eps: Dict[str, float] = {}
    like = getattr(args, "like", None)
    if like and (arch != "tf2015" or getattr(args, LIKE_SOURCE[like]) is None):
        flag = "--" + LIKE_SOURCE[like].replace("_", "-")
        raise ExportError(f"--like {like}: the tool's network is tf2015 with its weights file: "
                          f"pass --arch tf2015 {flag} FILE")
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
        sd["fc.weight"], sd["fc.bias"] = seeded_classifier(arch, seed)
    fc = (sd.pop("fc.weight", None), sd.pop("fc.bias", None))

    model = make_features(arch, like)
    res = model.load_state_dict(sd, strict=False)
    if res.unexpected_keys or set(res.missing_keys) - set(NORM_BUFFERS) - set(CLASSIFIER_BUFFERS):
        raise AssertionError(f"internal: state_dict mismatch {res}")
    if fc[0] is not None:
        model.set_classifier(*fc)
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
    if fc[0] is not None:
        with torch.no_grad():
            lg = scripted.logits_unbiased(x)
            want = torch.mm(ref.double(), fc[0].double().t())
        if float((lg.double() - want).norm() / want.norm().clamp_min(1e-30)) > 1e-4:
            raise AssertionError("internal: the scripted model's logits differ from pool_3 x fc.weight")
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
        "normalization": (LIKE_INFO[like] if like else ARCH_INFO[arch])["normalization"],
        "feature_dim": FEATURE_DIM,
        "resize_default": (LIKE_INFO[like] if like else ARCH_INFO[arch])["resize_default"],
        "torch_version": torch.__version__,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fuse": fuse,
        # a prepacked model must not be frozen/optimized after loading (freezing would constant-fold
        # its lazily built contexts away); it is already folded and runs on CPU only
        "optimize_after_load": fuse == "none",
        "devices": "cpu" if fuse == "prepacked" else "any",
    }
    if like:
        meta["like"] = like
    extra = {META_NAME: None}
    if fc[0] is not None:
        w, b = npy_f32(fc[0]), npy_f32(fc[1])
        extra.update(zip(CLASSIFIER_FILES, (w, b)))
        meta["classifier"] = {"classes": int(fc[0].shape[0]), "weight": CLASSIFIER_FILES[0],
                              "bias": CLASSIFIER_FILES[1], "sha256": hashlib.sha256(w + b).hexdigest()}
    extra[META_NAME] = json.dumps(meta, sort_keys=True)
    out = args.out
    save_module(scripted, out, extra)
    return (f"{PROG}: wrote {out} arch={arch} source={source} sha256={sha[:16]} "
            f"probe_feature_mean={fmean:.4g} ({time.time() - t0:.1f}s)")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    p.add_argument("--error-file", metavar="FILE", help="on a refusal, also write its reason here (vecbench reads it)")
    p.add_argument("--arch", choices=sorted(ARCH_INFO), default="tf2015")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=int, help="synthetic weights from this seed (default 0)")
    src.add_argument("--weights", metavar="FILE", help="PyTorch state_dict, torchvision key layout (or NVIDIA's inception-2015-12-05.pt)")
    src.add_argument("--from-tf", metavar="GRAPH.pb", dest="from_tf",
                     help="classify_image_graph_def.pb (inception-2015-12-05)")
    p.add_argument("--fuse", choices=["none", "prepacked"], default="none",
                   help="prepacked: conv+BN+ReLU as oneDNN prepacked convolutions with a fused ReLU, "
                        "activations in channels_last (CPU only, faster; see results/PERFORMANCE.md)")
    p.add_argument("--like", choices=sorted(LIKE_INFO),
                   help="the input normalization and resize of this FID tool (with --arch tf2015 --weights)")
    args = p.parse_args(argv)
    if args.seed is not None and not 0 <= args.seed < 2 ** 63:
        p.error("--seed must be in 0 .. 2^63-1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        print(export(args), flush=True)
    except ExportError as e:
        return refuse(PROG, e, args.error_file)
    return 0
