#!/usr/bin/env python3
"""`vecbench metrics A B --cmmd` against the reference's formula (issue #65).

On random L2-normalized 768-d embeddings in .npy files (what a CLIP ViT-L/14 image tower gives):
- CMMD equals google-research/cmmd's distance.mmd written in float64 NumPy (its arithmetic: the
  Gram matrices, |x|^2 + |y|^2 - 2 x.y, exp, the means with their diagonals, x 1000, sigma 10)
  within 1e-9, and cmmd-pytorch's formula (sayakpaul/cmmd-pytorch distance.py: the same in torch)
  run in float64 within 1e-6;
- with --cmmd-batch 32 the rows past each side's last full batch are left out as the reference's
  drop_remainder leaves them (a .npy side's rows as they are), and the output says how many;
- sides of other widths, or holding NaN, are refused by name, and no CMMD is printed.
Run by ctest (VECBENCH_EXE) with Debian's Python (NumPy, torch).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")
SIGMA, SCALE = 10.0, 1000.0


def reference_mmd(x, y):
    """google-research/cmmd distance.mmd, in float64 NumPy."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    xx, yy = np.diag(x @ x.T), np.diag(y @ y.T)
    gamma = 1.0 / (2 * SIGMA**2)
    k_xx = np.mean(np.exp(-gamma * (-2 * x @ x.T + xx[:, None] + xx[None, :])))
    k_xy = np.mean(np.exp(-gamma * (-2 * x @ y.T + xx[:, None] + yy[None, :])))
    k_yy = np.mean(np.exp(-gamma * (-2 * y @ y.T + yy[:, None] + yy[None, :])))
    return SCALE * (k_xx + k_yy - 2 * k_xy)


def cmmd_pytorch(x, y):
    """cmmd-pytorch's distance.mmd (torch.matmul, diag, unsqueeze), on float64 tensors."""
    x, y = torch.from_numpy(np.asarray(x, np.float64)), torch.from_numpy(np.asarray(y, np.float64))
    x_sq, y_sq = torch.diag(torch.matmul(x, x.T)), torch.diag(torch.matmul(y, y.T))
    gamma = 1 / (2 * SIGMA**2)
    k_xx = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(x, x.T) + x_sq.unsqueeze(1) + x_sq.unsqueeze(0))))
    k_xy = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(x, y.T) + x_sq.unsqueeze(1) + y_sq.unsqueeze(0))))
    k_yy = torch.mean(torch.exp(-gamma * (-2 * torch.matmul(y, y.T) + y_sq.unsqueeze(1) + y_sq.unsqueeze(0))))
    return float(SCALE * (k_xx + k_yy - 2 * k_xy))


def unit_rows(n, shift, seed, d=768):
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, d)).astype(np.float32)
    x[:, 0] += shift
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class CmmdReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.a, cls.b = unit_rows(300, 0.0, 1), unit_rows(257, 3.0, 2)
        cls.pa, cls.pb = cls.path("a.npy"), cls.path("b.npy")
        np.save(cls.pa, cls.a)
        np.save(cls.pb, cls.b)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)

    def metrics(self, *args, ok=True, cache="cache"):
        out = self.path("m.json")
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([EXE, "metrics", *args, "--json", out], capture_output=True, text=True,
                           env=dict(os.environ, VECBENCH_CACHE=self.path(cache)))
        if ok:
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out) as f:
                return r, json.load(f)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertFalse(os.path.exists(out), "no result written")
        self.assertNotIn("CMMD", r.stdout)
        return r, None

    def test_equals_the_references_formula(self):
        r, j = self.metrics(self.pa, self.pb, "--cmmd")
        ref, port = reference_mmd(self.a, self.b), cmmd_pytorch(self.a, self.b)
        got = j["cmmd"]["value"]
        self.assertGreater(ref, 0.05)  # sets that differ: not a value lost in rounding
        self.assertLess(abs(got - ref), 1e-9, (got, ref))
        self.assertLess(abs(got - port), 1e-6, (got, port))
        self.assertEqual((j["cmmd"]["sigma"], j["cmmd"]["scale"]), (SIGMA, SCALE))
        self.assertEqual((j["cmmd"]["used_a"], j["cmmd"]["used_b"]), (300, 257))
        line = next(x for x in r.stdout.splitlines() if x.startswith("CMMD "))
        self.assertIn("sigma 10, scale 1000, 300 x 257 embeddings", line)
        self.assertAlmostEqual(float(line.split()[1]), ref, delta=1e-7)
        # only what was asked: no FID, KID or k-NN figure
        self.assertFalse({"fid", "kid", "prc", "prdc"} & set(j), sorted(j))
        # the same sets in the other order, and a set against itself
        self.assertLess(abs(self.metrics(self.pb, self.pa, "--cmmd")[1]["cmmd"]["value"] - ref), 1e-9)
        self.assertLess(abs(self.metrics(self.pa, self.pa, "--cmmd")[1]["cmmd"]["value"]), 1e-9)

    def test_each_sides_own_term_is_kept_and_read_back(self):
        # a reference's own term (N^2 kernel values) computed once: the next run reads it, same bits
        first = self.metrics(self.pa, self.pb, "--cmmd", cache="terms")[1]["cmmd"]
        self.assertEqual((first["own_terms"]["a"], first["own_terms"]["b"]), ("computed", "computed"))
        self.assertEqual(first["own_terms"]["cache"], os.path.join(self.path("terms"), "cmmd-terms"))
        self.assertEqual(len(os.listdir(self.path("terms/cmmd-terms"))), 2)
        r, j = self.metrics(self.pa, self.pb, "--cmmd", cache="terms")
        self.assertEqual((j["cmmd"]["own_terms"]["a"], j["cmmd"]["own_terms"]["b"]), ("cache", "cache"))
        self.assertEqual(j["cmmd"]["value"], first["value"])
        self.assertIn(f"{self.pb}'s own kernel term from the cache", r.stderr)
        # another set against the same reference: only the new side's term computed
        c = unit_rows(120, 1.0, 3)
        pc = self.path("c.npy")
        np.save(pc, c)
        j = self.metrics(pc, self.pb, "--cmmd", cache="terms")[1]["cmmd"]
        self.assertEqual((j["own_terms"]["a"], j["own_terms"]["b"]), ("computed", "cache"))
        self.assertLess(abs(j["value"] - reference_mmd(c, self.b)), 1e-9)
        # --no-cmmd-cache: both computed, nothing read or kept
        j = self.metrics(self.pa, self.pb, "--cmmd", "--no-cmmd-cache", cache="none")[1]["cmmd"]
        self.assertEqual((j["own_terms"]["a"], j["own_terms"]["b"], j["own_terms"]["cache"]),
                         ("computed", "computed", None))
        self.assertEqual(j["value"], first["value"])
        self.assertFalse(os.path.exists(self.path("none/cmmd-terms")))

    def test_batch_drops_the_remainder_as_the_reference_does(self):
        r, j = self.metrics(self.pa, self.pb, "--cmmd", "--cmmd-batch", "32")
        ref = reference_mmd(self.a[:288], self.b[:256])  # 9 and 8 full batches of 32
        self.assertLess(abs(j["cmmd"]["value"] - ref), 1e-9)
        self.assertGreater(abs(j["cmmd"]["value"] - reference_mmd(self.a, self.b)), 1e-6)
        self.assertEqual((j["cmmd"]["used_a"], j["cmmd"]["used_b"], j["cmmd"]["batch"]), (288, 256, 32))
        self.assertIn("batch 32: 12 + 1 embeddings past the last full batch left out", r.stdout)
        r, _ = self.metrics(self.pa, self.pb, "--cmmd-batch", "32", ok=False)
        self.assertIn("--cmmd-batch: is a setting of --cmmd", r.stderr)

    def test_rows_that_are_not_unit_vectors_are_said(self):
        raw = self.path("raw.npy")
        np.save(raw, self.b * 3.0)
        r, j = self.metrics(self.pa, raw, "--cmmd")
        self.assertIn("raw.npy: its embeddings are not unit vectors (L2 norms 3 to 3)", r.stderr)
        self.assertTrue(any("not unit vectors" in w for w in j["cmmd"]["warnings"]), j["cmmd"])
        self.assertLess(abs(j["cmmd"]["value"] - reference_mmd(self.a, self.b * 3.0)), 1e-9)  # computed all the same
        r, j = self.metrics(self.pa, self.pb, "--cmmd")
        self.assertEqual(j["cmmd"]["warnings"], [w for w in j["cmmd"]["warnings"] if "no fingerprint" in w])
        # the kernel means (minus 1) are the ones the value is made of
        c = j["cmmd"]
        self.assertAlmostEqual(1000 * (c["mean_aa_minus_1"] + c["mean_bb_minus_1"] - 2 * c["mean_ab_minus_1"]),
                               c["value"], delta=1e-9)

    def test_bad_sides_are_refused_by_name(self):
        narrow = self.path("narrow.npy")
        np.save(narrow, self.b[:, :512])
        r, _ = self.metrics(self.pa, narrow, "--cmmd", ok=False)
        self.assertIn("narrow.npy", r.stderr)
        self.assertIn("768 values", r.stderr)
        nan = self.path("nan.npy")
        x = self.b.copy()
        x[7, 3] = np.nan
        np.save(nan, x)
        r, _ = self.metrics(nan, self.pb, "--cmmd", ok=False)
        self.assertIn("nan.npy", r.stderr)
        self.assertIn("NaN", r.stderr)
        r, _ = self.metrics(self.pa, "--cmmd", ok=False)
        self.assertIn("compare two sides", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
