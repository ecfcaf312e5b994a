#!/usr/bin/env python3
"""Tests of tools/export_inception.py: --weights import (tf2015 and
torchvision), error reporting, metadata, the torchvision arch and --seed.

Run from the repo root: /usr/bin/python3 tests/py/test_export.py"""

import hashlib
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from ref_inception import (load_exported, random_images, random_state_dict,  # noqa: E402
                           rel_l2, run_export, tf2015_features)

torch.set_num_threads(2)
TOL = 1e-5


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def exported_state_dict(m):
    return {k: v for k, v in m.state_dict().items()
            if k not in ("input_div", "input_mean", "input_std", "classifier_weight", "classifier_bias")}


def export_random_weights(tmp, weights_name, out_name, seed, aux_logits):
    """A seeded tf2015 state_dict (1008 classes) saved as TMP/WEIGHTS_NAME and exported with
    --weights to TMP/OUT_NAME: (state_dict, weights path, export path, the export's process)."""
    sd = random_state_dict(seed=seed, num_classes=1008, aux_logits=aux_logits)
    sd_path, out = os.path.join(tmp, weights_name), os.path.join(tmp, out_name)
    torch.save(sd, sd_path)
    return sd, sd_path, out, run_export("--out", out, "--weights", sd_path)


def extra_npy(path, name):
    """An extra file of the export (a float32 .npy), read from the zip as vecbench reads it."""
    import io
    import zipfile
    import numpy as np
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("/extra/" + name))
        assert info.compress_type == zipfile.ZIP_STORED, info  # vecbench reads stored members only
        return torch.from_numpy(np.load(io.BytesIO(z.read(info))))


class TestTF2015Weights(unittest.TestCase):
    """tf2015 from a seeded state_dict vs the independent eager reference."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.sd, cls.sd_path, cls.out, cls.cp = export_random_weights(cls.tmp.name, "pt_inception-test.pth",
                                                                     "tf2015.pt", seed=1234, aux_logits=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_summary_line(self):
        lines = [l for l in self.cp.stdout.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, self.cp.stdout)
        self.assertIn(self.out, lines[0])

    def test_matches_reference(self):
        m, _ = load_exported(self.out)
        self.assertFalse(m.training)
        x = random_images(seed=7, n=2)
        with torch.no_grad():
            got = m(x.clone())
            ref = tf2015_features(self.sd, x.clone())
        self.assertEqual(tuple(got.shape), (2, 2048))
        self.assertEqual(got.dtype, torch.float32)
        self.assertTrue(torch.isfinite(got).all())
        # the random weights must give O(1) features for the check to mean something
        self.assertTrue(0.01 < float(ref.abs().mean()) < 100.0, float(ref.abs().mean()))
        err = rel_l2(got, ref)
        self.assertLessEqual(err, TOL, f"relative L2 error {err:.3g}")
        # a single image gives the same as its row in the batch
        with torch.no_grad():
            one = m(x[1:2].clone())
        self.assertLessEqual(rel_l2(one, ref[1:2]), TOL)

    def test_differs_from_torchvision_pooling(self):
        # sanity: the tf2015-specific pooling matters for the comparison above
        from torchvision.models.inception import Inception3
        net = Inception3(num_classes=1008, aux_logits=True, init_weights=False, transform_input=False)
        net.load_state_dict(self.sd)
        net.fc = torch.nn.Identity()
        net.eval()
        x = random_images(seed=8, n=1)
        with torch.no_grad():
            tv = net((x - 128.0) / 128.0)
            ref = tf2015_features(self.sd, x)
        self.assertGreater(rel_l2(tv, ref), 1e-3)

    def test_meta(self):
        _, meta = load_exported(self.out)
        self.assertEqual(meta["format_version"], 1)
        self.assertEqual(meta["arch"], "tf2015")
        self.assertEqual(meta["weight_source"], "weights:pt_inception-test.pth")
        self.assertEqual(meta["weight_sha256"], sha256_file(self.sd_path))
        self.assertEqual(meta["input_layout"], "NCHW float32 RGB 0..255")
        self.assertEqual(meta["input_size"], 299)
        self.assertEqual(meta["feature_dim"], 2048)
        self.assertEqual(meta["normalization"], "(x-128)/128")
        self.assertEqual(meta["resize_default"], "tf-legacy")
        self.assertEqual(meta["torch_version"], torch.__version__)
        self.assertRegex(meta["created_utc"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def _expect_failure(self, sd_or_path, *needles, name="bad.pth"):
        if isinstance(sd_or_path, str):
            path = sd_or_path
        else:
            path = os.path.join(self.tmp.name, name)
            torch.save(sd_or_path, path)
        out = os.path.join(self.tmp.name, "should_not_exist.pt")
        cp = run_export("--out", out, "--weights", path, check=False)
        self.assertNotEqual(cp.returncode, 0, cp.stdout)
        self.assertIn(path, cp.stderr)
        for n in needles:
            self.assertIn(n, cp.stderr)
        self.assertNotIn("Traceback", cp.stderr)
        self.assertFalse(os.path.exists(out))
        return cp.stderr

    def test_wrong_key(self):
        sd = dict(self.sd)
        sd["Mixed_6b.branch7x7_9.conv.weight"] = sd.pop("Mixed_6b.branch7x7_3.conv.weight")
        self._expect_failure(sd, "Mixed_6b.branch7x7_9.conv.weight", "Mixed_6b.branch7x7_3.conv.weight",
                             "missing", "unexpected", name="wrong_key.pth")

    def test_wrong_shape(self):
        sd = dict(self.sd)
        sd["Mixed_7c.branch_pool.bn.running_var"] = torch.ones(191)
        self._expect_failure(sd, "Mixed_7c.branch_pool.bn.running_var", "[192]", "[191]",
                             name="wrong_shape.pth")

    def test_not_a_state_dict(self):
        path = os.path.join(self.tmp.name, "garbage.pth")
        with open(path, "wb") as f:
            f.write(b"this is not a checkpoint")
        self._expect_failure(path)

    def test_missing_file(self):
        self._expect_failure(os.path.join(self.tmp.name, "nope.pth"), "no such file")


class TestClassifier(unittest.TestCase):
    """The classifier after pool_3 kept in the export (issue #49): the state_dict's fc, or a
    seeded one; the module's logits methods and the extra files agree with it."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.sd, _, cls.out, _ = export_random_weights(cls.tmp.name, "with_fc.pth", "fc.pt", seed=77, aux_logits=False)
        cls.x = random_images(seed=5, n=2)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_state_dicts_fc_is_kept_in_the_module_and_the_extra_files(self):
        m, meta = load_exported(self.out)
        w, b = self.sd["fc.weight"].float(), self.sd["fc.bias"].float()
        self.assertTrue(torch.equal(extra_npy(self.out, "vecbench_fc_weight.npy"), w))
        self.assertTrue(torch.equal(extra_npy(self.out, "vecbench_fc_bias.npy"), b))
        c = meta["classifier"]
        self.assertEqual(c["classes"], 1008)
        with torch.no_grad():
            pool, lu, lg = m(self.x.clone()), m.logits_unbiased(self.x.clone()), m.logits(self.x.clone())
        self.assertLess(rel_l2(lu, pool @ w.t()), 1e-6)
        self.assertLess(rel_l2(lg, pool @ w.t() + b), 1e-6)
        with open(self.out, "rb") as f:
            import zipfile
            z = zipfile.ZipFile(f)
            raw = b"".join(z.read(n) for n in sorted(z.namelist(), key=lambda n: not n.endswith("weight.npy"))
                           if n.endswith(("vecbench_fc_weight.npy", "vecbench_fc_bias.npy")))
        self.assertEqual(hashlib.sha256(raw).hexdigest(), c["sha256"])

    def test_weights_without_fc_have_no_classifier(self):
        sd = {k: v for k, v in self.sd.items() if not k.startswith("fc.")}
        src, out = os.path.join(self.tmp.name, "no_fc.pth"), os.path.join(self.tmp.name, "no_fc.pt")
        torch.save(sd, src)
        run_export("--out", out, "--weights", src)
        m, meta = load_exported(out)
        self.assertNotIn("classifier", meta)
        with self.assertRaises(Exception):
            m.logits_unbiased(self.x.clone())

    def test_a_seed_has_a_synthetic_classifier_of_its_own(self):
        outs = [os.path.join(self.tmp.name, f"s{i}.pt") for i in (3, 3, 4)]
        for o, seed in zip(outs, ("3", "3", "4")):
            run_export("--out", o, "--seed", seed)
        w = [extra_npy(o, "vecbench_fc_weight.npy") for o in outs]
        self.assertEqual(tuple(w[0].shape), (1008, 2048))
        self.assertTrue(torch.equal(w[0], w[1]))
        self.assertFalse(torch.equal(w[0], w[2]))
        m, _ = load_exported(outs[0])
        with torch.no_grad():
            lu = m.logits_unbiased(self.x.clone())
        self.assertGreater(float(lu.std()), 0.1)  # not a flat classifier: an Inception Score above 1


class TestTorchvisionArch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @staticmethod
    def torchvision_eager(sd):
        from torchvision.models import inception_v3
        net = inception_v3(weights=None, aux_logits=False, init_weights=False, transform_input=False)
        res = net.load_state_dict(sd, strict=False)
        assert not res.unexpected_keys, res
        assert set(res.missing_keys) <= {"fc.weight", "fc.bias"}, res
        net.fc = torch.nn.Identity()
        return net.eval()

    @staticmethod
    def tv_normalize(x):
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        return (x / 255.0 - mean) / std

    def test_seeded_export(self):
        out = os.path.join(self.tmp.name, "tv_seed.pt")
        run_export("--out", out, "--arch", "torchvision", "--seed", "3")
        m, meta = load_exported(out)
        self.assertFalse(m.training)
        self.assertEqual(meta["arch"], "torchvision")
        self.assertEqual(meta["weight_source"], "seed:3")
        self.assertEqual(meta["resize_default"], "bilinear")
        x = random_images(seed=11, n=2)
        with torch.no_grad():
            got = m(x.clone())
            ref = self.torchvision_eager(exported_state_dict(m))(self.tv_normalize(x))
        self.assertEqual(tuple(got.shape), (2, 2048))
        self.assertTrue(torch.isfinite(got).all())
        mean = float(got.mean())
        self.assertTrue(0.05 < mean < 20.0, mean)
        err = rel_l2(got, ref)
        self.assertLessEqual(err, TOL, f"relative L2 error {err:.3g}")

    def test_weights_wrapped_state_dict(self):
        # torchvision's checkpoint layout (1000 classes, AuxLogits), wrapped in {'state_dict': ...}
        sd = random_state_dict(seed=99, num_classes=1000, aux_logits=True)
        path = os.path.join(self.tmp.name, "inception_v3_test.pth")
        torch.save({"state_dict": sd}, path)
        out = os.path.join(self.tmp.name, "tv_w.pt")
        run_export("--out", out, "--arch", "torchvision", "--weights", path)
        m, meta = load_exported(out)
        self.assertEqual(meta["weight_source"], "weights:inception_v3_test.pth")
        self.assertEqual(meta["weight_sha256"], sha256_file(path))
        sd_noaux = {k: v for k, v in sd.items() if not k.startswith("AuxLogits.")}
        x = random_images(seed=12, n=1)
        with torch.no_grad():
            got = m(x.clone())
            ref = self.torchvision_eager(sd_noaux)(self.tv_normalize(x))
        err = rel_l2(got, ref)
        self.assertLessEqual(err, TOL, f"relative L2 error {err:.3g}")


class TestSeed(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.paths = {}
        for tag, extra in (("a0", ["--seed", "0"]), ("b0", []), ("c1", ["--seed", "1"])):
            p = os.path.join(cls.tmp.name, f"{tag}.pt")
            run_export("--out", p, *extra)  # "b0": no source given -> --seed 0
            cls.paths[tag] = p
        cls.x = random_images(seed=21, n=2)
        cls.feats, cls.meta = {}, {}
        for tag, p in cls.paths.items():
            m, meta = load_exported(p)
            with torch.no_grad():
                cls.feats[tag] = m(cls.x.clone())
            cls.meta[tag] = meta

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_same_seed_identical(self):
        self.assertTrue(torch.equal(self.feats["a0"], self.feats["b0"]))
        self.assertEqual(self.meta["a0"]["weight_sha256"], self.meta["b0"]["weight_sha256"])
        self.assertEqual(self.meta["b0"]["weight_source"], "seed:0")

    def test_different_seed_differs(self):
        self.assertGreater(rel_l2(self.feats["c1"], self.feats["a0"]), 1e-2)
        self.assertNotEqual(self.meta["a0"]["weight_sha256"], self.meta["c1"]["weight_sha256"])
        self.assertEqual(self.meta["c1"]["weight_source"], "seed:1")

    def test_o1_features(self):
        for tag, f in self.feats.items():
            self.assertEqual(tuple(f.shape), (2, 2048))
            self.assertTrue(torch.isfinite(f).all(), tag)
            mean = float(f.mean())
            self.assertTrue(0.05 < mean < 20.0, (tag, mean))
            self.assertLess(float(f.abs().max()), 1e3, tag)

    def test_seeded_matches_reference(self):
        # the synthetic model is a regular tf2015 model: same numbers as the reference
        m, meta = load_exported(self.paths["a0"])
        self.assertEqual(meta["arch"], "tf2015")
        sd = exported_state_dict(m)
        with torch.no_grad():
            ref = tf2015_features(sd, self.x.clone())
        self.assertLessEqual(rel_l2(self.feats["a0"], ref), TOL)


class TestOwnBlocks(unittest.TestCase):
    """tools/vecbench_export/inception_blocks.py (used where torchvision is missing, as on the GPU
    machine) builds the same network as torchvision's blocks: the same state_dict keys in the same
    order with the same shapes, the same seeded weights and the same features, bit for bit, for
    both architectures, scripted as the export scripts them."""

    def test_same_network_as_torchvision(self):
        import importlib
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
        from vecbench_export import arch, weights
        x = random_images(seed=5, n=2)
        theirs, seeded = {}, {}
        for name in ("tf2015", "torchvision"):
            theirs[name] = arch.make_features(name)
            seeded[name] = weights.seeded_state_dict(name, 3)
        hidden = {k: v for k, v in sys.modules.items() if k == "torchvision" or k.startswith("torchvision.")}
        try:  # arch.py again, as on a machine without torchvision
            for k in hidden:
                del sys.modules[k]
            sys.modules["torchvision"] = None  # import torchvision raises ImportError
            importlib.reload(arch)
            self.assertEqual(arch.tvi.__name__, "vecbench_export.inception_blocks")
            for name in ("tf2015", "torchvision"):
                ours = arch.make_features(name)
                self.assertEqual([(k, tuple(v.shape)) for k, v in theirs[name].state_dict().items()],
                                 [(k, tuple(v.shape)) for k, v in ours.state_dict().items()], name)
                mine = weights.seeded_state_dict(name, 3)
                self.assertTrue(all(torch.equal(seeded[name][k], mine[k]) for k in mine), name)
                ours.load_state_dict(theirs[name].state_dict())
                theirs[name].eval(), ours.eval()
                with torch.no_grad():
                    a, b = torch.jit.script(theirs[name])(x.clone()), torch.jit.script(ours)(x.clone())
                self.assertTrue(torch.equal(a, b), name)
        finally:
            del sys.modules["torchvision"]
            sys.modules.update(hidden)
            importlib.reload(arch)

if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
