#!/usr/bin/env python3
"""An installed vecbench without its source tree (issue #64): `cmake --install BUILD --prefix P`
into a fresh prefix, then P/bin/vecbench run with the source tree (and the build folder inside
it) hidden under an empty tmpfs in a private mount namespace (`unshare --mount`: what moving the
tree away does, without moving the tree the other tests run from):
- `vectorize` on the embedded defaults: the default model and the plugins from P;
- `vectorize --like pytorch-fid` with pytorch-fid's weights file (random weights in its format) in
  $TORCH_HOME: the import runs P/share/vecbench/tools/export_inception.py;
- `report` of a result file: the plots by P/share/vecbench/tools/plot_results.py.
Needs root's CAP_SYS_ADMIN for the mount (CI runs as root); exits 77 (ctest: skipped) without it.

Run by ctest (py.install_check: VECBENCH_BUILD_DIR, VECBENCH_SOURCE_DIR) with Debian's Python.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from vecbench_export.weights import seeded_state_dict  # noqa: E402
import check_skips  # noqa: E402  (its can_mount: the same test that allows this file's skip)
import ctest_unittest  # noqa: E402

BUILD = os.path.abspath(os.environ.get("VECBENCH_BUILD_DIR", "build"))
SOURCE = os.path.abspath(os.environ.get("VECBENCH_SOURCE_DIR", os.path.join(HERE, "..", "..")))
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"


def can_mount():
    """CAP_SYS_ADMIN (tools/check_skips.py's test: the mount needs it) and an `unshare` to run."""
    return check_skips.can_mount() and shutil.which("unshare") is not None


class InstalledWithoutTheTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        if os.path.commonpath([t, SOURCE]) == SOURCE:
            raise AssertionError(f"the scratch folder {t} is inside the source tree {SOURCE}")
        cls.prefix = os.path.join(t, "prefix")
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"cmake --install failed:\n{r.stdout}\n{r.stderr}")
        cls.exe = os.path.join(cls.prefix, "bin", "vecbench")
        # inputs outside the tree: three photos, pytorch-fid's weights file, a result file
        cls.images = os.path.join(t, "images")
        os.makedirs(cls.images)
        for f in ("baboon.jpg", "fruits.jpg", "HappyFish.jpg"):
            shutil.copy(os.path.join(PHOTOS, f), cls.images)
        cls.torch_home = os.path.join(t, "torch")
        ckpt = os.path.join(cls.torch_home, "hub", "checkpoints")
        os.makedirs(ckpt)
        sd = dict(seeded_state_dict("tf2015", 3))
        sd["fc.weight"] = torch.randn(1008, 2048, generator=torch.Generator().manual_seed(3)) * 0.01
        sd["fc.bias"] = torch.zeros(1008)
        torch.save(sd, os.path.join(ckpt, "pt_inception-2015-12-05-6726825d.pth"))
        cls.result = os.path.join(t, "base.json")
        shutil.copy(os.path.join(SOURCE, "tests", "data", "compare", "base.json"), cls.result)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def hidden(self, *args, env=None):
        """P/bin/vecbench ARGS with the source tree an empty tmpfs (a private mount namespace)."""
        script = 'mount -t tmpfs -o size=1m vecbench-hidden "$0" && test -z "$(ls -A "$0")" && exec "$@"'
        env = dict(os.environ, **(env or {}), VECBENCH_CACHE=os.path.join(self.tmp.name, "cache"))
        for k in ("VECBENCH_MODELS", "VECBENCH_TORCH_LIBRARY", "VECBENCH_OPENCV_LIBRARY"):
            env.pop(k, None)
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, SOURCE,
                               self.exe, *args], capture_output=True, text=True, env=env, cwd=self.tmp.name)

    def test_the_prefix_holds_the_binary_its_plugins_tools_and_models(self):
        for rel in ("bin/vecbench", "lib/vecbench/libvecbench_torch.so", "share/vecbench/tools/export_inception.py",
                    "share/vecbench/tools/export_encoder.py", "share/vecbench/tools/plot_results.py",
                    "share/vecbench/tools/vecbench_export/cli.py", "share/vecbench/models/inception_tf2015_seed0.pt"):
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, rel)), rel)

    def test_the_default_command_runs_on_the_prefixs_model(self):
        out = os.path.join(self.tmp.name, "out-default")
        r = self.hidden("vectorize", "--images", self.images, "--out", out, "--progress", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        vectors = sorted(glob.glob(os.path.join(out, "*.npy")))
        self.assertEqual(len(vectors), 3, r.stderr)
        # the model it ran can only be the prefix's copy (the build folder's is hidden): the same
        # fingerprint and the same vectors, byte for byte, as the build folder's binary gives
        built = os.path.join(self.tmp.name, "out-built")
        b = subprocess.run([os.path.join(BUILD, "vecbench"), "vectorize", "--images", self.images, "--out", built,
                            "--progress", "0"], capture_output=True, text=True)
        self.assertEqual(b.returncode, 0, b.stderr)
        with open(os.path.join(out, "vecbench.json")) as f, open(os.path.join(built, "vecbench.json")) as g:
            self.assertEqual(json.load(f)["fingerprint"], json.load(g)["fingerprint"])
        for v in vectors:
            with open(v, "rb") as x, open(os.path.join(built, os.path.basename(v)), "rb") as y:
                self.assertEqual(x.read(), y.read(), os.path.basename(v))

    def test_an_import_runs_the_prefixs_tool(self):
        out = os.path.join(self.tmp.name, "out-like")
        r = self.hidden("vectorize", "--like", "pytorch-fid", "--images", self.images, "--out", out, "--progress",
                        "0", env={"TORCH_HOME": self.torch_home})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("importing pytorch-fid's weights", r.stderr)
        with open(os.path.join(out, "vecbench.json")) as f:
            self.assertEqual(json.load(f)["fingerprint"]["like"], "pytorch-fid")

    def test_report_plots_with_the_prefixs_tool(self):
        out = os.path.join(self.tmp.name, "report")
        r = self.hidden("report", self.result, "--out", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, "report.md")))
        self.assertTrue(glob.glob(os.path.join(out, "*.png")), os.listdir(out))


if __name__ == "__main__":
    if not can_mount():
        ctest_unittest.skip_all("cannot mount over the source tree here (needs CAP_SYS_ADMIN: root; CI runs as root)")
    ctest_unittest.main()
