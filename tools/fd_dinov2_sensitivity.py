#!/usr/bin/env python3
"""What each tool's DINOv2 protocol does to FD_DINOv2 (issue #62): the three protocols against each other.

Vectorizes one image set with one DINOv2 encoder under each tool's protocol (`vecbench vectorize
--like dgm-eval | edm2 | torch-fidelity --encoder E`: the same weights, the same decode; only the
resize to 224 and the scaling differ), then reports FD_DINOv2 between every two protocols' vectors
of the same images and each pair's vector change, next to the set's own sampling noise: the FD
between its two halves under dgm-eval's protocol. A difference far below that floor cannot move a
published figure; one near it can.

  /usr/bin/python3 tools/fd_dinov2_sensitivity.py IMAGES --work DIR --json FILE [--encoder dinov2-vit-s-14]
      [--vecbench build/vecbench] [--weights-seed 1] [--allow-dirty]

IMAGES: a folder or list of images (tools/make_photo_crops.py), more than twice the encoder's width
(384 for ViT-S/14, 1024 for ViT-L/14) so that each half's covariance has full rank. The weights:
the encoder's checkpoint in $TORCH_HOME when there is one (real weights), else random weights in
its format (--weights-seed), written into DIR/torch: then the values are those of a random
network, an upper bound on what the protocols do to the trained one (the JSON says which). The JSON
records the binary's commit (a dirty build refused unless --allow-dirty or VECBENCH_ALLOW_DIRTY=1,
and then said) and the image set's SHA-256 (tools/provenance.py)."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from provenance import Refused, binary_record, image_set_record
import vecbench_store

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOLS = ("dgm-eval", "edm2", "torch-fidelity")


def frechet(a, b):
    m1, m2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    w, v = np.linalg.eigh(s1)
    r1 = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    p = np.linalg.eigvalsh(r1 @ s2 @ r1)
    return float((m1 - m2) @ (m1 - m2) + np.trace(s1) + np.trace(s2) - 2 * np.sqrt(np.clip(p, 0, None)).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("images")
    ap.add_argument("--work", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--encoder", default="dinov2-vit-s-14")
    ap.add_argument("--vecbench", default=os.path.join(HERE, "..", "build", "vecbench"))
    ap.add_argument("--weights-seed", type=int, default=1)
    ap.add_argument("--allow-dirty", action="store_true", help="run a binary built from a dirty tree (said in the JSON)")
    a = ap.parse_args()
    try:
        binary = binary_record(a.vecbench, a.allow_dirty or None)
    except Refused as e:
        sys.exit(f"fd_dinov2_sensitivity: refused: {e}")
    sys.path.insert(0, HERE)
    from vecbench_export import dinov2
    env = dict(os.environ)
    name = dinov2.checkpoint_name(a.encoder)
    home = env.get("TORCH_HOME", os.path.expanduser("~/.cache/torch"))
    weights = "the checkpoint in " + home
    if not os.path.exists(os.path.join(home, "hub", "checkpoints", name)):
        import torch
        home = os.path.join(a.work, "torch")
        os.makedirs(os.path.join(home, "hub", "checkpoints"), exist_ok=True)
        path = os.path.join(home, "hub", "checkpoints", name)
        if not os.path.exists(path):
            torch.save(dinov2.seeded_checkpoint(a.encoder, a.weights_seed), path)
        weights = f"random weights (seed {a.weights_seed}) in the checkpoint's format: not DINOv2's trained features"
    env.update(TORCH_HOME=home, VECBENCH_CACHE=os.path.join(a.work, "cache"))
    vecs = {}
    for p in PROTOCOLS:
        store = os.path.join(a.work, p)
        subprocess.run([a.vecbench, "vectorize", "--images", a.images, "--out", store, "--like", p, "--encoder",
                        a.encoder, "--format", "npy", "--progress", "60"], env=env, check=True)
        vecs[p] = vecbench_store.store_vectors(store, np.float64)
    names = sorted(set.intersection(*(set(v) for v in vecs.values())))
    mats = {p: np.stack([vecs[p][n] for n in names]) for p in PROTOCOLS}
    half = len(names) // 2
    floor = frechet(mats["dgm-eval"][:half], mats["dgm-eval"][half:])
    rows = []
    for i, p in enumerate(PROTOCOLS):
        for q in PROTOCOLS[i + 1:]:
            rel = np.linalg.norm(mats[p] - mats[q], axis=1) / np.linalg.norm(mats[p], axis=1)
            fd = frechet(mats[p], mats[q])
            rows.append({"a": p, "b": q, "fd": fd, "percent_of_halves": 100 * fd / floor,
                         "vector_change_median": float(np.median(rel)), "vector_change_max": float(rel.max())})
    out = {"encoder": a.encoder, "images": len(names), "image_set": image_set_record(a.images), "binary": binary,
           "weights": weights, "halves_fd_dgm_eval": floor, "pairs": rows}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
