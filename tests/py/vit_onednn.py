#!/usr/bin/env python3
"""The oneDNN engine's transformer route (issue #66): DINOv2's and CLIP's vision transformers as
vecbench's own oneDNN network (`--engine onednn`, the default CPU route for them) against the
LibTorch route (`--engine torchscript`, the exported TorchScript module) on real photos.

For each encoder (random weights in each checkpoint's format, exported by tools/export_encoder.py):
- every vector within 1e-5 of the LibTorch route's, relative to its largest element;
- the route's vectors the same bytes at batch 1 and at a batch that leaves a short last batch on two
  replicas; in the small set also with two threads on one replica (sequential strategy) and on the
  default route (which must be the onednn engine for these exports);
- the `small` set: DINOv2 ViT-S/14 (dgm-eval's protocol), CLIP ViT-B/32 (torch-fidelity's), and a
  two-block ViT-g/14 of width 384 (the SwiGLU feed-forward, as the hub's ViT-g/14; the real one is
  1.1 billion parameters); and the AVX2 route seen through a masked CPUID (tools/cpuid_mask.c:
  oneDNN says AVX2 and runs no AVX-512 kernel, the vectors within 1e-5 of LibTorch's) when ctest
  passes VECBENCH_CPUID_MASK;
- the `large` set: DINOv2 ViT-L/14 at 224 (dgm-eval's) and CLIP ViT-L/14@336px (CMMD's protocol:
  the embedding L2-normalized), on fewer photos.

VECBENCH_VIT_SET=small|large picks the set (ctest runs both as py.vit_onednn.small, every test, and
py.vit_onednn.large, VitOnednn.test_each_encoder alone).
Run by ctest with Debian's Python (torch 1.13 exports the modules).
"""
import glob
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, HERE)
import ctest_unittest  # noqa: E402

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")
MASK = os.environ.get("VECBENCH_CPUID_MASK", "")
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"
SET = os.environ.get("VECBENCH_VIT_SET", "small")
# name: (encoder, protocol, photos)
CASES = {
    "small": {"dinov2-vit-s-14": ("dinov2-vit-s-14", "dgm-eval", 7), "clip-vit-b-32": ("clip-vit-b-32", "torch-fidelity", 7),
              "vit-g-swiglu": ("dinov2-vit-g-14", "dgm-eval", 5)},
    "large": {"dinov2-vit-l-14": ("dinov2-vit-l-14", "dgm-eval", 3),
              "clip-vit-l-14-336px": ("clip-vit-l-14-336px", "cmmd", 3)},
}[SET]
TOL = 1e-5

# A ViT-g/14 of two blocks of width 384 (6 heads): the hub's ViT-g/14 layout (SwiGLU) at a size a test can run.
SMALL_G = r'''
import sys
sys.path.insert(0, sys.argv[1])
from vecbench_export import dinov2, encoders
dinov2.DINOV2["dinov2-vit-g-14"] = ("dinov2_vitg14", 384, 2, 6, "swiglu")
sys.exit(encoders.main(["--encoder", "dinov2-vit-g-14", "--protocol", "dgm-eval", "--seed", "4", "--out", sys.argv[2]]))
'''


def vectors(store):
    """{file name: its vector} of a store of .npy outputs."""
    return {os.path.relpath(f, store): np.load(f) for f in glob.glob(os.path.join(store, "**", "*.npy"), recursive=True)}


class VitOnednn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
        cls.lists = {}
        for n in sorted({c[2] for c in CASES.values()}):
            path = os.path.join(t, f"photos{n}.txt")
            with open(path, "w") as f:
                f.write("".join(os.path.join(PHOTOS, p) + "\n" for p in photos[:n]))
            cls.lists[n] = path
        cls.models = {}
        for name, (enc, protocol, _) in CASES.items():
            out = os.path.join(t, name + ".pt")
            if name == "vit-g-swiglu":
                cmd = [sys.executable, "-c", SMALL_G, TOOLS, out]
            else:
                cmd = [sys.executable, os.path.join(TOOLS, "export_encoder.py"), "--encoder", enc, "--protocol",
                       protocol, "--seed", "5", "--out", out]
            subprocess.run(cmd, check=True, capture_output=True)
            cls.models[name] = out
        cls.env = dict(os.environ, VECBENCH_CACHE=os.path.join(t, "cache"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def vectorize(self, name, out, *route, env=None):
        n = CASES[name][2]
        r = subprocess.run([EXE, "vectorize", "--model", self.models[name], "--images", self.lists[n], "--out",
                            os.path.join(self.tmp.name, out), "--format", "npy", "--progress", "0", "--no-profile",
                            *route], capture_output=True, text=True, env=env or self.env)
        self.assertEqual(r.returncode, 0, f"{name} {route}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        got = vectors(os.path.join(self.tmp.name, out))
        self.assertEqual(len(got), n, f"{name} {route}")
        return got, r.stdout + r.stderr

    def assert_close(self, got, ref, what):
        self.assertEqual(sorted(got), sorted(ref), what)
        for k in ref:
            self.assertEqual(got[k].shape, ref[k].shape, f"{what}: {k}")
            rel = float(np.abs(got[k] - ref[k]).max() / np.abs(ref[k]).max())
            self.assertLessEqual(rel, TOL, f"{what}: {k}: {rel:.3g} relative")

    def check(self, name):
        ref, _ = self.vectorize(name, name + "-ts", "--engine", "torchscript", "--batch", "2")
        one, _ = self.vectorize(name, name + "-b1", "--engine", "onednn", "--batch", "1", "--devices", "cpu")
        self.assert_close(one, ref, f"{name}: onednn vs LibTorch")
        if name == "clip-vit-l-14-336px":  # CMMD's protocol: unit vectors
            for k, v in one.items():
                self.assertAlmostEqual(float(np.linalg.norm(v.astype(np.float64))), 1.0, places=5, msg=k)
        routes = [["--engine", "onednn", "--batch", "2", "--devices", "cpu/2"]]  # a short last batch
        if SET == "small":
            routes += [["--engine", "onednn", "--batch", "4", "--devices", "cpu", "--threads", "2", "--strategy",
                        "sequential"],
                       ["--batch", "3", "--devices", "cpu"]]  # the default engine
        for i, route in enumerate(routes):
            got, log = self.vectorize(name, f"{name}-r{i}", *route)
            if "--engine" not in route:
                self.assertIn("engine onednn", log, "the default CPU route of a ViT export is the onednn engine")
            self.assertEqual(sorted(got), sorted(one))
            for k in one:
                self.assertEqual(got[k].tobytes(), one[k].tobytes(), f"{name} {route}: {k} differs from batch 1")

    def test_each_encoder(self):
        for name in CASES:
            with self.subTest(name):
                self.check(name)

    def test_avx2_route_through_a_masked_cpuid(self):
        if not MASK:
            raise AssertionError("VECBENCH_CPUID_MASK is not set: ctest passes tools/cpuid_mask.c's library")
        name = "dinov2-vit-s-14"
        env = dict(self.env, CPUID_MASK="avx2", LD_AUDIT=MASK, ONEDNN_VERBOSE="1")
        r = subprocess.run([EXE, "vectorize", "--model", self.models[name], "--images", self.lists[7], "--out",
                            os.path.join(self.tmp.name, "masked"), "--format", "npy", "--progress", "0",
                            "--engine", "onednn", "--devices", "cpu/2"], capture_output=True, text=True, env=env)
        log = r.stdout + r.stderr
        if r.returncode == 125 and "cannot fault CPUID" in log:
            self.skipTest("cannot fault CPUID here: " + log.strip().splitlines()[-1])
        self.assertEqual(r.returncode, 0, log[-3000:])
        self.assertIn("onednn_verbose,info,cpu,isa:Intel AVX2\n", log)
        self.assertNotIn("avx512", log, "an AVX-512 kernel ran under the mask")
        self.assertIn("matmul,gemm:jit", log)
        ref, _ = self.vectorize(name, "masked-ts", "--engine", "torchscript")
        self.assert_close(vectors(os.path.join(self.tmp.name, "masked")), ref, "masked AVX2 onednn vs LibTorch")


if __name__ == "__main__":
    ctest_unittest.main()
