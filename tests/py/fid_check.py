#!/usr/bin/env python3
"""`vecbench stats` and `vecbench fid` against a float64 NumPy/SciPy computation (issue #28).

Run by ctest (environment VECBENCH_EXE, VECBENCH_DEFAULT_MODEL) with Debian's Python (numpy,
scipy 1.10: not one of the 1.11.2-1.12 releases whose sqrtm was wrong).
Checks: stats equal np.mean / np.cov; FID equals |mu1-mu2|^2 + tr S1 + tr S2 - 2 tr sqrtm(S1 S2)
within 1e-6 relative, also from a deflated .npz as np.savez_compressed writes (pytorch-fid,
clean-fid), and pytorch-fid's own calculate_frechet_distance on vecbench's .npz files (its venv
from tools/peers_setup.sh tensorflow); fid A A is 0; full-set KID equals the unbiased MMD^2 of the cubic kernel; a store's
stats are its vectors'; image folders are vectorized into a resumable store first; sides of
different fingerprints are refused naming the field; bad stats files are refused naming the file
and the cause; synthetic weights give no FID unless allowed, and then every figure says so (issue
#46); a store with one rotted float is refused by stats and fid.
"""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import scipy
import scipy.linalg

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")
# No FID tool's weights here: the default (synthetic) model is what image inputs get.
_NO_WEIGHTS = tempfile.TemporaryDirectory()
os.environ["TORCH_HOME"] = _NO_WEIGHTS.name
os.environ.pop("VECBENCH_MODELS", None)


def vb(*args, ok=True):
    r = subprocess.run([EXE, *args], capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def load_json(path):
    with open(path) as f:
        return json.load(f)


def reference_fid(mu1, s1, mu2, s2):
    covmean = scipy.linalg.sqrtm(s1 @ s2)
    return float(np.sum((mu1 - mu2) ** 2) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean.real))


def reference_kid(x, y):  # the unbiased MMD^2 of k(a, b) = (a.b/d + 1)^3 over the whole sets
    d, m = x.shape[1], x.shape[0]
    a = (x @ x.T / d + 1) ** 3 + (y @ y.T / d + 1) ** 3
    b = (x @ y.T / d + 1) ** 3
    return float(((a.sum() - np.diag(a).sum()) / (m - 1) - b.sum() * 2 / m) / m)


class Fid(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert not ("1.11.2" <= scipy.__version__ < "1.13"), f"scipy {scipy.__version__} has the wrong sqrtm"
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        rng = np.random.default_rng(5)
        n, d = 400, 256  # more samples than features: full-rank covariances, like real sets
        base = rng.gamma(2.0, 1.0, size=(n, d))  # non-negative, skewed, as pool_3 features are
        cls.x = (base * rng.uniform(0.5, 2.0, size=d)).astype(np.float32)
        cls.y = (base[::-1] * 1.1 + rng.gamma(1.0, 0.3, size=(n, d))).astype(np.float32)
        for name, m in (("x", cls.x), ("y", cls.y)):
            np.save(os.path.join(cls.dir, name + ".npy"), m)
            vb("stats", os.path.join(cls.dir, name + ".npy"), "--out", os.path.join(cls.dir, name + ".npz"))

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_stats_are_the_float64_mean_and_covariance(self):
        s = np.load(self.path("x.npz"))
        x = self.x.astype(np.float64)
        self.assertEqual(s["mu"].dtype, np.float64)
        self.assertEqual(s["sigma"].shape, (256, 256))
        self.assertEqual(int(s["n"]), 400)
        np.testing.assert_allclose(s["mu"], x.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(s["sigma"], np.cov(x, rowvar=False), rtol=1e-9, atol=1e-12)

    def test_fid_equals_scipy_from_stats_features_and_deflated_npz(self):
        x, y = self.x.astype(np.float64), self.y.astype(np.float64)
        want = reference_fid(x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
        compressed = self.path("y_compressed.npz")  # as np.savez_compressed writes: deflated members
        s = np.load(self.path("y.npz"))
        np.savez_compressed(compressed, mu=s["mu"], sigma=s["sigma"])
        for a, b in ((self.path("x.npz"), self.path("y.npz")), (self.path("x.npy"), self.path("y.npy")),
                     (self.path("x.npz"), compressed)):
            r = vb("fid", a, b, "--json", self.path("fid.json"))
            got = load_json(self.path("fid.json"))
            self.assertAlmostEqual(got["fid"] / want, 1.0, delta=1e-6, msg=(a, b, got, want))
            self.assertTrue(r.stdout.strip().splitlines()[-1].startswith("FID "), r.stdout)
        self.assertIn("no fingerprint", vb("fid", self.path("x.npz"), compressed).stderr)

    def test_pytorch_fid_agrees_on_vecbench_stats_files(self):
        venvs = os.environ.get("VECBENCH_VENVS", os.path.expanduser("~/.cache/vecbench/venvs"))
        py = os.path.join(venvs, "fid-tools", "bin", "python")
        if not os.path.exists(py):
            self.skipTest(f"no {py}: tools/peers_setup.sh tensorflow makes it (CI does)")
        code = ("import sys, numpy as np\n"
                "from pytorch_fid.fid_score import calculate_frechet_distance as f\n"
                "a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
                "print(repr(float(f(a['mu'], a['sigma'], b['mu'], b['sigma']))))\n")
        theirs = float(subprocess.run([py, "-c", code, self.path("x.npz"), self.path("y.npz")], check=True,
                                      capture_output=True, text=True).stdout.strip().splitlines()[-1])
        vb("fid", self.path("x.npz"), self.path("y.npz"), "--json", self.path("pf.json"))
        ours = load_json(self.path("pf.json"))["fid"]
        self.assertAlmostEqual(ours / theirs, 1.0, delta=1e-6, msg=(ours, theirs))

    def test_fid_of_a_side_with_itself_is_zero(self):
        vb("fid", self.path("x.npz"), self.path("x.npy"), "--json", self.path("same.json"))
        got = load_json(self.path("same.json"))
        tr = np.trace(np.cov(self.x.astype(np.float64), rowvar=False))
        self.assertLess(abs(got["fid"]), 1e-6 * tr, got)

    def test_full_set_kid_equals_numpy(self):
        vb("fid", self.path("x.npy"), self.path("y.npy"), "--kid", "--kid-subsets", "1", "--kid-subset-size",
           "100000", "--json", self.path("kid.json"))
        got = load_json(self.path("kid.json"))
        want = reference_kid(self.y.astype(np.float64), self.x.astype(np.float64))
        self.assertAlmostEqual(got["kid"] / want, 1.0, delta=1e-6, msg=(got, want))
        self.assertEqual(got["kid_subset_size"], 400)
        sub = vb("fid", self.path("x.npy"), self.path("y.npy"), "--kid", "--kid-subsets", "5", "--kid-subset-size",
                 "100", "--seed", "3")
        self.assertIn("(5 subsets of 100)", sub.stdout)

    def test_bad_stats_files_name_the_file_and_the_cause(self):
        np.savez(self.path("no_sigma.npz"), mu=np.zeros(4))
        r = vb("fid", self.path("no_sigma.npz"), self.path("x.npz"), ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no_sigma.npz", r.stderr)
        self.assertIn("'sigma'", r.stderr)
        np.savez(self.path("nan.npz"), mu=np.array([np.nan, 0.0]), sigma=np.eye(2))
        r = vb("fid", self.path("nan.npz"), self.path("nan.npz"), ok=False)
        self.assertIn("nan.npz", r.stderr)
        self.assertIn("NaN", r.stderr)
        np.savez(self.path("shape.npz"), mu=np.zeros(3), sigma=np.eye(2))
        r = vb("fid", self.path("shape.npz"), self.path("x.npz"), ok=False)
        self.assertIn("sigma (d, d)", r.stderr)

    def test_metrics_refuses_nan_inf_and_another_width_naming_the_file(self):
        # issue #63: `metrics nan.npy ok.npy --prdc` printed figures and exited 0 where fid refused
        # the file; every side of every metric is checked as fid checks it, by name
        x = self.x[:60].copy()
        x[7, 3] = np.nan
        np.save(self.path("nan.npy"), x)
        y = self.y[:60].copy()
        y[11, 0] = np.inf
        np.save(self.path("inf.npy"), y)
        np.save(self.path("wide.npy"), self.y[:60, :200])
        ok = self.path("y.npy")
        for side, flags, names in (("nan.npy", ["--prdc"], ["nan.npy", "row 7"]),
                                   ("nan.npy", ["--prc", "--like", "torch-fidelity"], ["nan.npy", "row 7"]),
                                   ("inf.npy", ["--kid"], ["inf.npy", "row 11"]),
                                   ("nan.npy", ["--fid"], ["nan.npy"]),
                                   ("wide.npy", ["--prdc"], ["wide.npy", "y.npy", "256", "200"]),
                                   ("wide.npy", ["--kid"], ["wide.npy", "y.npy", "256", "200"])):
            for a, b in ((self.path(side), ok), (ok, self.path(side))):
                with self.subTest(a=a, b=b, flags=flags):
                    r = vb("metrics", a, b, *flags, ok=False)
                    self.assertNotEqual(r.returncode, 0, r.stdout)
                    self.assertEqual(r.stdout, "")  # no figure
                    for n in names:
                        self.assertIn(n, r.stderr)
                    if side != "wide.npy":
                        self.assertIn("NaN or Inf", r.stderr)
        r = vb("metrics", self.path("nan.npy"), "--isc", ok=False)  # one side too
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nan.npy", r.stderr)

    def test_a_store_and_fingerprints(self):
        model = os.environ.get("VECBENCH_DEFAULT_MODEL")
        if not model:
            self.skipTest("VECBENCH_DEFAULT_MODEL not set")
        a, b = self.path("store_a"), self.path("store_b")
        common = ["--images", "synthetic:6", "--model", model, "--format", "shards", "--shard-rows", "4",
                  "--progress", "0"]
        vb("vectorize", *common, "--out", a)
        vb("vectorize", *common, "--out", b, "--resize", "bilinear")
        vb("stats", a, "--out", self.path("a.npz"), "--allow-synthetic-weights")
        s = np.load(self.path("a.npz"))
        with open(os.path.join(a, "manifest.jsonl")) as f:
            m = [json.loads(line) for line in f]
        rows = np.stack([np.load(os.path.join(a, j["shard"]))[j["row"]] for j in m]).astype(np.float64)
        np.testing.assert_allclose(s["mu"], rows.mean(0), rtol=1e-10, atol=1e-12)
        self.assertEqual(str(s["fingerprint_id"]), load_json(os.path.join(a, "vecbench.json"))["fingerprint_id"])
        refused = vb("fid", a, b, "--allow-synthetic-weights", ok=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("resize", refused.stderr)
        self.assertIn("--allow-mismatch", refused.stderr)
        allowed = vb("fid", a, b, "--allow-mismatch", "--allow-synthetic-weights")
        self.assertIn("6 samples, fewer than 2049: its covariance is rank-deficient", allowed.stderr)
        open(os.path.join(b, "manifest.jsonl"), "w").close()  # a store with no vector left
        r = vb("stats", b, "--out", self.path("e.npz"), "--allow-synthetic-weights", ok=False)
        self.assertIn("no feature vectors", r.stderr)
        self.assertIn("store_b", r.stderr)

    def synthetic_store(self, name, n=6):
        model = os.environ.get("VECBENCH_DEFAULT_MODEL")
        if not model:
            self.skipTest("VECBENCH_DEFAULT_MODEL not set")
        out = self.path(name)
        vb("vectorize", "--images", f"synthetic:{n}", "--model", model, "--format", "shards", "--shard-rows", "4",
           "--progress", "0", "--out", out)
        return out

    def test_synthetic_weights_give_no_fid_unless_allowed_and_then_say_so(self):
        a = self.synthetic_store("syn_a")
        for cmd in (["fid", a, self.path("x.npy")], ["stats", a, "--out", self.path("syn.npz")]):
            r = vb(*cmd, ok=False)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertNotIn("FID", r.stdout)
            self.assertIn("synthetic", r.stderr)
            # which file to put where, for each tool
            self.assertIn(os.path.join(_NO_WEIGHTS.name, "hub", "checkpoints", "pt_inception-2015-12-05-6726825d.pth"),
                          r.stderr)
            self.assertIn("weights-inception-2015-12-05-6726825d.pth", r.stderr)
            self.assertIn("--allow-synthetic-weights", r.stderr)
        self.assertFalse(os.path.exists(self.path("syn.npz")))
        r = vb("fid", a, a, "--allow-synthetic-weights", "--json", self.path("syn.json"))
        self.assertIn("synthetic weights", r.stdout.strip().splitlines()[-1])
        self.assertTrue(r.stdout.strip().splitlines()[-1].startswith("FID "))
        got = load_json(self.path("syn.json"))
        self.assertTrue(got["synthetic_weights"])
        self.assertEqual(got["weights"], "synthetic weights")
        # a stats file of synthetic weights carries it: refused in turn
        vb("stats", a, "--out", self.path("syn.npz"), "--allow-synthetic-weights")
        r = vb("fid", self.path("syn.npz"), self.path("x.npz"), ok=False)
        self.assertIn("syn.npz", r.stderr)
        self.assertIn("synthetic", r.stderr)
        # images with no FID tool's weights: refused before anything is vectorized
        photos = self.path("one_photo")
        os.makedirs(photos)
        import shutil
        shutil.copy(os.path.join("/usr/share/doc/opencv-doc/examples/data", "baboon.jpg"), photos)
        r = vb("fid", photos, photos, "--store", self.path("no_stores"), ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the build's default model: no FID tool's weights were found", r.stderr)
        self.assertFalse(os.path.exists(self.path("no_stores")))

    def test_a_store_with_a_rotted_vector_is_refused(self):
        a = self.synthetic_store("rot_a", n=9)
        with open(os.path.join(a, "manifest.jsonl")) as f:
            line = [json.loads(x) for x in f][4]
        shard = os.path.join(a, line["shard"])
        m = np.load(shard, mmap_mode="r+")
        m[line["row"], 7] = 3e3  # one float overwritten; the manifest's checksum is now wrong
        m.flush()
        del m
        for cmd in (["stats", a, "--out", self.path("rot.npz")], ["fid", a, self.path("x.npy"), "--allow-mismatch"]):
            r = vb(*cmd, "--allow-synthetic-weights", ok=False)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("1 stored vectors do not match their checksums", r.stderr)
            self.assertIn(line["shard"], r.stderr)
            self.assertIn("vecbench verify --repair", r.stderr)
        self.assertFalse(os.path.exists(self.path("rot.npz")))
        self.assertEqual(vb("verify", a, ok=False).returncode, 2)  # what verify says of the same store

    def test_images_are_vectorized_into_a_resumable_store_first(self):
        import shutil
        photos = self.path("photos")
        os.makedirs(photos)
        for p in ("baboon.jpg", "fruits.jpg", "board.jpg"):
            shutil.copy(os.path.join("/usr/share/doc/opencv-doc/examples/data", p), photos)
        stores = self.path("stores")
        first = vb("stats", photos, "--out", self.path("p.npz"), "--store", stores, "--allow-synthetic-weights")
        self.assertIn("n=3", first.stdout)
        self.assertIn("3 to do", first.stderr)
        again = vb("stats", photos, "--out", self.path("p2.npz"), "--store", stores, "--allow-synthetic-weights")
        self.assertIn("0 to do, 3 already done", again.stderr)
        np.testing.assert_array_equal(np.load(self.path("p.npz"))["sigma"], np.load(self.path("p2.npz"))["sigma"])


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
