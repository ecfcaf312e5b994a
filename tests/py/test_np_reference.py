#!/usr/bin/env python3
"""Tests of tests/py/np_reference.py (the NumPy preprocessing reference).

Run from the repo root: /usr/bin/python3 tests/py/test_np_reference.py"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import np_reference as npr  # noqa: E402


class TestResize(unittest.TestCase):

    def test_tf_legacy_hand_example(self):
        # 2x2 -> 3x3: scale 2/3; src rows/cols 0, 2/3, 4/3 (-> clamped to the last row/col)
        img = np.array([[0.0, 10.0], [20.0, 30.0]], np.float32)
        t = 2.0 / 3.0
        want = np.array([[0.0, 10.0 * t, 10.0],
                         [20.0 * t, 10.0 * t + 20.0 * t, 10.0 + 20.0 * t],
                         [20.0, 20.0 + 10.0 * t, 30.0]], np.float32)
        # i.e. [[0, 6.667, 10], [13.333, 20, 23.333], [20, 26.667, 30]]
        got = npr.resize_tf_legacy(img, 3, 3)
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)

    def test_tf_legacy_downscale_picks_samples(self):
        # 4 -> 2: src = 0, 2 exactly: plain subsampling, no averaging
        img = np.arange(16, dtype=np.float32).reshape(4, 4)
        np.testing.assert_array_equal(npr.resize_tf_legacy(img, 2, 2), [[0.0, 2.0], [8.0, 10.0]])

    def test_half_pixel_downscale_averages(self):
        # 4 -> 2: src = 0.5, 2.5: mean of each 2x2 block
        img = np.arange(16, dtype=np.float32).reshape(4, 4)
        np.testing.assert_array_equal(npr.resize_bilinear(img, 2, 2), [[2.5, 4.5], [10.5, 12.5]])

    def test_half_pixel_upscale_clamps(self):
        # 2 -> 4: src = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (-> last column)
        img = np.array([[0.0, 8.0]], np.float32)
        np.testing.assert_allclose(npr.resize_bilinear(img, 1, 4), [[0.0, 2.0, 6.0, 8.0]], atol=1e-6)

    def test_identity_size(self):
        rng = np.random.default_rng(0)
        img = (rng.random((5, 7, 3)) * 255).astype(np.float32)
        for fn in (npr.resize_tf_legacy, npr.resize_bilinear):
            out = fn(img, 5, 7)
            self.assertEqual(out.dtype, np.float32)
            np.testing.assert_array_equal(out, img)

    def test_shapes_and_range(self):
        rng = np.random.default_rng(1)
        img = (rng.random((10, 20, 3)) * 255).astype(np.float32)
        for fn in (npr.resize_tf_legacy, npr.resize_bilinear):
            out = fn(img, 299, 299)
            self.assertEqual(out.shape, (299, 299, 3))
            self.assertGreaterEqual(out.min(), img.min() - 1e-3)
            self.assertLessEqual(out.max(), img.max() + 1e-3)

    def test_half_pixel_matches_torch_interpolate(self):
        # independent check of the half-pixel convention
        import torch
        import torch.nn.functional as F
        rng = np.random.default_rng(2)
        img = (rng.random((37, 53, 3)) * 255).astype(np.float32)
        for oh, ow in ((299, 299), (20, 11)):
            want = F.interpolate(torch.from_numpy(img.transpose(2, 0, 1)[None].copy()), size=(oh, ow),
                                 mode="bilinear", align_corners=False)[0].numpy().transpose(1, 2, 0)
            np.testing.assert_allclose(npr.resize_bilinear(img, oh, ow), want, atol=2e-3)


class TestCLI(unittest.TestCase):

    def test_end_to_end(self):
        import cv2
        import torch
        repo = os.path.abspath(os.path.join(HERE, "..", ".."))
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "m.pt")
            subprocess.run([sys.executable, os.path.join(repo, "tools", "export_inception.py"),
                            "--out", model, "--seed", "5"], check=True, stdout=subprocess.DEVNULL)
            red = np.zeros((40, 50, 3), np.uint8)
            red[:, :, 2] = 255  # BGR red
            rng = np.random.default_rng(3)
            noisy = rng.integers(0, 256, (300, 200, 3), dtype=np.uint8)
            paths = [os.path.join(tmp, "red.png"), os.path.join(tmp, "noisy.png")]
            cv2.imwrite(paths[0], red)
            cv2.imwrite(paths[1], noisy)
            out, inp = os.path.join(tmp, "f.npy"), os.path.join(tmp, "x.npy")
            cp = subprocess.run([sys.executable, os.path.join(HERE, "np_reference.py"), model, out,
                                 "--save-input", inp, *paths], stdout=subprocess.PIPE,
                                universal_newlines=True, check=True)
            self.assertIn("resize=tf-legacy", cp.stdout)  # default from the model's meta
            feats, x = np.load(out), np.load(inp)
            self.assertEqual(feats.shape, (2, 2048))
            self.assertEqual(feats.dtype, np.float32)
            self.assertTrue(np.isfinite(feats).all())
            self.assertEqual(x.shape, (2, 3, 299, 299))
            self.assertEqual(x.dtype, np.float32)
            np.testing.assert_array_equal(x[0, 0], 255.0)  # RGB order: red in channel 0
            np.testing.assert_array_equal(x[0, 1:], 0.0)
            np.testing.assert_array_equal(
                x[1], npr.resize_tf_legacy(noisy[:, :, ::-1].astype(np.float32)).transpose(2, 0, 1))
            m = torch.jit.load(model)
            with torch.no_grad():
                direct = m(torch.from_numpy(x)).numpy()
            rel = np.linalg.norm(direct - feats) / np.linalg.norm(feats)
            self.assertLess(rel, 1e-5)
            # an undecodable file is a clear error
            bad = os.path.join(tmp, "bad.png")
            with open(bad, "wb") as f:
                f.write(b"not an image")
            cp = subprocess.run([sys.executable, os.path.join(HERE, "np_reference.py"), model, out,
                                 "--resize", "bilinear", bad], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
            self.assertNotEqual(cp.returncode, 0)
            self.assertIn(bad, cp.stderr)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
