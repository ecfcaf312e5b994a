#!/usr/bin/env python3
"""The encoders other than Inception-v3 against the tools themselves (issue #62): FD_DINOv2 and VGG-16.

Random weights in each file's own format are placed where the tools look for them, in a fresh
$TORCH_HOME/hub/checkpoints/: DINOv2 ViT-S/14 (dinov2_vits14_pretrain.pth, the hub checkpoint's keys
and shapes) and torchvision's VGG-16 (vgg16-397923af.pth). torch.hub.load('facebookresearch/dinov2')
finds its code in $TORCH_HOME/hub/facebookresearch_dinov2_main/, made here offline: a hubconf.py
that builds the network with the PyPI `dinov2` package (0.0.1.dev2, the fid-tools venv) as the hub's
backbones.py does (img_size 518, patch 14, layer scale 1.0, block_chunks 0, strict load). That code's
forward is the hub's: patch embedding, the position embedding interpolated with the 0.1 offset,
layer scale, the final norm and the CLS token (its attention is the explicit softmax the hub's SDPA
computes; test_the_reference_network_is_the_hub_checkpoints checks its keys and shapes against
vecbench's table of the hub's). Debian's torch 1.13 asks GitHub for the default branch before it
looks at its cache: the tools' driver names the branch instead (torch.hub._parse_repo_info), as
PyPI's torch 2.x does offline.

Two folders of real-photo crops (opencv-doc's photos): A at 256x256 (a downscale to 224), B at
160x160 (an upscale). Then:
- torch-fidelity 0.4.0's own calculate_metrics(feature_extractor='dinov2-vit-s-14', fid, kid, prc)
  against `vecbench metrics A B --like torch-fidelity --encoder dinov2-vit-s-14`: FD within 1e-4
  relative, KID within 1e-3, precision and recall equal;
- dgm-eval's and EDM2's protocols reproduced from their code (dgm-eval: PIL's bicubic resize of the
  PIL image to 224, ToTensor, Normalize; EDM2 resize_mode 'torch': F.interpolate(bicubic,
  antialias=True) on floats, x/255, normalize) through the same network: every vector within 1e-5
  and FD within 1e-4 of `vecbench fid --like dgm-eval|edm2 --encoder dinov2-vit-s-14`;
- torch-fidelity's default prc (VGG-16's fc2_relu) equal to `--like torch-fidelity --encoder vgg16 --prc`
  on the first 40 crops of each side;
- a checkpoint with a missing key, a mis-shaped key, a truncated file and the register variant's
  checkpoint under the plain one's name are refused naming the file and the key, nothing imported.

Run by ctest with Debian's Python (py.encoder_tools.*: the test names as arguments). Exit 77
(skipped) when the fid-tools venv is missing.
"""
import json
import os
import subprocess
import sys
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from vecbench_export import dinov2  # noqa: E402
from vecbench_export.encoders import seeded_vgg16  # noqa: E402
from fid_tools import PHOTOS, PY, VERSIONS, assert_refused, make_crops, run_vecbench  # noqa: E402
from reference_cache import Key, cached  # noqa: E402
import vecbench_store  # noqa: E402
import tool_inputs  # noqa: E402
import ctest_unittest  # noqa: E402  (a skipped test exits 77: ctest's "Skipped", never "Passed")

N = 100  # per side
# VGG-16's precision/recall on the first VGG_N of each side: its forward is 3.4x ViT-S/14's (31
# GFLOP), and the check is that vecbench's counts are torch-fidelity's, which 40 + 40 show as well.
VGG_N = 40
# ViT-S/14 in CI; VECBENCH_ENCODER=dinov2-vit-l-14 for the labelled run outside it (py-slow)
ENC = os.environ.get("VECBENCH_ENCODER", "dinov2-vit-s-14")
HUB_ENTRY = dinov2.DINOV2[ENC][0]
INPUTS = "encoder_tools" if ENC == "dinov2-vit-s-14" else f"encoder_tools-{ENC}"  # tool_inputs.py's folder
# The hub folder's hubconf.py: the hub's backbones.py, its network from the PyPI package.
HUBCONF = '''dependencies = ["torch"]
import os
import torch
from dinov2.models import vision_transformer as vits


def _make(arch, name, **kwargs):
    model = vits.__dict__[arch](patch_size=14, img_size=518, init_values=1.0, block_chunks=0, **kwargs)
    path = os.path.join(torch.hub.get_dir(), "checkpoints", name + "_pretrain.pth")
    model.load_state_dict(torch.load(path, map_location="cpu"), strict=True)
    return model


def dinov2_vits14(**kwargs):
    return _make("vit_small", "dinov2_vits14")


def dinov2_vitb14(**kwargs):
    return _make("vit_base", "dinov2_vitb14")


def dinov2_vitl14(**kwargs):
    return _make("vit_large", "dinov2_vitl14")


def dinov2_vitg14(**kwargs):
    return _make("vit_giant2", "dinov2_vitg14", ffn_layer="swiglufused")
'''
# Debian's torch 1.13 asks GitHub for a repository's default branch before its cache: name it.
OFFLINE_HUB = ("import torch.hub\n"
               "torch.hub._parse_repo_info = lambda github: (*github.split(':')[0].split('/'), 'main')\n")
# The protocols' own preprocessing, from dgm-eval's and EDM2's code, into the hub's network.
PROTOCOL_FEATURES = OFFLINE_HUB + '''import json, os, sys
import numpy as np, torch, torch.nn.functional as F
from PIL import Image
protocol, entry, sides = sys.argv[1], sys.argv[2], sys.argv[3:]  # then FOLDER OUT.npy, for each side
model = torch.hub.load("facebookresearch/dinov2", entry).eval()
mean = torch.tensor([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
listed = []
for folder, out in zip(sides[0::2], sides[1::2]):
    names = sorted(os.listdir(folder))
    feats = []
    with torch.no_grad():
        for n in names:
            im = Image.open(os.path.join(folder, n)).convert("RGB")
            if protocol == "dgm-eval":  # torchvision Resize((224, 224), BICUBIC) on the PIL image, ToTensor
                x = torch.from_numpy(np.array(im.resize((224, 224), Image.BICUBIC))).permute(2, 0, 1)[None].float() / 255
            else:  # EDM2 resize_mode 'torch': the uint8 image as floats, antialiased bicubic, then x / 255
                x = torch.from_numpy(np.array(im)).permute(2, 0, 1)[None]
                x = F.interpolate(x.to(torch.float32), size=(224, 224), mode="bicubic", antialias=True) / 255
            feats.append(model((x - mean) / std)[0].numpy())
    np.save(out, np.stack(feats).astype(np.float32))
    listed.append(names)
print(json.dumps(listed))
'''


def frechet(a, b):
    """The Fréchet distance of two feature matrices in float64 (symmetric square root by eigh)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    m1, m2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    w, v = np.linalg.eigh(s1)
    r1 = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    p = np.linalg.eigvalsh(r1 @ s2 @ r1)
    return float((m1 - m2) @ (m1 - m2) + np.trace(s1) + np.trace(s2) - 2 * np.sqrt(np.clip(p, 0, None)).sum())


def store_vectors(store):
    """{input file name: vector} of a store (tools/vecbench_store.py reads either format)."""
    return {os.path.basename(k): v for k, v in vecbench_store.store_vectors(store).items()}


def make_inputs(d):
    """What every test of this file reads: the two crop folders, the checkpoints, the tools' versions."""
    photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
    make_crops(os.path.join(d, "A"), photos[0::2], N, 256, 11)
    make_crops(os.path.join(d, "B"), photos[1::2], N, 160, 12)
    for side in "AB":
        tool_inputs.link_files(os.path.join(d, side), os.path.join(d, side + "-vgg"), first=VGG_N)
    ckpt = os.path.join(d, "checkpoints")
    os.makedirs(ckpt)
    torch.save(dinov2.seeded_checkpoint(ENC, 5), os.path.join(ckpt, dinov2.checkpoint_name(ENC)))
    torch.save(seeded_vgg16(6), os.path.join(ckpt, "vgg16-397923af.pth"))
    code = VERSIONS + "import dinov2; print(dinov2.__version__)\n"
    versions = subprocess.run([PY, "-c", code], capture_output=True, text=True).stdout if os.path.exists(PY) else ""
    with open(os.path.join(d, "versions.txt"), "w") as f:
        f.write(versions)


class EncoderTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        src, cls.tmp = tool_inputs.inputs(INPUTS, make_inputs)
        t = cls.tmp.name
        cls.a, cls.b = os.path.join(src, "A"), os.path.join(src, "B")
        cls.a_vgg, cls.b_vgg = os.path.join(src, "A-vgg"), os.path.join(src, "B-vgg")
        cls.torch_home = os.path.join(t, "torch")
        cls.ckpt = os.path.join(cls.torch_home, "hub", "checkpoints")
        tool_inputs.link_files(os.path.join(src, "checkpoints"), cls.ckpt)
        cls.dino = os.path.join(cls.ckpt, dinov2.checkpoint_name(ENC))
        cls.vgg = os.path.join(cls.ckpt, "vgg16-397923af.pth")
        hub = os.path.join(cls.torch_home, "hub", "facebookresearch_dinov2_main")
        os.makedirs(hub)
        with open(os.path.join(hub, "hubconf.py"), "w") as f:
            f.write(HUBCONF)
        cls.env = dict(os.environ, TORCH_HOME=cls.torch_home, VECBENCH_CACHE=os.path.join(t, "cache"),
                       XFORMERS_DISABLED="1")
        cls.env.pop("VECBENCH_MODELS", None)
        with open(os.path.join(src, "versions.txt")) as f:
            cls.versions = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def vb(self, *args, ok=True, env=None):
        return run_vecbench(args, env or self.env, ok)

    def tool(self, code, *args):
        r = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            raise AssertionError(f"the tool failed: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def key(self, name, weights, code, *extra, sides=None):
        a, b = sides or (self.a, self.b)
        k = Key(name).text("versions", self.versions).text("code", code).text("hubconf", HUBCONF)
        k = k.text("extra", "\n".join(extra))
        return k.folder("A", a).folder("B", b).file("weights", weights)

    def metrics(self, name, *args, sides=None):
        a, b = sides or (self.a, self.b)
        out = os.path.join(self.tmp.name, name + ".json")
        run = self.vb("metrics", a, b, *args, "--json", out)
        with open(out) as f:
            return json.load(f), run

    def test_torch_fidelity_dinov2(self):
        code = (OFFLINE_HUB + "import sys, json, torch_fidelity as tf\n"
                "m = tf.calculate_metrics(input1=sys.argv[1], input2=sys.argv[2], cuda=False, fid=True, kid=True,\n"
                "    kid_subsets=1, kid_subset_size=int(sys.argv[3]), prc=True, feature_extractor=sys.argv[4],\n"
                "    cache=False, verbose=False)\n"
                "print(json.dumps(m))\n")
        theirs = cached(self.key(f"torch-fidelity-{ENC}", self.dino, code, str(N)),
                        lambda: json.loads(self.tool(code, self.a, self.b, str(N), ENC).strip().splitlines()[-1]))
        ours, run = self.metrics("tf-dino", "--like", "torch-fidelity", "--encoder", ENC, "--fid", "--kid",
                                 "--kid-subsets", "1", "--kid-subset-size", str(N), "--prc")
        fd, kid = theirs["frechet_inception_distance"], theirs["kernel_inception_distance_mean"]
        self.assertAlmostEqual(ours["fid"] / fd, 1.0, delta=1e-4, msg=(ours["fid"], fd))
        self.assertAlmostEqual(ours["kid"]["mean"] / kid, 1.0, delta=1e-3, msg=(ours["kid"], kid))
        # torch-fidelity returns them as float32: equal counts are equal within its rounding
        self.assertAlmostEqual(ours["prc"]["precision"], theirs["precision"], delta=1e-6)
        self.assertAlmostEqual(ours["prc"]["recall"], theirs["recall"], delta=1e-6)
        self.assertEqual(ours["encoder"], ENC)
        self.assertIn(f"FD_DINOv2 ({ENC}, torch-fidelity) = ", run.stdout)
        print(f"torch-fidelity {ENC}: FD {fd!r} vecbench {ours['fid']!r} rel {ours['fid'] / fd - 1:.2e}; KID {kid!r} "
              f"vecbench {ours['kid']['mean']!r}; precision {theirs['precision']} recall {theirs['recall']}")

    def protocol(self, like):
        """The protocol's features by its own code and by vecbench: every vector and the FD."""
        outs = [os.path.join(self.tmp.name, f"{like}-{side}.npy") for side in "AB"]

        def run():  # both sides in one process: one network load
            names = json.loads(self.tool(PROTOCOL_FEATURES, like, HUB_ENTRY, self.a, outs[0], self.b,
                                         outs[1]).strip().splitlines()[-1])
            return {side: {"names": n, "features": np.load(o).tolist()} for side, n, o in zip("AB", names, outs)}

        r = cached(self.key(f"{like}-{ENC}", self.dino, PROTOCOL_FEATURES), run)
        theirs = {side: dict(zip(r[side]["names"], np.asarray(r[side]["features"], dtype=np.float32))) for side in "AB"}
        # `fid` on the folders vectorizes each into its store (the JSON names them): every vector
        # there against the protocol's own, then the FD
        out = os.path.join(self.tmp.name, f"{like}.json")
        run = self.vb("fid", self.a, self.b, "--like", like, "--encoder", ENC, "--json", out)
        with open(out) as f:
            ours = json.load(f)
        worst = 0.0
        for side, store in (("A", ours["a"]), ("B", ours["b"])):
            vectors = store_vectors(store)
            self.assertEqual(sorted(vectors), sorted(theirs[side]))
            for n, v in vectors.items():
                rel = float(np.abs(v - theirs[side][n]).max() / np.abs(theirs[side][n]).max())
                worst = max(worst, rel)
                self.assertLess(rel, 1e-5, (like, side, n))
        fd = frechet(np.stack([theirs["A"][n] for n in sorted(theirs["A"])]),
                     np.stack([theirs["B"][n] for n in sorted(theirs["B"])]))
        self.assertAlmostEqual(ours["fid"] / fd, 1.0, delta=1e-4, msg=(ours["fid"], fd))
        label = "dgm-eval" if like == "edm2-pil" else like
        self.assertEqual(ours["like"], label)
        self.assertIn(f"FD_DINOv2 ({ENC}, {label}) = ", run.stdout.strip().splitlines()[-1])
        print(f"{like}: FD {fd!r} vecbench {ours['fid']!r} rel {ours['fid'] / fd - 1:.2e}; "
              f"largest vector difference {worst:.2e} relative")
        return ours["fid"]

    def test_dgm_eval(self):
        fd = self.protocol("dgm-eval")
        # EDM2's resize_mode 'pil' is dgm-eval's preprocessing: the same preset, the same stores
        again = self.vb("fid", self.a, self.b, "--like", "edm2-pil", "--encoder", ENC)
        self.assertIn("0 to do", again.stderr)
        self.assertAlmostEqual(float(again.stdout.strip().split()[-1]) / fd, 1.0, delta=1e-9)  # printed to 10 digits

    def test_edm2(self):
        self.protocol("edm2")

    def test_torch_fidelity_vgg16_prc(self):
        code = ("import sys, json, torch_fidelity as tf\n"
                "m = tf.calculate_metrics(input1=sys.argv[1], input2=sys.argv[2], cuda=False, prc=True,\n"
                "    cache=False, verbose=False)\n"
                "print(json.dumps(m))\n")
        sides = (self.a_vgg, self.b_vgg)
        theirs = cached(self.key("torch-fidelity-vgg16-prc", self.vgg, code, sides=sides),
                        lambda: json.loads(self.tool(code, *sides).strip().splitlines()[-1]))
        ours, run = self.metrics("tf-vgg", "--like", "torch-fidelity", "--encoder", "vgg16", "--prc", sides=sides)
        # torch-fidelity returns them as float32: equal counts are equal within its rounding
        self.assertAlmostEqual(ours["prc"]["precision"], theirs["precision"], delta=1e-6)
        self.assertAlmostEqual(ours["prc"]["recall"], theirs["recall"], delta=1e-6)
        self.assertIn("[vgg16, torch-fidelity]", run.stdout)
        print(f"torch-fidelity vgg16 prc: precision {theirs['precision']} recall {theirs['recall']}; "
              f"vecbench {ours['prc']['precision']} {ours['prc']['recall']}")

    def bad_checkpoint(self, name, sd=None, raw=None, want=()):
        """A DINOv2 checkpoint that must be refused: vecbench names the file and `want`, imports nothing."""
        home = os.path.join(self.tmp.name, "bad-" + name)
        ckpt = os.path.join(home, "hub", "checkpoints")
        os.makedirs(ckpt)
        path = os.path.join(ckpt, dinov2.checkpoint_name(ENC))
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            torch.save(sd, path)
        cache = os.path.join(home, "cache")
        env = dict(self.env, TORCH_HOME=home, VECBENCH_CACHE=cache)
        out = os.path.join(home, "out")
        r = self.vb("vectorize", "--images", self.b, "--out", out, "--like", "dgm-eval", "--encoder", ENC, ok=False,
                    env=env)
        assert_refused(self, r, path, want, out, cache)
        return r.stderr

    def test_bad_checkpoints_are_refused_naming_the_key_or_file(self):
        good = dinov2.seeded_checkpoint(ENC, 5)
        missing = dict(good)
        del missing["blocks.3.ls2.gamma"]
        self.bad_checkpoint("missing", missing, want=("blocks.3.ls2.gamma", "missing"))
        shaped = dict(good, **{"blocks.0.attn.qkv.weight": torch.zeros(3 * 384, 383)})
        self.bad_checkpoint("shape", shaped, want=("blocks.0.attn.qkv.weight", "[1152, 383]", "[1152, 384]"))
        with open(self.dino, "rb") as f:
            raw = f.read()
        self.bad_checkpoint("truncated", raw=raw[:len(raw) // 2], want=("cannot be read",))
        reg = dict(good, register_tokens=torch.zeros(1, 4, 384))
        self.bad_checkpoint("registers", reg, want=("register_tokens", "dinov2_vits14_reg4"))
        larger = dinov2.seeded_checkpoint("dinov2-vit-b-14", 1)  # ViT-B/14's file under ViT-S/14's name
        self.bad_checkpoint("other-size", larger, want=("has shape",))

    def test_the_reference_network_is_the_hub_checkpoints(self):
        # the PyPI network the hub folder builds has exactly the hub checkpoint's keys and shapes for
        # each size (vecbench's table, which the import checks files against)
        code = ("import json, sys\n"
                "from dinov2.models import vision_transformer as vits\n"
                "out = {}\n"
                "for arch, ffn in (('vit_small', 'mlp'), ('vit_base', 'mlp'), ('vit_large', 'mlp')):\n"
                "    m = vits.__dict__[arch](patch_size=14, img_size=518, init_values=1.0, block_chunks=0,\n"
                "                            ffn_layer=ffn)\n"
                "    out[arch] = {k: list(v.shape) for k, v in m.state_dict().items()}\n"
                "print(json.dumps(out))\n")
        got = json.loads(self.tool(code).strip().splitlines()[-1])
        # (ViT-g/14's, 1.1 billion parameters, checked once by hand: its SwiGLU keys and shapes too)
        for arch, enc in (("vit_small", "dinov2-vit-s-14"), ("vit_base", "dinov2-vit-b-14"),
                          ("vit_large", "dinov2-vit-l-14")):
            self.assertEqual(got[arch], {k: list(v) for k, v in dinov2.expected_shapes(enc).items()}, enc)


if __name__ == "__main__":
    if sys.argv[1:] == ["--prepare"]:  # ctest's fixture py.encoder_tools.inputs
        tool_inputs.prepare(INPUTS, make_inputs)
        sys.exit(0)
    if not os.path.exists(PY):
        ctest_unittest.skip_all(f"no {PY} (tools/peers_setup.sh tensorflow makes it; CI does)")
    ctest_unittest.main()
