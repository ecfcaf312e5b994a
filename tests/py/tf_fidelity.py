#!/usr/bin/env python3
"""TensorFlow as the fidelity reference: the seed's graph (tools/make_tf_graph.py) run by
TensorFlow beside vecbench on real photos, vecbench's model imported from that graph
(tools/export_inception.py --from-tf).

1. Same pixels: each photo decoded by PIL and converted as the seed does (convert('RGB'): gray
   replicated, alpha dropped) is fed to TF's `DecodeJpeg:0` and, written losslessly as PNG, to
   vecbench; pool_3 must agree within relative L2 1e-5 for the TorchScript engine and 1e-4
   for the fused model and the oneDNN engine (docs/engines.md); bf16 within 6% where the CPU
   has AVX-512 BF16 (skipped with the reason elsewhere). The graph's weights are make_tf_graph's
   --seed ones (fan-in scaled kernels, near-identity batch norm): TF and LibTorch then differ by
   ~3e-7 on the same resized input, so 1e-5 catches a wrong resize or pool branch; the default
   model's calibrated synthetic weights amplify float32 round-off ~30x (4e-6..2e-5 between the
   two frameworks on TF's own resized input), too close to 1e-5 to tell a bug from round-off.
2. --weights: the default model's state_dict -> make_tf_graph.py --weights -> --from-tf gives
   back the same tensors, exactly.
3. TF's own decoder: the JPEG bytes fed to `DecodeJpeg/contents:0` against vecbench on the same
   files; records how far vecbench's decode (libjpeg-turbo, accurate integer DCT, as PIL) is from
   TF's default (the fast integer DCT), and checks that TF with the accurate DCT decodes exactly
   PIL's pixels, so that the DCT method is all that differs; `vecbench vectorize --decode tf`
   (libjpeg's fast IDCT) must then match TF on the bytes within 1e-5.

Run by ctest (environment VECBENCH_EXE, VECBENCH_DEFAULT_MODEL, VECBENCH_PYTHON: the Python
with torch for the export tool); it moves to the Python of tools/peers_setup.sh's TensorFlow venv
(VECBENCH_TF_PYTHON overrides); without TensorFlow it says so and exits 77 (ctest: skipped)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SKIP = 77
TF_PYTHON = os.environ.get("VECBENCH_TF_PYTHON",
                           os.path.expanduser("~/.cache/vecbench/venvs/tensorflow/bin/python"))
try:
    import tensorflow as tf
    from PIL import Image
except ImportError as e:
    if os.path.isfile(TF_PYTHON) and sys.executable != TF_PYTHON:
        os.execv(TF_PYTHON, [TF_PYTHON] + sys.argv)  # the venv of tools/peers_setup.sh tensorflow
    print(f"tf_fidelity: skipped: TensorFlow is not installed for {sys.executable} ({e}) and there is no "
          f"{TF_PYTHON}; tools/peers_setup.sh tensorflow installs it")
    sys.exit(SKIP)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PHOTOS_DIR = "/usr/share/doc/opencv-doc/examples/data"
# RGB JPEGs of several sizes, a gray JPEG, an RGBA PNG, a gray PNG
PHOTOS = ["fruits.jpg", "baboon.jpg", "HappyFish.jpg", "messi5.jpg", "left01.jpg", "chicky_512.png", "box.png"]
JPEGS = [p for p in PHOTOS if p.endswith(".jpg")]
VECBENCH = os.environ.get("VECBENCH_EXE", "")
MODEL = os.environ.get("VECBENCH_DEFAULT_MODEL", "")
TORCH_PY = os.environ.get("VECBENCH_PYTHON", "/usr/bin/python3")
TOL_TS = 1e-5
TOL_FP32 = 1e-4
TOL_BF16 = 0.06
# A mistake in the resize or a pool branch moves features by far more than this (see docs/engines.md).
v1 = tf.compat.v1


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def vectorize(images, out, model, *extra):
    """vecbench's features per input file name, read back through the manifest."""
    run([VECBENCH, "vectorize", "--images", images, "--out", out, "--model", model, "--format", "npy",
         "--quiet", "--no-resume", *extra])
    feats = {}
    with open(os.path.join(out, "manifest.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m["status"] != "ok":
                raise AssertionError(f"vecbench failed on {m['input']}: {m.get('error')}")
            feats[os.path.basename(m["input"])] = np.load(os.path.join(out, m["output"]))
    return feats


class TFFidelity(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not (VECBENCH and MODEL and os.path.isfile(MODEL)):
            raise unittest.SkipTest("needs VECBENCH_EXE and VECBENCH_DEFAULT_MODEL (run through ctest)")
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.pb = os.path.join(t, "classify_image_graph_def.pb")
        run([sys.executable, f"{REPO}/tools/make_tf_graph.py", "--seed", "1", "--out", cls.pb])
        cls.model = f"{t}/from_tf.pt"
        cls.fused = f"{t}/from_tf_fused.pt"
        run([TORCH_PY, f"{REPO}/tools/export_inception.py", "--from-tf", cls.pb, "--out", cls.model])
        run([TORCH_PY, f"{REPO}/tools/export_inception.py", "--from-tf", cls.pb, "--fuse", "prepacked",
             "--out", cls.fused])
        with tf.Graph().as_default() as g:
            gd = v1.GraphDef()
            with open(cls.pb, "rb") as f:
                gd.ParseFromString(f.read())
            v1.import_graph_def(gd, name="")
        cls.session = v1.Session(graph=g)
        cls.pool3 = g.get_tensor_by_name("pool_3:0")
        # the seed's decode: PIL, convert('RGB'); the same pixels as lossless PNGs for vecbench
        cls.pixels, cls.tf_feats = {}, {}
        os.makedirs(f"{t}/png")
        for p in PHOTOS:
            with Image.open(os.path.join(PHOTOS_DIR, p)) as f:
                rgb = f.convert("RGB")
            name = os.path.splitext(p)[0] + ".png"
            rgb.save(f"{t}/png/{name}")
            cls.pixels[name] = np.asarray(rgb)
            cls.tf_feats[name] = np.squeeze(cls.session.run(cls.pool3, {"DecodeJpeg:0": rgb}))

    @classmethod
    def tearDownClass(cls):
        cls.session.close()
        cls.tmp.cleanup()

    def check_route(self, tol, model, *extra):
        out = os.path.join(self.tmp.name, "out-" + "-".join([os.path.basename(model)] + list(extra)).replace("/", "_"))
        got = vectorize(f"{self.tmp.name}/png", out, model, *extra)
        self.assertEqual(sorted(got), sorted(self.tf_feats))
        worst = 0.0
        for name, ref in self.tf_feats.items():
            r = rel_l2(got[name], ref)
            h, w, _ = self.pixels[name].shape
            print(f"  {' '.join(extra) or 'torchscript'} {os.path.basename(model)} {name} ({w}x{h}): rel L2 {r:.2e}")
            worst = max(worst, r)
            self.assertLessEqual(r, tol, f"{name}: vecbench {' '.join(extra)} vs TensorFlow rel L2 {r:.3g} > {tol}")
        print(f"  worst {worst:.2e} (tolerance {tol:g})")
        return worst

    def test_pixels_torchscript(self):
        self.assertGreater(min(float(np.linalg.norm(v)) for v in self.tf_feats.values()), 1.0)
        self.check_route(TOL_TS, self.model, "--engine", "torchscript")  # the default route is onednn (1e-4)

    def test_pixels_fused(self):
        self.check_route(TOL_FP32, self.fused, "--engine", "torchscript")

    def test_pixels_onednn(self):
        self.check_route(TOL_FP32, self.model, "--engine", "onednn")

    def test_pixels_onednn_bf16(self):
        flags = open("/proc/cpuinfo").read()
        if "avx512_bf16" not in flags:
            self.skipTest("the CPU has no AVX-512 BF16 (vecbench refuses --precision bf16 here)")
        self.check_route(TOL_BF16, self.model, "--engine", "onednn", "--precision", "bf16")

    def test_weights_round_trip(self):
        t = self.tmp.name
        run([TORCH_PY, "-c", "import sys, torch; m = torch.jit.load(sys.argv[1]); torch.save({k: v for k, v in "
             "m.state_dict().items() if not k.startswith('input_')}, sys.argv[2])", MODEL, f"{t}/w.pth"])
        run([sys.executable, f"{REPO}/tools/make_tf_graph.py", "--weights", f"{t}/w.pth", "--out", f"{t}/w.pb"])
        run([TORCH_PY, f"{REPO}/tools/export_inception.py", "--from-tf", f"{t}/w.pb", "--out", f"{t}/w.pt"])
        r = run([TORCH_PY, "-c", "import sys, torch\n"
                 "a, b = (torch.jit.load(p).state_dict() for p in sys.argv[1:])\n"
                 "assert a.keys() == b.keys(), a.keys() ^ b.keys()\n"
                 "bad = [k for k in a if a[k].is_floating_point() and not torch.equal(a[k], b[k])]\n"
                 "print(len(a), 'tensors', 'differ:', bad[:5])\n"
                 "sys.exit(1 if bad else 0)", MODEL, f"{t}/w.pt"])
        print("  " + r.stdout.strip())

    def test_tf_decoder(self):
        """JPEG bytes through TF's DecodeJpeg (the graph's own decoder) vs vecbench's decode."""
        dec = os.path.join(self.tmp.name, "jpg")
        os.makedirs(dec, exist_ok=True)
        for p in JPEGS:
            os.symlink(os.path.join(PHOTOS_DIR, p), os.path.join(dec, p))
        ts = ("--engine", "torchscript")  # the 1e-5 route (the default route is onednn: 1e-4)
        got = vectorize(dec, os.path.join(self.tmp.name, "out-jpg"), self.model, *ts)
        got_tf = vectorize(dec, os.path.join(self.tmp.name, "out-jpg-tf"), self.model, "--decode", "tf", *ts)
        for p in JPEGS:
            with open(os.path.join(PHOTOS_DIR, p), "rb") as f:
                data = f.read()
            tf_default = np.squeeze(self.session.run(self.pool3, {"DecodeJpeg/contents:0": data}))
            pil = self.pixels[os.path.splitext(p)[0] + ".png"]
            px_default = tf.io.decode_jpeg(data, channels=3).numpy()
            px_accurate = tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE").numpy()
            r_feat = rel_l2(got[p], tf_default)
            r_pil = rel_l2(got[p], self.tf_feats[os.path.splitext(p)[0] + ".png"])
            r_tf = rel_l2(got_tf[p], tf_default)
            d = np.abs(px_default.astype(int) - pil.astype(int))
            print(f"  {p}: vecbench(jpg) vs TF(DecodeJpeg/contents) rel L2 {r_feat:.2e}; vs TF(PIL pixels) "
                  f"{r_pil:.2e}; --decode tf vs TF(DecodeJpeg/contents) {r_tf:.2e}; "
                  f"TF default decode vs PIL: max |d| {d.max()}, mean {d.mean():.3f}, "
                  f"{(d > 0).mean() * 100:.1f}% of values differ")
            # vecbench decodes as PIL does (accurate DCT, fancy upsampling): exactly
            self.assertLessEqual(r_pil, TOL_TS)
            # --decode tf decodes as TF's DecodeJpeg does (fast integer IDCT): TF's features on the bytes
            self.assertLessEqual(r_tf, TOL_TS)
            # TF's accurate DCT gives PIL's pixels exactly, so TF's default (fast DCT) is all that differs
            np.testing.assert_array_equal(px_accurate, pil)


if __name__ == "__main__":
    unittest.main(verbosity=2)
