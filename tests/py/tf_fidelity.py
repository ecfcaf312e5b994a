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
3. `vecbench fid A B --like tf`: the graph found in $VECBENCH_MODELS, imported (--from-tf) and
   run with TF's pipeline (JPEGs decoded as DecodeJpeg does), against TTUR's FID (SciPy's sqrtm)
   of TensorFlow's own pool_3 on the JPEG bytes of two folders of 200 real-photo crops: equal
   within 1e-4 relative.
4. TF's own decoder: the JPEG bytes fed to `DecodeJpeg/contents:0` against vecbench on the same
   files; records how far vecbench's decode (libjpeg-turbo, accurate integer DCT, as PIL) is from
   TF's default (the fast integer DCT), and checks that TF with the accurate DCT decodes exactly
   PIL's pixels, so that the DCT method is all that differs; `vecbench vectorize --decode tf`
   (libjpeg's fast IDCT) must then match TF on the bytes within 1e-5.

Run by ctest (environment VECBENCH_EXE, VECBENCH_DEFAULT_MODEL, VECBENCH_PYTHON: the Python
with torch for the export tool); it moves to the Python of tools/peers_setup.sh's TensorFlow venv
(VECBENCH_TF_PYTHON overrides); without TensorFlow it says so and exits 77 (ctest: skipped)."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctest_unittest  # noqa: E402  (exits 77 on a skip: ctest's "Skipped")

TF_PYTHON = os.environ.get("VECBENCH_TF_PYTHON", os.path.join(
    os.environ.get("VECBENCH_VENVS", os.path.expanduser("~/.cache/vecbench/venvs")), "tensorflow", "bin", "python"))
try:
    import tensorflow as tf
    from PIL import Image
except ImportError as e:
    if os.path.isfile(TF_PYTHON) and sys.executable != TF_PYTHON:
        os.execv(TF_PYTHON, [TF_PYTHON] + sys.argv)  # the venv of tools/peers_setup.sh tensorflow
    ctest_unittest.skip_all(f"TensorFlow is not installed for {sys.executable} ({e}) and there is no "
                            f"{TF_PYTHON}; tools/peers_setup.sh tensorflow installs it")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from reference_cache import Key, cached  # noqa: E402
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
FID_N = 200  # images per side for the --like tf test (issue #46: "at least 200 fixed-size images")
# TTUR's Frechet distance (its calculate_frechet_distance: SciPy's sqrtm of sigma1.sigma2, an
# eps ridge only if that is not finite, the real part) on two .npy feature matrices, run by the
# Python that has SciPy (VECBENCH_PYTHON: Debian's); prints the FID.
TTUR_FID = """
import sys, numpy as np, scipy.linalg
a, b = (np.load(p).astype(np.float64) for p in sys.argv[1:3])
mu1, mu2 = a.mean(0), b.mean(0)
s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
covmean, _ = scipy.linalg.sqrtm(s1.dot(s2), disp=False)
if not np.isfinite(covmean).all():
    off = np.eye(s1.shape[0]) * 1e-6
    covmean = scipy.linalg.sqrtm((s1 + off).dot(s2 + off))
covmean = covmean.real
d = mu1 - mu2
print(repr(float(d.dot(d) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))))
"""


def make_jpeg_crops(out, names, n, side, seed):
    """n square crops (20-100 % of the shorter side) of the photos `names`, Lanczos to side x side,
    JPEG quality 90 (4:2:0, as a generator's samples saved by PIL)."""
    os.makedirs(out)
    rng = random.Random(seed)
    srcs = [Image.open(os.path.join(PHOTOS_DIR, f)).convert("RGB") for f in names]
    for i in range(n):
        im = srcs[rng.randrange(len(srcs))]
        s = int(min(im.size) * rng.uniform(0.2, 1.0))
        x, y = rng.randrange(im.size[0] - s + 1), rng.randrange(im.size[1] - s + 1)
        im.crop((x, y, x + s, y + s)).resize((side, side), Image.LANCZOS).save(
            os.path.join(out, f"{i:04d}.jpg"), quality=90)


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

    def test_fid_like_tf(self):
        """`vecbench fid A B --like tf` against TTUR's FID of TensorFlow's pool_3 on the JPEG bytes."""
        t = self.tmp.name
        models, home = f"{t}/models", f"{t}/fid-home"
        os.makedirs(models)
        shutil.copy(self.pb, f"{models}/classify_image_graph_def.pb")
        photos = sorted(f for f in os.listdir(PHOTOS_DIR) if f.endswith(".jpg"))
        sides = {"A": (photos[0::2], 256, 1), "B": (photos[1::2], 320, 2)}
        for name, (names, side, seed) in sides.items():
            make_jpeg_crops(f"{t}/{name}", names, FID_N, side, seed)

        def reference():
            for name in sides:
                feats = []
                for f in sorted(os.listdir(f"{t}/{name}")):
                    with open(f"{t}/{name}/{f}", "rb") as fh:
                        feats.append(np.squeeze(self.session.run(self.pool3, {"DecodeJpeg/contents:0": fh.read()})))
                np.save(f"{t}/{name}.npy", np.stack(feats))
            return float(run([TORCH_PY, "-c", TTUR_FID, f"{t}/A.npy", f"{t}/B.npy"]).stdout)

        # TensorFlow's side (400 Session.runs) kept between runs by the hash of what it reads (reference_cache.py)
        scipy = run([TORCH_PY, "-c", "import sys, numpy, scipy; print(sys.version, numpy.__version__, "
                     "scipy.__version__)"]).stdout
        key = Key("tf-ttur-fid").text("versions", f"{sys.version} tf {tf.__version__} numpy {np.__version__}; {scipy}")
        key.text("code", TTUR_FID).file("graph", self.pb).folder("A", f"{t}/A").folder("B", f"{t}/B")
        ref = cached(key, reference)
        env = dict(os.environ, VECBENCH_MODELS=models, TORCH_HOME=f"{home}/torch", VECBENCH_CACHE=f"{home}/cache")
        r = run([VECBENCH, "fid", f"{t}/A", f"{t}/B", "--like", "tf", "--json", f"{t}/fid.json"], env=env)
        with open(f"{t}/fid.json") as f:
            got = json.load(f)
        print(f"  TTUR on TensorFlow's pool_3: FID {ref!r}; vecbench fid --like tf {got['fid']!r} "
              f"(rel {got['fid'] / ref - 1:.2e})")
        said = [line for line in r.stderr.splitlines() if not line.startswith("vecbench: importing")]
        self.assertIn("--like tf", said[0])  # the first line (after the one-time import) says which model and why
        self.assertEqual(got["like"], "tf")
        self.assertAlmostEqual(got["fid"] / ref, 1.0, delta=1e-4, msg=(got["fid"], ref))
        # Without --like, the graph is found where it is kept and chosen (no PyTorch tool's weights here).
        r = run([VECBENCH, "fid", f"{t}/A", f"{t}/B"], env=env)
        self.assertIn("tf's preset", r.stderr.splitlines()[0])
        # A decode other than TF's is refused for its stores, naming the setting.
        r = subprocess.run([VECBENCH, "vectorize", "--images", f"{t}/A", "--out", f"{t}/exact", "--like", "tf",
                            "--decode", "cpu"], capture_output=True, text=True, env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--decode", r.stderr)
        self.assertFalse(os.path.exists(f"{t}/exact"))

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
    ctest_unittest.main()
