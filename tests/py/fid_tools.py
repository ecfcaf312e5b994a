#!/usr/bin/env python3
"""`vecbench fid --like TOOL` against the FID tools themselves (issue #46).

For pytorch-fid 0.3.0, torch-fidelity 0.4.0 and clean-fid 0.1.35's three modes (the venv of tools/peers_setup.sh: VECBENCH_VENVS,
default ~/.cache/vecbench/venvs/fid-tools): random Inception weights (tf2015 layout, batch norm
calibrated so that the features are O(1), fc of 1008 classes) are saved in the tool's own file
format (a torch.save'd state_dict) under the file name the tool downloads, in a fresh
$TORCH_HOME/hub/checkpoints/, where the tool finds it instead of downloading. Then the tool itself
(`python -m pytorch_fid A B`, `torch_fidelity.calculate_metrics`, clean-fid's feature and
distance functions) and `vecbench fid A B --like TOOL` run on the same two folders of real-photo crops (opencv-doc's photos; 200 PNGs of 256x256
in A, 200 of 320x320 in B, so that both an upscale and a downscale are exercised): FID equal
within 1e-4 relative; KID (torch-fidelity's and clean-fid's, over the whole sets: 200 is under
their subset sizes) within 1e-3 (their kernel matrices are float32). clean-fid's "clean" and
"legacy_tensorflow" modes run NVIDIA's TorchScript inception-2015-12-05.pt, which cannot be fetched
here: a stand-in in that file's format (nvidia_inception.py, the same random weights) in a folder
that $VECBENCH_MODELS names, given to clean-fid's own InceptionV3W. Also: the preset is imported
once and found again by its hash, and a weights file of the right name but the wrong content is
refused naming it.

Run by ctest (environment VECBENCH_EXE) with Debian's Python (torch 1.13), one test per tool
(py.fid_tools.pytorch_fid with clean-fid's legacy_pytorch mode, the same preset; .torch_fidelity,
.clean_fid_clean, .clean_fid_legacy_tensorflow: the test names as arguments), their inputs made once
by the fixture py.fid_tools.inputs (`fid_tools.py --prepare`, tool_inputs.py). Exit 77 (skipped) when
the venv is missing.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import unittest

import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from vecbench_export.weights import seeded_state_dict  # noqa: E402
from nvidia_inception import save_nvidia_inception  # noqa: E402
from reference_cache import Key, cached  # noqa: E402
import tool_inputs  # noqa: E402
import ctest_unittest  # noqa: E402  (a skipped test exits 77: ctest's "Skipped", never "Passed")

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")
VENV = os.path.join(os.environ.get("VECBENCH_VENVS", os.path.expanduser("~/.cache/vecbench/venvs")), "fid-tools")
PY = os.path.join(VENV, "bin", "python")
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"
N = 200  # per side: the "at least 200 fixed-size images"
# What the tools' numbers depend on besides their inputs (reference_cache.py's key).
VERSIONS = ("import importlib.metadata as m, sys\n"
            "def v(p):\n"
            "    try:\n"
            "        return m.version(p)\n"
            "    except m.PackageNotFoundError:\n"
            "        return None\n"
            "print(sys.version, [(p, v(p)) for p in ('pytorch-fid', 'torch-fidelity', 'clean-fid', 'torch',\n"
            "      'torchvision', 'numpy', 'scipy', 'pillow')])\n")


def make_crops(out, names, n, side, seed):
    """n square crops (20-100 % of the shorter side) of the photos `names`, Lanczos to side x side, PNG."""
    os.makedirs(out)
    rng = random.Random(seed)
    srcs = [Image.open(os.path.join(PHOTOS, f)).convert("RGB") for f in names]
    for i in range(n):
        im = srcs[rng.randrange(len(srcs))]
        s = int(min(im.size) * rng.uniform(0.2, 1.0))
        x, y = rng.randrange(im.size[0] - s + 1), rng.randrange(im.size[1] - s + 1)
        im.crop((x, y, x + s, y + s)).resize((side, side), Image.LANCZOS).save(os.path.join(out, f"{i:04d}.png"))


def run_vecbench(args, env, ok=True):
    """vecbench ARGS; an AssertionError with its output unless it exits 0 (or not `ok`)."""
    r = subprocess.run([EXE, *args], capture_output=True, text=True, env=env)
    if ok and r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def assert_refused(test, r, path, want, out, cache):
    """A bad weights file refused as the tests want it: a failing exit naming `path` and each of
    `want` on stderr, nothing written at `out`, no model imported into the cache folder `cache`."""
    test.assertNotEqual(r.returncode, 0)
    test.assertIn(path, r.stderr)
    for w in want:
        test.assertIn(w, r.stderr)
    test.assertFalse(os.path.exists(out), "nothing written")
    models = os.path.join(cache, "models")
    test.assertEqual([f for f in os.listdir(models) if f.endswith(".pt")] if os.path.isdir(models) else [], [])


def run_tool(code, args, env):
    """The Python code `code` in the tools' venv; its stdout (an AssertionError if it fails)."""
    r = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError(f"the tool failed: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def tool_weights(seed):
    """A state_dict in the tools' layout: the tf2015 backbone plus fc (1008 classes)."""
    sd = dict(seeded_state_dict("tf2015", seed))
    g = torch.Generator().manual_seed(seed)
    sd["fc.weight"] = torch.randn(1008, 2048, generator=g) * 0.01
    sd["fc.bias"] = torch.zeros(1008)
    return sd


def make_inputs(d):
    """What every test of this file reads: the two crop folders, the tools' weights files, NVIDIA's
    stand-in (its folder is $VECBENCH_MODELS for vecbench and given to clean-fid's InceptionV3W: the
    tool looks in /tmp, which a test must not write to, a user's real file may be there) and the
    weights it holds (for the reference key), and the tools' versions."""
    photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
    make_crops(os.path.join(d, "A"), photos[0::2], N, 256, 1)
    make_crops(os.path.join(d, "B"), photos[1::2], N, 320, 2)
    ckpt = os.path.join(d, "checkpoints")
    os.makedirs(ckpt)
    torch.save(tool_weights(7), os.path.join(ckpt, "pt_inception-2015-12-05-6726825d.pth"))
    torch.save(tool_weights(8), os.path.join(ckpt, "weights-inception-2015-12-05-6726825d.pth"))
    os.makedirs(os.path.join(d, "nvidia"))
    save_nvidia_inception(tool_weights(9), os.path.join(d, "nvidia", "inception-2015-12-05.pt"))
    torch.save(tool_weights(9), os.path.join(d, "nvidia-weights.pth"))
    versions = subprocess.run([PY, "-c", VERSIONS], capture_output=True, text=True).stdout if os.path.exists(PY) else ""
    with open(os.path.join(d, "versions.txt"), "w") as f:
        f.write(versions)


class FidTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        src, cls.tmp = tool_inputs.inputs("fid_tools", make_inputs)
        t = cls.tmp.name
        cls.a, cls.b = os.path.join(src, "A"), os.path.join(src, "B")
        cls.torch_home = os.path.join(t, "torch")
        cls.ckpt = os.path.join(cls.torch_home, "hub", "checkpoints")
        tool_inputs.link_files(os.path.join(src, "checkpoints"), cls.ckpt)
        cls.env = dict(os.environ, TORCH_HOME=cls.torch_home, VECBENCH_CACHE=os.path.join(t, "cache"))
        cls.env.pop("VECBENCH_MODELS", None)
        cls.nvidia = os.path.join(src, "nvidia")
        cls.nvidia_weights = os.path.join(src, "nvidia-weights.pth")
        with open(os.path.join(src, "versions.txt")) as f:
            cls.versions = f.read()

    def key(self, name, weights, *code):
        """The key of a tool's result: its code, the versions, both folders and the weights file it reads."""
        k = Key(name).text("versions", self.versions).text("code", "\n".join(code))
        return k.folder("A", self.a).folder("B", self.b).file("weights", os.path.join(self.ckpt, weights))

    def clean_fid_mode(self, mode, like):
        """clean-fid's FID and KID in `mode` on NVIDIA's file (the stand-in) against `vecbench fid --like`."""
        # clean-fid's own functions, as compute_fid calls them, its feature extractor made as
        # features.feature_extractor makes it, but from the stand-in's folder (it hard-codes /tmp)
        code = ("import sys, json, torch\n"
                "from cleanfid import fid\n"
                "from cleanfid.inception_torchscript import InceptionV3W\n"
                "mode, path = sys.argv[3], sys.argv[4]\n"
                "net = InceptionV3W(path, download=False, resize_inside=mode == 'legacy_tensorflow').eval()\n"
                "f = [fid.get_folder_features(d, lambda x: net(x), num_workers=0, batch_size=50,\n"
                "     device=torch.device('cpu'), mode=mode, verbose=False) for d in sys.argv[1:3]]\n"
                "try:\n"
                "    d = fid.fid_from_feats(f[0], f[1])\n"
                "except ValueError:  # its check of sqrtm's imaginary part (a random network's covariances):\n"
                "    import numpy as np                    # its frechet_distance, the real part taken\n"
                "    from scipy import linalg\n"
                "    m1, m2, s1, s2 = f[0].mean(0), f[1].mean(0), np.cov(f[0], rowvar=False), np.cov(f[1], rowvar=False)\n"
                "    d = (m1 - m2).dot(m1 - m2) + np.trace(s1) + np.trace(s2) - 2 * np.trace(linalg.sqrtm(s1.dot(s2), disp=False)[0].real)\n"
                "print(json.dumps({'fid': float(d), 'kid': fid.kernel_distance(f[0], f[1])}))\n")
        weights = os.path.join(self.nvidia, "inception-2015-12-05.pt")
        # the stand-in's bytes differ from save to save (TorchScript's archive): its weights and maker key it
        key = Key(f"clean-fid-{mode}").text("versions", self.versions).text("code", code)
        key = key.folder("A", self.a).folder("B", self.b).file("weights", self.nvidia_weights)
        key = key.file("maker", os.path.join(HERE, "nvidia_inception.py"))
        theirs = cached(key, lambda: json.loads(self.tool(code, self.a, self.b, mode, self.nvidia).strip().splitlines()[-1]))
        env = dict(self.env, VECBENCH_MODELS=self.nvidia)
        out = os.path.join(self.tmp.name, f"{like}.json")
        run = self.vb("fid", self.a, self.b, "--like", like, "--kid", "--json", out, env=env)
        with open(out) as f:
            ours = json.load(f)
        self.assertAlmostEqual(ours["fid"] / theirs["fid"], 1.0, delta=1e-4, msg=(ours["fid"], theirs))
        self.assertAlmostEqual(ours["kid"] / theirs["kid"], 1.0, delta=1e-3, msg=(ours["kid"], theirs))
        self.assertEqual(ours["like"], like)
        self.assertIn(weights, run.stderr.splitlines()[0])  # found where $VECBENCH_MODELS says
        print(f"clean-fid {mode} FID {theirs['fid']!r} vecbench {ours['fid']!r} "
              f"rel {ours['fid'] / theirs['fid'] - 1:.2e}; KID {theirs['kid']!r} vecbench {ours['kid']!r} "
              f"rel {ours['kid'] / theirs['kid'] - 1:.2e}")
        listed = self.vb("models", env=env).stdout
        self.assertIn(f"{like}: inception-2015-12-05.pt: {weights}", listed)

    def test_clean_fid(self):
        self.clean_fid_mode("clean", "clean-fid")

    def test_clean_fid_legacy_tensorflow(self):
        self.clean_fid_mode("legacy_tensorflow", "clean-fid-legacy-tensorflow")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def vb(self, *args, ok=True, env=None):
        return run_vecbench(args, env or self.env, ok)

    def tool(self, code, *args):
        return run_tool(code, args, self.env)

    def vecbench_fid(self, like, *extra):
        out = os.path.join(self.tmp.name, f"{like}.json")
        r = self.vb("fid", self.a, self.b, "--like", like, "--json", out, *extra)
        with open(out) as f:
            return json.load(f), r

    def test_pytorch_fid(self):
        # The tool's own command line, as a user runs it (weights from $TORCH_HOME, no download).
        def run_tool():
            r = subprocess.run([PY, "-m", "pytorch_fid", self.a, self.b, "--device", "cpu", "--num-workers", "0"],
                               capture_output=True, text=True, env=self.env)
            self.assertEqual(r.returncode, 0, r.stderr)
            return float(re.search(r"FID:\s+(\S+)", r.stdout).group(1))

        theirs = cached(self.key("pytorch-fid", "pt_inception-2015-12-05-6726825d.pth",
                                 "python -m pytorch_fid A B --device cpu --num-workers 0"), run_tool)
        ours, run = self.vecbench_fid("pytorch-fid")
        self.assertAlmostEqual(ours["fid"] / theirs, 1.0, delta=1e-4, msg=(ours["fid"], theirs))
        self.assertEqual(ours["like"], "pytorch-fid")
        self.assertFalse(ours["synthetic_weights"])
        self.assertIn("pytorch-fid", run.stderr.splitlines()[0])  # the first line says which model and why
        # Imported once: a second run finds the model by the weights' hash and resumes the stores.
        again = self.vb("fid", self.a, self.b, "--like", "pytorch-fid")
        self.assertNotIn("importing", again.stderr)
        self.assertIn(f"0 to do, {N} already done", again.stderr)
        self.assertEqual(again.stdout.strip().splitlines()[-1], run.stdout.strip().splitlines()[-1])
        print(f"pytorch-fid {theirs!r} vecbench {ours['fid']!r} rel {ours['fid'] / theirs - 1:.2e}")

    def test_torch_fidelity(self):
        # IS and precision/recall too (issue #49), all on its Inception (prc's default is VGG-16)
        code = ("import sys, json, torch_fidelity as tf\n"
                "m = tf.calculate_metrics(input1=sys.argv[1], input2=sys.argv[2], cuda=False, fid=True, kid=True,\n"
                "    kid_subsets=1, kid_subset_size=int(sys.argv[3]), isc=True, prc=True,\n"
                "    feature_extractor='inception-v3-compat', cache=False, verbose=False)\n"
                "print(json.dumps(m))\n")
        theirs = cached(self.key("torch-fidelity", "weights-inception-2015-12-05-6726825d.pth", code, str(N)),
                        lambda: json.loads(self.tool(code, self.a, self.b, str(N)).strip().splitlines()[-1]))
        ours, _ = self.vecbench_fid("torch-fidelity", "--kid", "--kid-subsets", "1", "--kid-subset-size", str(N))
        fid, kid = theirs["frechet_inception_distance"], theirs["kernel_inception_distance_mean"]
        self.assertAlmostEqual(ours["fid"] / fid, 1.0, delta=1e-4, msg=(ours["fid"], fid))
        self.assertAlmostEqual(ours["kid"] / kid, 1.0, delta=1e-3, msg=(ours["kid"], kid))
        self.assertEqual(ours["like"], "torch-fidelity")
        print(f"torch-fidelity FID {fid!r} vecbench {ours['fid']!r} rel {ours['fid'] / fid - 1:.2e}; "
              f"KID {kid!r} vecbench {ours['kid']!r} rel {ours['kid'] / kid - 1:.2e}")
        # `vecbench metrics` on the same stores: IS from the stored vectors and the imported classifier
        out = os.path.join(self.tmp.name, "metrics-tf.json")
        self.vb("metrics", self.a, self.b, "--like", "torch-fidelity", "--isc", "--prc", "--json", out)
        with open(out) as f:
            m = json.load(f)
        isc = theirs["inception_score_mean"]
        self.assertAlmostEqual(m["isc"]["mean"] / isc, 1.0, delta=1e-5, msg=(m["isc"], isc))
        self.assertAlmostEqual(m["isc"]["std"], theirs["inception_score_std"], delta=1e-5 * isc)
        self.assertAlmostEqual(m["prc"]["precision"], theirs["precision"], delta=1e-6)
        self.assertAlmostEqual(m["prc"]["recall"], theirs["recall"], delta=1e-6)
        again = os.path.join(self.tmp.name, "metrics-tf-store.json")
        self.vb("metrics", m["a"], "--isc", "--json", again)  # A's store alone: its preset's classifier
        with open(again) as f:
            self.assertEqual(json.load(f)["isc"]["mean"], m["isc"]["mean"])
        print(f"torch-fidelity IS {isc!r} vecbench {m['isc']['mean']!r}; precision {theirs['precision']!r} "
              f"{m['prc']['precision']!r}, recall {theirs['recall']!r} {m['prc']['recall']!r}")

    def test_clean_fid_legacy_pytorch(self):
        # clean-fid's own functions, as compute_fid and compute_kid call them (one feature pass for
        # both): its legacy_pytorch mode loads pytorch-fid's weights file from $TORCH_HOME.
        code = ("import sys, json, numpy as np, torch\n"
                "from cleanfid import fid, features\n"
                "m = features.build_feature_extractor('legacy_pytorch', torch.device('cpu'))\n"
                "f = [fid.get_folder_features(d, m, num_workers=0, batch_size=50, device=torch.device('cpu'),\n"
                "     mode='legacy_pytorch', verbose=False) for d in sys.argv[1:3]]\n"
                "print(json.dumps({'fid': fid.fid_from_feats(f[0], f[1]), 'kid': fid.kernel_distance(f[0], f[1])}))\n")
        theirs = cached(self.key("clean-fid-legacy-pytorch", "pt_inception-2015-12-05-6726825d.pth", code),
                        lambda: json.loads(self.tool(code, self.a, self.b).strip().splitlines()[-1]))
        ours, _ = self.vecbench_fid("clean-fid-legacy-pytorch", "--kid")
        self.assertAlmostEqual(ours["fid"] / theirs["fid"], 1.0, delta=1e-4, msg=(ours["fid"], theirs))
        self.assertAlmostEqual(ours["kid"] / theirs["kid"], 1.0, delta=1e-3, msg=(ours["kid"], theirs))
        self.assertEqual(ours["like"], "pytorch-fid")  # the same preset, the same stores
        print(f"clean-fid legacy_pytorch FID {theirs['fid']!r} vecbench {ours['fid']!r} "
              f"rel {ours['fid'] / theirs['fid'] - 1:.2e}; KID {theirs['kid']!r} vecbench {ours['kid']!r} "
              f"rel {ours['kid'] / theirs['kid'] - 1:.2e}")

    def test_presets_are_not_mixed(self):
        few = os.path.join(self.tmp.name, "few")  # 8 images: this is about the fingerprints, not the figures
        os.makedirs(few)
        for f in sorted(os.listdir(self.a))[:8]:
            shutil.copy(os.path.join(self.a, f), few)
        sa, sb = os.path.join(self.tmp.name, "sa"), os.path.join(self.tmp.name, "sb")
        self.vb("vectorize", "--like", "pytorch-fid", "--images", few, "--out", sa, "--format", "shards",
                "--progress", "0")
        self.vb("vectorize", "--like", "torch-fidelity", "--images", few, "--out", sb, "--format", "shards",
                "--progress", "0")
        with open(os.path.join(sa, "vecbench.json")) as f:
            self.assertEqual(json.load(f)["fingerprint"]["like"], "pytorch-fid")
        r = self.vb("fid", sa, sb, ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("like", r.stderr)
        r = self.vb("fid", sa, sa, "--like", "torch-fidelity", ok=False)
        self.assertIn("not like torch-fidelity", r.stderr)
        r = self.vb("vectorize", "--like", "pytorch-fid", "--resize", "tf-legacy", "--images", few, "--out",
                    os.path.join(self.tmp.name, "sc"), ok=False)
        self.assertIn("--resize", r.stderr)
        self.assertIn("pytorch-fid", r.stderr)

    def test_a_file_of_the_right_name_but_the_wrong_content_is_refused(self):
        home = os.path.join(self.tmp.name, "bad-torch")
        ckpt = os.path.join(home, "hub", "checkpoints")
        os.makedirs(ckpt)
        bad = os.path.join(ckpt, "pt_inception-2015-12-05-6726825d.pth")
        torch.save({"conv.weight": torch.zeros(3)}, bad)
        env = dict(self.env, TORCH_HOME=home)
        r = self.vb("fid", self.a, self.b, ok=False, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn(bad, r.stderr)
        self.assertIn("not usable as pytorch-fid's Inception weights", r.stderr)
        listed = self.vb("models", env=env).stdout
        self.assertIn(bad, listed)
        self.assertIn("torch-fidelity", listed)


if __name__ == "__main__":
    if sys.argv[1:] == ["--prepare"]:  # ctest's fixture py.fid_tools.inputs
        tool_inputs.prepare("fid_tools", make_inputs)
        sys.exit(0)
    if not os.path.exists(PY):
        ctest_unittest.skip_all(f"no {PY} (tools/peers_setup.sh tensorflow makes it; CI does)")
    ctest_unittest.main()
