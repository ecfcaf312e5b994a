#!/usr/bin/env python3
"""Reference statistics people publish, read and written by vecbench (issue #62).

Each file is written here the way its tool writes it:
- EDM2 `calculate_metrics.py ref`: its statistics accumulated in torch float64 (sum, X^T X, then
  mu and (S - n mu mu^T) / (n - 1)), a dict {'num_images', 'fid': {mu, sigma}, 'fd_dinov2': {...}}
  of `.cpu().numpy()` arrays, `pickle.dump(stats, f)`; also under protocols 2, 3 and 5, and as
  NumPy 2 names its globals (numpy._core), with a Fortran-order sigma and a big-endian mu;
- ADM's reference batch (guided-diffusion evaluations): `np.savez` of the images (arr_0), mu,
  sigma, mu_s, sigma_s; its arr_0 corrupted afterwards, which vecbench must never read; and a
  zip64 directory (as NumPy writes one past 4 GiB, made here by lowering zipfile's limit);
- dgm-eval's saved representations: `np.savez(out, model=..., reps=float64 [N, d], hparams=dict)`;
- clean-fid's custom statistics (`np.savez_compressed(mu=, sigma=)`) and KID features (`feats`).

Checked: `vecbench fid` on each equals its FID from the features themselves (1e-6 relative);
`--encoder dinov2-vit-l-14` and `metrics --fd-dinov2` take EDM2's 'fd_dinov2'; `vecbench stats
--out F.pkl` loads with pickle.load and equals NumPy's mean and covariance, a second encoder's
key is added keeping the first, another image count is refused; pickles naming os.system,
builtins.eval, a class of their own, or holding an object array are refused naming what they
hold, and nothing in them runs. Debian's Python (NumPy, torch); run by ctest with VECBENCH_EXE.
"""
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import types
import unittest
import zipfile

import numpy as np
import torch

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")


def vecbench(*args, ok=True):
    p = subprocess.run([EXE, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError(f"vecbench {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def fid_of(p):
    """The number on the last line of `vecbench fid` / `metrics` output."""
    return float(p.stdout.strip().splitlines()[-1].split()[-1])


def edm2_stats(x):
    """mu and sigma as EDM2's calculate_stats_for_iterable computes them (torch float64)."""
    f = torch.from_numpy(x).to(torch.float64)
    n = f.shape[0]
    mu = f.sum(0) / n
    sigma = (f.T @ f - mu.ger(mu) * n) / (n - 1)
    return dict(mu=mu.cpu().numpy(), sigma=sigma.cpu().numpy())


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


class NumPy2Names(pickle.Pickler):
    """Pickles arrays under the names NumPy 2 gives their functions (numpy._core....)."""

    def __init__(self, f, protocol):
        super().__init__(f, protocol=protocol)
        self.protocol = protocol
        self.fakes = {}
        for mod in ("numpy._core.multiarray", "numpy._core.numeric"):
            m = types.ModuleType(mod)
            sys.modules[mod] = m
            self.fakes[mod] = m

    def reducer_override(self, obj):
        if type(obj) is not np.ndarray:
            return NotImplemented
        r = obj.__reduce_ex__(self.protocol)
        old = r[0]
        mod = "numpy._core.multiarray" if old.__name__ == "_reconstruct" else "numpy._core.numeric"

        def fake(*a):  # never called: only its name is pickled
            return old(*a)
        fake.__module__, fake.__qualname__, fake.__name__ = mod, old.__name__, old.__name__
        setattr(self.fakes[mod], old.__name__, fake)
        return (fake,) + tuple(r[1:])


class Evil:
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return (self.fn, (self.arg,))


class Mine:  # a class of the writer's own
    def __init__(self):
        self.mu = np.zeros(3)


class ReferenceStats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.d = cls.tmp.name
        g = np.random.default_rng(62)
        cls.n, cls.dim, cls.dim2 = 300, 16, 24
        cls.a = g.normal(size=(cls.n, cls.dim)).astype(np.float32)
        cls.b = (g.normal(size=(cls.n, cls.dim)) * 1.3 + 0.4).astype(np.float32)
        cls.a2 = g.normal(size=(cls.n, cls.dim2)).astype(np.float32)
        cls.b2 = (g.normal(size=(cls.n, cls.dim2)) * 0.7 - 0.2).astype(np.float32)
        for k in ("a", "b", "a2", "b2"):
            np.save(cls.path(k + ".npy"), getattr(cls, k))
        # the reference: FIDs of the features themselves, as vecbench computes them from .npy
        cls.fid_ab = fid_of(vecbench("fid", cls.path("a.npy"), cls.path("b.npy")))
        cls.fid_ab2 = fid_of(vecbench("fid", cls.path("a2.npy"), cls.path("b2.npy")))
        cls.edm2 = dict(num_images=cls.n, fid=edm2_stats(cls.b), fd_dinov2=edm2_stats(cls.b2))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.d, name)

    def edm2_file(self, name, protocol=None, pickler=pickle.Pickler, stats=None):
        p = self.path(name)
        with open(p, "wb") as f:  # EDM2's save_stats: pickle.dump(stats, f)
            pickler(f, protocol=protocol if protocol is not None else pickle.DEFAULT_PROTOCOL).dump(stats or self.edm2)
        return p

    def test_edm2_pkl_both_keys(self):
        self.assertGreater(self.fid_ab, 0.01)
        for name, proto, pickler in [("p4.pkl", None, pickle.Pickler), ("p2.pkl", 2, pickle.Pickler),
                                     ("p3.pkl", 3, pickle.Pickler), ("p5.pkl", 5, pickle.Pickler),
                                     ("np2_p4.pkl", 4, NumPy2Names), ("np2_p5.pkl", 5, NumPy2Names)]:
            with self.subTest(file=name):
                p = self.edm2_file(name, proto, pickler)
                raw = pathlib.Path(p).read_bytes()
                if pickler is NumPy2Names:
                    self.assertIn(b"numpy._core", raw)
                got = fid_of(vecbench("fid", self.path("a.npy"), p))
                self.assertLess(rel(got, self.fid_ab), 1e-6, (name, got, self.fid_ab))
                got2 = fid_of(vecbench("fid", self.path("a2.npy"), p, "--encoder", "dinov2-vit-l-14"))
                self.assertLess(rel(got2, self.fid_ab2), 1e-6, (name, got2, self.fid_ab2))
        p = self.path("p4.pkl")
        got = fid_of(vecbench("metrics", self.path("a2.npy"), p, "--fd-dinov2"))
        self.assertLess(rel(got, self.fid_ab2), 1e-6)
        # an encoder EDM2's files have no key for, and a key the file lacks
        r = vecbench("fid", self.path("a.npy"), p, "--encoder", "dinov2-vit-s-14", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("fd_dinov2", r.stderr)
        only_fid = self.edm2_file("only_fid.pkl", stats=dict(num_images=self.n, fid=self.edm2["fid"]))
        r = vecbench("fid", self.path("a2.npy"), only_fid, "--encoder", "dinov2-vit-l-14", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no 'fd_dinov2'", r.stderr)

    def test_edm2_fortran_and_big_endian(self):
        s = self.edm2_stats_copy()
        s["fid"]["sigma"] = np.asfortranarray(s["fid"]["sigma"] + np.triu(np.ones((self.dim, self.dim))) * 0.01)  # not symmetric
        s["fid"]["mu"] = s["fid"]["mu"].astype(">f8")
        self.assertTrue(s["fid"]["sigma"].flags.f_contiguous and not s["fid"]["sigma"].flags.c_contiguous)
        for proto in (4, 5):
            p = self.edm2_file(f"fortran{proto}.pkl", proto, stats=s)
            out = self.path(f"fortran{proto}_copy.pkl")
            vecbench("stats", p, "--out", out)  # reads it and writes it back in EDM2's format
            with open(out, "rb") as f:
                back = pickle.load(f)
            np.testing.assert_array_equal(back["fid"]["sigma"], s["fid"]["sigma"])
            np.testing.assert_array_equal(back["fid"]["mu"], s["fid"]["mu"])

    def edm2_stats_copy(self):
        return {k: ({kk: vv.copy() for kk, vv in v.items()} if isinstance(v, dict) else v) for k, v in self.edm2.items()}

    def test_stats_writes_edm2_pkl(self):
        out = self.path("written.pkl")
        vecbench("stats", self.path("b.npy"), "--out", out)
        with open(out, "rb") as f:
            s = pickle.load(f)
        self.assertEqual(sorted(s), ["fid", "num_images"])
        self.assertEqual(s["num_images"], self.n)
        np.testing.assert_allclose(s["fid"]["mu"], self.b.astype(np.float64).mean(0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(s["fid"]["sigma"], np.cov(self.b.astype(np.float64), rowvar=False), rtol=0,
                                   atol=1e-12)
        self.assertEqual(s["fid"]["mu"].dtype, np.float64)
        # the second encoder's key beside the first
        vecbench("stats", self.path("b2.npy"), "--out", out, "--encoder", "dinov2-vit-l-14")
        with open(out, "rb") as f:
            s2 = pickle.load(f)
        self.assertEqual(sorted(s2), ["fd_dinov2", "fid", "num_images"])
        np.testing.assert_array_equal(s2["fid"]["sigma"], s["fid"]["sigma"])
        np.testing.assert_allclose(s2["fd_dinov2"]["mu"], self.b2.astype(np.float64).mean(0), rtol=0, atol=1e-12)
        # EDM2's own FID code on the file vecbench wrote, against vecbench's on the features
        ref = edm2_stats(self.a)
        m = np.square(ref["mu"] - s2["fid"]["mu"]).sum()
        import scipy.linalg
        sq, _ = scipy.linalg.sqrtm(np.dot(ref["sigma"], s2["fid"]["sigma"]), disp=False)
        edm2_fid = float(np.real(m + np.trace(ref["sigma"] + s2["fid"]["sigma"] - sq * 2)))
        self.assertLess(rel(edm2_fid, self.fid_ab), 1e-6)
        # another number of images: refused, the file unchanged
        before = pathlib.Path(out).read_bytes()
        np.save(self.path("fewer.npy"), self.b[:100])
        r = vecbench("stats", self.path("fewer.npy"), "--out", out, ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("300 images", r.stderr)
        self.assertEqual(pathlib.Path(out).read_bytes(), before)

    def test_adm_reference_batch(self):
        g = np.random.default_rng(1)
        images = g.integers(0, 256, size=(40, 8, 8, 3), dtype=np.uint8)
        st = edm2_stats(self.b)
        spatial = edm2_stats(self.a2)
        p = self.path("VIRTUAL_test_labeled.npz")
        np.savez(p, images, mu=st["mu"], sigma=st["sigma"], mu_s=spatial["mu"], sigma_s=spatial["sigma"])
        with np.load(p) as z:
            self.assertEqual(sorted(z.files), ["arr_0", "mu", "mu_s", "sigma", "sigma_s"])
        self.assertLess(rel(fid_of(vecbench("fid", self.path("a.npy"), p)), self.fid_ab), 1e-6)
        # arr_0's bytes corrupted: NumPy now fails to read it; vecbench never reads it
        with zipfile.ZipFile(p) as z:
            info = z.getinfo("arr_0.npy")
        raw = bytearray(pathlib.Path(p).read_bytes())
        raw[info.header_offset + 200] ^= 0xFF
        pathlib.Path(p).write_bytes(bytes(raw))
        with self.assertRaises(zipfile.BadZipFile):
            np.load(p)["arr_0"]
        self.assertLess(rel(fid_of(vecbench("fid", self.path("a.npy"), p)), self.fid_ab), 1e-6)
        # a sample batch (images only): refused, naming what it holds
        np.savez(self.path("samples.npz"), images)
        r = vecbench("fid", self.path("a.npy"), self.path("samples.npz"), ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("arr_0", r.stderr)

    def test_zip64_directory(self):
        st = edm2_stats(self.b)
        p = self.path("zip64.npz")
        limit = zipfile.ZIP64_LIMIT
        zipfile.ZIP64_LIMIT = 64  # as past 4 GiB: zip64 sizes, offsets and end record
        try:
            np.savez(p, np.zeros((100, 3), np.uint8), mu=st["mu"], sigma=st["sigma"])
        finally:
            zipfile.ZIP64_LIMIT = limit
        self.assertIn(b"PK\x06\x06", pathlib.Path(p).read_bytes())  # the zip64 end record is there
        self.assertLess(rel(fid_of(vecbench("fid", self.path("a.npy"), p)), self.fid_ab), 1e-6)

    def test_dgm_eval_reps_and_clean_fid(self):
        p = self.path("reps_test_dinov2_nimage-300_test.npz")
        # dgm-eval's save_outputs: np.savez(out_path, model=model, reps=reps, hparams=hyperparams)
        np.savez(p, model="dinov2", reps=self.a.astype(np.float64), hparams=dict(dataset_name="test", nimages=300))
        self.assertLess(rel(fid_of(vecbench("fid", p, self.path("b.npy"))), self.fid_ab), 1e-6)
        kid_npy = vecbench("metrics", self.path("a.npy"), self.path("b.npy"), "--kid", "--kid-subsets", "5",
                           "--kid-subset-size", "100").stdout
        kid_npz = vecbench("metrics", p, self.path("b.npy"), "--kid", "--kid-subsets", "5",
                           "--kid-subset-size", "100").stdout
        self.assertEqual(kid_npz.split("KID")[1].split()[0], kid_npy.split("KID")[1].split()[0])
        # clean-fid: custom stats (savez_compressed mu, sigma) and its KID features
        st = edm2_stats(self.b)
        c = self.path("cleanfid_custom.npz")
        np.savez_compressed(c, mu=st["mu"], sigma=st["sigma"])
        self.assertLess(rel(fid_of(vecbench("fid", self.path("a.npy"), c)), self.fid_ab), 1e-6)
        k = self.path("cleanfid_custom_kid.npz")
        np.savez_compressed(k, feats=self.b)
        self.assertLess(rel(fid_of(vecbench("fid", self.path("a.npy"), k)), self.fid_ab), 1e-9)

    def test_crafted_npz_shapes_refused(self):
        # a member whose header claims 2^62 x 4 floats (a count that wraps to 0) and holds none, and
        # one whose header claims more rows than its bytes: refused naming the file, nothing read past them
        import zipfile
        for name, header_shape, rows in (("wrap.npz", "(4611686018427387904, 4)", 0), ("short.npz", "(50, 4)", 2)):
            body = np.zeros((rows, 4), dtype="<f4").tobytes()
            head = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % header_shape
            head += " " * (63 - (10 + len(head)) % 64) + "\n"
            npy = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode() + body
            p = self.path(name)
            with zipfile.ZipFile(p, "w") as z:
                z.writestr("reps.npy", npy)
            r = vecbench("fid", p, self.path("b.npy"), ok=False)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(p, r.stderr)
            self.assertTrue("2^48" in r.stderr or "cut short" in r.stderr or "bytes, not" in r.stderr, r.stderr)

    def test_malicious_pickles_refused(self):
        marker = self.path("ran")
        cases = {
            "os_system.pkl": (dict(fid=Evil(os.system, "touch " + marker)), ("posix.system", "os.system")),
            "eval.pkl": (dict(fid=Evil(eval, f"open({marker!r}, 'w')")), ("builtins.eval", "__builtin__.eval")),
            "custom_class.pkl": (dict(fid=Mine()), ("__main__.Mine", "reference_stats.Mine")),
            "object_array.pkl": (dict(fid=dict(mu=np.array([1, "a"], dtype=object), sigma=np.eye(2))), ("'O8'",)),
        }
        for name, (obj, expected) in cases.items():
            for proto in (2, 4, 5):
                with self.subTest(file=name, protocol=proto):
                    p = self.path(f"{proto}_{name}")
                    with open(p, "wb") as f:
                        pickle.dump(obj, f, protocol=proto)
                    r = vecbench("fid", self.path("a.npy"), p, ok=False)
                    self.assertNotEqual(r.returncode, 0)
                    self.assertIn(p, r.stderr)
                    self.assertIn("refused", r.stderr)
                    self.assertTrue(any(e in r.stderr for e in expected), (expected, r.stderr))
                    self.assertFalse(os.path.exists(marker), "something in the pickle ran")
        # a pickle that is not EDM2's is never overwritten by stats --out
        p = self.path("4_eval.pkl")
        before = pathlib.Path(p).read_bytes()
        r = vecbench("stats", self.path("b.npy"), "--out", p, ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(pathlib.Path(p).read_bytes(), before)
        self.assertFalse(os.path.exists(marker))


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    if not os.path.exists(EXE):
        ctest_unittest.skip_all(f"{EXE} not built")
    ctest_unittest.main()
