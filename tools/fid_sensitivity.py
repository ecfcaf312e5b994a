#!/usr/bin/env python3
"""What preprocessing and precision choices do to FID (issue #28).

Vectorizes one image set under the exact default and under each variant (every one a flag of
`vecbench vectorize`), then reports FID(default, variant) with `vecbench stats` and `vecbench fid`,
next to the set's own sampling noise: FID between its two halves under the default. A variant's
FID far below that noise floor cannot move a published FID; one near or above it can.

  /usr/bin/python3 tools/fid_sensitivity.py IMAGES --work DIR [--model M.pt] [--vecbench BIN]
      [--json FILE] [--calibration-images PHOTOS] [--presets [--preset-weights-seed 0]] [--only A,B]
      [--allow-dirty]

IMAGES: a folder or list of at least 4,098 images (two halves of more than 2,048 each; crops
from tools/make_photo_crops.py). DIR keeps one store per variant, so a rerun resumes. The report
names the model: with vecbench's synthetic weights the FID values are those of this network,
not of Inception's trained features; pass --model with an export of the real weights
(tools/export_inception.py --from-tf) to measure them. With --calibration-images (photos other
than IMAGES), the int8 route joins the variants: `vecbench calibrate` on those photos first.
Needs Debian's numpy (python3-numpy) to read the stores' shards. The JSON records the binary's commit
(a build from a dirty tree is refused unless --allow-dirty or VECBENCH_ALLOW_DIRTY=1, and then says
dirty) and the image set's SHA-256 (tools/provenance.py; the pinned photo-crop set's is in
results/photo-crops/manifest.json).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from provenance import Refused, binary_record, image_set_record
import vecbench_store

# name, vectorize flags, what it changes
VARIANTS = [
    ("default", [], "exact JPEG decode (libjpeg accurate IDCT), tf-legacy resize, oneDNN fp32"),
    ("decode-tf", ["--decode", "tf"], "TensorFlow's fast integer IDCT"),
    ("fast-decode", ["--fast-decode"], "large JPEGs decoded at 1/2, 1/4 or 1/8 DCT scale"),
    ("resize-bilinear", ["--resize", "bilinear"],
     "bilinear resize with half-pixel centres (2 taps, no antialiasing, as F.interpolate) instead of TF's legacy one"),
    ("bf16", ["--precision", "bf16"], "oneDNN bfloat16 activations and weights"),
    ("no-winograd", ["--no-winograd"], "oneDNN fp32, direct convolutions only"),
    ("torchscript", ["--engine", "torchscript"], "LibTorch runs the TorchScript module, fp32"),
]


# The FID tools' pipelines (vecbench's --like presets) on the same weights.
PRESETS = [
    ("pytorch-fid", "pytorch-fid's pipeline: x/255, bilinear resize with half-pixel centres in float, 2x-1"),
    ("torch-fidelity", "torch-fidelity's pipeline: TF1's bilinear resize in float, (x-128)/128 (the default's)"),
    ("clean-fid", "clean-fid's clean mode: PIL's bicubic (antialiased) on float channels, clipped, (x-128)/128"),
    ("clean-fid-legacy-tensorflow",
     "clean-fid's legacy_tensorflow mode: TF1's bilinear resize (grid_sample), (x-128)/128"),
]


def write_preset_weights(torch_home, seed):
    """The tf2015 weights of `seed` (export_inception.py --seed) plus an fc of 1008 classes, saved as
    pytorch-fid's and torch-fidelity's weights files under TORCH_HOME/hub/checkpoints, and as
    clean-fid's inception-2015-12-05.pt (the tests' stand-in of NVIDIA's TorchScript file,
    tests/py/nvidia_inception.py) in TORCH_HOME/nvidia, which $VECBENCH_MODELS then names."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from vecbench_export.weights import seeded_state_dict
    ckpt = os.path.join(torch_home, "hub", "checkpoints")
    os.makedirs(ckpt, exist_ok=True)
    sd = dict(seeded_state_dict("tf2015", seed))
    sd["fc.weight"] = torch.zeros(1008, 2048)
    sd["fc.bias"] = torch.zeros(1008)
    for name in ("pt_inception-2015-12-05-6726825d.pth", "weights-inception-2015-12-05-6726825d.pth"):
        if not os.path.exists(os.path.join(ckpt, name)):
            torch.save(sd, os.path.join(ckpt, name))
    nvidia = os.path.join(torch_home, "nvidia")
    if not os.path.exists(os.path.join(nvidia, "inception-2015-12-05.pt")):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
        from nvidia_inception import save_nvidia_inception
        os.makedirs(nvidia, exist_ok=True)
        save_nvidia_inception(sd, os.path.join(nvidia, "inception-2015-12-05.pt"))
    os.environ["VECBENCH_MODELS"] = nvidia
    return torch_home


def run(cmd, check=True):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=check, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def vector_change(ref, got):
    """Median and max over images of |got - ref|_2 / |ref|_2."""
    rel = [np.linalg.norm(got[k] - v) / max(np.linalg.norm(v), 1e-30) for k, v in ref.items() if k in got]
    return float(np.median(rel)), float(np.max(rel))


def fid(vb, a, b, out_json):
    run([vb, "fid", a, b, "--allow-mismatch", "--allow-synthetic-weights", "--json", out_json])
    with open(out_json) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("images")
    ap.add_argument("--work", required=True, help="folder for the stores and stats (resumable)")
    ap.add_argument("--model", help="TorchScript model (default: vecbench's default model)")
    ap.add_argument("--vecbench", default="build/vecbench")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--only", help="comma-separated variant names to run (the default always runs)")
    ap.add_argument("--presets", action="store_true",
                    help="also the FID tools' pipelines (--like pytorch-fid, torch-fidelity, clean-fid, "
                         "clean-fid-legacy-tensorflow) on the weights files found where they look "
                         "($VECBENCH_MODELS, $TORCH_HOME/hub/checkpoints, /tmp)")
    ap.add_argument("--preset-weights-seed", type=int,
                    help="with --presets: write the synthetic weights of this seed (0: the default model's) as both "
                         "tools' weights files into WORK/torch and use them, so that the presets run the same "
                         "weights as the default")
    ap.add_argument("--calibration-images",
                    help="photos (not IMAGES) to calibrate the int8 route on; without it int8 is left out")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="run a binary built from a dirty tree (refused otherwise; the JSON says so)")
    a = ap.parse_args()
    try:
        binary = binary_record(a.vecbench, a.allow_dirty or None)
    except Refused as e:
        sys.exit(f"fid_sensitivity: refused: {e}")
    os.makedirs(a.work, exist_ok=True)
    model = ["--model", a.model] if a.model else []
    out = {"images": a.images, "image_set": image_set_record(a.images), "binary": binary,
           "model": a.model or "default", "variants": []}
    variants = list(VARIANTS)
    preset = set()
    if a.presets:
        if a.preset_weights_seed is not None:
            os.environ["TORCH_HOME"] = write_preset_weights(os.path.join(a.work, "torch"), a.preset_weights_seed)
            out["preset_weights"] = f"synthetic, seed {a.preset_weights_seed} (the default model's weights when 0)"
        for tool, what in PRESETS:
            variants.append(("like-" + tool, ["--like", tool], what))
            preset.add("like-" + tool)
    if a.calibration_images:
        cal = os.path.join(a.work, "int8-calibration.json")
        run([a.vecbench, "calibrate", "--images", a.calibration_images, "--out", cal] + model)
        with open(cal) as f:
            c = json.load(f)
        out["int8_calibration"] = {"images": a.calibration_images, "count": c["images"], "method": c["method"]}
        variants.append(("int8", ["--precision", "int8", "--calibration", cal],
                         "oneDNN int8 (u8 activations, s8 weights per output channel), calibrated on %d other photos"
                         % c["images"]))
    if a.only:
        keep = set(a.only.split(",")) | {"default"}
        variants = [v for v in variants if v[0] in keep]
    vectors = {}
    for name, flags, what in variants:
        store = os.path.join(a.work, name)
        r = run([a.vecbench, "vectorize", "--images", a.images, "--out", store, "--format", "shards", "--quiet"]
                + ([] if name in preset else model) + flags, check=False)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
            out["variants"].append({"name": name, "flags": flags, "what": what, "skipped": why})
            continue
        stats = os.path.join(a.work, name + ".npz")
        run([a.vecbench, "stats", store, "--out", stats, "--allow-synthetic-weights"])
        vectors[name] = vecbench_store.store_vectors(store, np.float64)
        v = {"name": name, "flags": flags, "what": what, "n": len(vectors[name])}
        if name != "default":
            v.update(fid(a.vecbench, os.path.join(a.work, "default.npz"), stats, os.path.join(a.work, name + ".json")))
            v["vector_rel_l2_median"], v["vector_rel_l2_max"] = vector_change(vectors["default"], vectors[name])
        out["variants"].append(v)
        vectors = {"default": vectors["default"]}  # one variant's vectors at a time besides the default
    ref = vectors["default"]
    keys = sorted(ref)
    half = len(keys) // 2
    for i, part in enumerate((keys[:half], keys[half:])):
        np.save(os.path.join(a.work, f"half{i}.npy"), np.stack([ref[k] for k in part]).astype(np.float32))
        run([a.vecbench, "stats", os.path.join(a.work, f"half{i}.npy"), "--out", os.path.join(a.work, f"half{i}.npz"),
             "--allow-synthetic-weights"])
    out["noise_floor"] = fid(a.vecbench, os.path.join(a.work, "half0.npz"), os.path.join(a.work, "half1.npz"),
                             os.path.join(a.work, "halves.json"))
    out["noise_floor"]["what"] = f"FID between the default's first {half} and last {len(keys) - half} images (sorted names)"
    text = json.dumps(out, indent=2)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
