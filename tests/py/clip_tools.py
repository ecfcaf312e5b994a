#!/usr/bin/env python3
"""CLIP's image towers against torch-fidelity 0.4 itself (issue #65).

Random weights in OpenAI's file format (a TorchScript archive of the whole model's modules holding
fp16 tensors: the image tower's keys and shapes, and text-side keys the import must skip) are put
where torch-fidelity keeps them ($TORCH_HOME/hub/checkpoints/clip-vit-b-32-<sha256>.pt). Two
folders of real-photo crops (opencv-doc's photos), A at 256x256 and B at 160x160. Then:
- torch-fidelity's own calculate_metrics(feature_extractor='clip-vit-b-32', fid, kid) against
  `vecbench metrics A B --like torch-fidelity --encoder clip-vit-b-32 --fid --kid`: FD within 1e-4
  relative, KID within 1e-3 (ViT-B/32: 4.4 GMAC an image; ctest's py.clip_tools.vit_l14 runs this
  test alone with VECBENCH_CLIP_ENCODER=clip-vit-l-14 on VECBENCH_CLIP_N=16 crops a side, the ViT-L
  keys and shapes are checked against torch-fidelity's own network);
- clean-fid's own compute_fid(model_name='clip_vit_b_32') against `--like clean-fid --encoder
  clip-vit-b-32` within 1e-4, and its get_folder_features on photos of odd and even margins, a
  portrait, a gray PNG against the exported protocol's vectors within 1e-5;
- vecbench's exported network gives torch-fidelity's network's features bit for bit on images at
  the input size (where TF1's resize is the identity);
- CMMD's protocol (the centre square, Pillow's bicubic on the uint8 image, CLIP's mean/std, the
  embedding L2-normalized) equals google-research/cmmd's io_util preprocessing in Python and the
  same network run by PyTorch within 1e-5, on photos of odd and even margins, a portrait, a gray PNG;
- a file of another size under the 336 px one's name, a truncated file and an archive whose
  data.pkl names a function are refused naming the file and the cause, nothing imported.

Run by ctest with Debian's Python; exit 77 (skipped) when the fid-tools venv is missing.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from vecbench_export import clip  # noqa: E402
from fid_tools import PHOTOS, PY, VERSIONS, assert_refused, make_crops, run_vecbench  # noqa: E402
from reference_cache import Key, cached  # noqa: E402
import ctest_unittest  # noqa: E402
import vecbench_store  # noqa: E402

N = int(os.environ.get("VECBENCH_CLIP_N", "100"))  # per side
# ViT-B/32 by default; VECBENCH_CLIP_ENCODER=clip-vit-l-14 (ctest py.clip_tools.vit_l14: ~18x the cost of a forward)
ENC = os.environ.get("VECBENCH_CLIP_ENCODER", "clip-vit-b-32")
TF_FILE = {"clip-vit-b-32": "clip-vit-b-32-40d365715913c9da98579312b702a82c18be219cc2a73407c4526f58eba950af.pt",
           "clip-vit-l-14": "clip-vit-l-14-b8cca3fd41ae0c99ba7e8951adf17d267cdb84cd88be6f7c2e0eca1737a03836.pt",
           "clip-vit-l-14-336px":
           "clip-vit-l-14-336px-3035c92b350959924f9f00213499208652fc7ea050643e8b385c2dac08641f02.pt"}


def text_tower(embed, width=64, context=8, vocab=16):
    """A whole text tower of one block, small: OpenAI's clip.load builds the model from the file's
    keys and loads it strictly (clean-fid), torch-fidelity reads text_projection's width."""
    g = torch.Generator().manual_seed(3)
    shapes = {"positional_embedding": (context, width), "text_projection": (width, embed),
              "token_embedding.weight": (vocab, width), "ln_final.weight": (width,), "ln_final.bias": (width,),
              "logit_scale": ()}
    block = {"attn.in_proj_weight": (3 * width, width), "attn.in_proj_bias": (3 * width,),
             "attn.out_proj.weight": (width, width), "attn.out_proj.bias": (width,), "ln_1.weight": (width,),
             "ln_1.bias": (width,), "mlp.c_fc.weight": (4 * width, width), "mlp.c_fc.bias": (4 * width,),
             "mlp.c_proj.weight": (width, 4 * width), "mlp.c_proj.bias": (width,), "ln_2.weight": (width,),
             "ln_2.bias": (width,)}
    shapes.update({"transformer.resblocks.0." + k: v for k, v in block.items()})
    return {k: (torch.randn(s, generator=g) * 0.02).half() for k, s in shapes.items()}


def openai_archive(encoder, seed, path):
    """Random weights in OpenAI's format: a TorchScript archive of nested modules holding fp16
    tensors under the full model's key names (the image tower, and a small text tower)."""
    sd = {k: v.half() for k, v in clip.seeded_visual(encoder, seed).items()}
    sd.update(text_tower(clip.CLIP[encoder][5]))
    root = nn.Module()
    for key, v in sd.items():
        *path_, leaf = key.split(".")
        m = root
        for p in path_:
            if not hasattr(m, p):
                m.add_module(p, nn.Module())
            m = getattr(m, p)
        m.register_parameter(leaf, nn.Parameter(v, requires_grad=False))
    torch.jit.script(root).save(path)


class ClipTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
        cls.a, cls.b = os.path.join(t, "A"), os.path.join(t, "B")
        make_crops(cls.a, photos[0::2], N, 256, 21)
        make_crops(cls.b, photos[1::2], N, 160, 22)
        cls.torch_home = os.path.join(t, "torch")
        ckpt = os.path.join(cls.torch_home, "hub", "checkpoints")
        os.makedirs(ckpt)
        cls.weights = os.path.join(ckpt, TF_FILE[ENC])
        openai_archive(ENC, 7, cls.weights)
        cls.env = dict(os.environ, TORCH_HOME=cls.torch_home, VECBENCH_CACHE=os.path.join(t, "cache"))
        cls.env.pop("VECBENCH_MODELS", None)
        cls.versions = subprocess.run([PY, "-c", VERSIONS], capture_output=True, text=True).stdout

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def tool(self, code, *args):
        r = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            raise AssertionError(f"the tool failed: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r.stdout.strip().splitlines()[-1]

    def test_torch_fidelity_clip(self):
        code = ("import sys, json, torch_fidelity as tf\n"
                "m = tf.calculate_metrics(input1=sys.argv[1], input2=sys.argv[2], cuda=False, fid=True, kid=True,\n"
                "    kid_subsets=1, kid_subset_size=int(sys.argv[3]), feature_extractor=sys.argv[4],\n"
                "    cache=False, verbose=False)\n"
                "print(json.dumps(m))\n")
        key = (Key(f"torch-fidelity-{ENC}").text("versions", self.versions).text("code", code)
               .folder("A", self.a).folder("B", self.b).file("weights", self.weights))
        theirs = cached(key, lambda: json.loads(self.tool(code, self.a, self.b, str(N), ENC)))
        out = os.path.join(self.tmp.name, "m.json")
        run = run_vecbench(["metrics", self.a, self.b, "--like", "torch-fidelity", "--encoder", ENC, "--fid",
                            "--kid", "--kid-subsets", "1", "--kid-subset-size", str(N),
                            "--allow-synthetic-weights", "--json", out], self.env)
        with open(out) as f:
            ours = json.load(f)
        fd, kid = theirs["frechet_inception_distance"], theirs["kernel_inception_distance_mean"]
        self.assertAlmostEqual(ours["fid"] / fd, 1.0, delta=1e-4, msg=(ours["fid"], fd))
        self.assertAlmostEqual(ours["kid"]["mean"] / kid, 1.0, delta=1e-3, msg=(ours["kid"], kid))
        self.assertIn(f"FD_CLIP ({ENC}, torch-fidelity) = ", run.stdout)
        self.assertEqual(ours["encoder"], ENC)
        print(f"torch-fidelity {ENC}: FD {fd!r} vecbench {ours['fid']!r} rel {ours['fid'] / fd - 1:.2e}; "
              f"KID {kid!r} vecbench {ours['kid']['mean']!r}")

    def test_the_network_is_torch_fidelitys(self):
        model = os.path.join(self.tmp.name, "b32.pt")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tools", "export_encoder.py"), "--encoder", ENC,
                        "--protocol", "torch-fidelity", "--weights", self.weights, "--out", model], check=True)
        code = ("import sys, torch\n"
                "from torch_fidelity.feature_extractor_clip import FeatureExtractorCLIP, CLIPVisual\n"
                "fe = FeatureExtractorCLIP(sys.argv[1], ['clip'], feature_extractor_weights_path=sys.argv[2]).eval()\n"
                "ours = torch.jit.load(sys.argv[3])\n"
                "x = (torch.rand(3, 3, 224, 224, generator=torch.Generator().manual_seed(0)) * 255).to(torch.uint8)\n"
                "with torch.no_grad():\n"
                "    a, b = fe(x)[0], ours(x.float())\n"
                "shapes = {}\n"
                "for name, (embed, size, layers, width, patch) in {'clip-vit-l-14': (768, 224, 24, 1024, 14),\n"
                "        'clip-vit-l-14-336px': (768, 336, 24, 1024, 14)}.items():\n"
                "    m = CLIPVisual(embed, size, layers, width, patch)\n"
                "    shapes[name] = {k: list(v.shape) for k, v in m.state_dict().items()}\n"
                "print(json.dumps({'equal': torch.equal(a, b), 'max': float((a - b).abs().max()), 'shapes': shapes}))\n")
        got = json.loads(self.tool("import json\n" + code, ENC, self.weights, model))
        self.assertTrue(got["equal"], got["max"])
        for name, shapes in got["shapes"].items():  # torch-fidelity's own network, each ViT-L size
            self.assertEqual(shapes, {k: list(v) for k, v in clip.expected_shapes(name).items()}, name)

    def photos(self):
        """Landscape photos of odd and even margins, a portrait and a gray PNG (made once)."""
        from PIL import Image
        photos = os.path.join(self.tmp.name, "P")
        if os.path.isdir(photos):
            return photos
        os.makedirs(photos)
        for f in ("Blender_Suzanne1.jpg", "HappyFish.jpg", "aloeL.jpg", "apple.jpg"):
            os.symlink(os.path.join(PHOTOS, f), os.path.join(photos, f))
        im = Image.open(os.path.join(PHOTOS, "aero1.jpg"))
        im.crop((100, 0, 333, 451)).save(os.path.join(photos, "portrait.png"))
        im.convert("L").save(os.path.join(photos, "gray.png"))
        return photos

    def test_clean_fid_clip(self):
        # clean-fid 0.1.35's own compute_fid(model_name="clip_vit_b_32") on the two folders, and its
        # get_folder_features on the photos (torchvision's Resize(224) + CenterCrop(224) on the PIL
        # image: odd and even margins, a portrait, a gray PNG), against `--like clean-fid --encoder
        # clip-vit-b-32` and the exported protocol's vectors. OpenAI's clip.load finds ViT-B-32.pt in
        # ~/.cache/clip (HOME here), where vecbench's preset looks too.
        home = os.path.join(self.tmp.name, "home")
        cache = os.path.join(home, ".cache", "clip")
        os.makedirs(cache)
        weights = os.path.join(cache, "ViT-B-32.pt")
        if ENC == "clip-vit-b-32":
            os.link(self.weights, weights)
        else:
            openai_archive("clip-vit-b-32", 7, weights)
        env = dict(self.env, HOME=home)
        photos = self.photos()
        # clip.load compares the file's SHA-256 with OpenAI's and downloads again when they differ
        # (a random file's never match): the comparison alone is replaced, the file is what it reads
        code = ("import sys, os, json, torch\n"
                "import clip.clip\n"
                "clip.clip._download = lambda url, root: os.path.join(root, os.path.basename(url))\n"
                "from cleanfid import fid\n"
                "from cleanfid.clip_features import CLIP_fx, img_preprocess_clip\n"
                "cpu = torch.device('cpu')\n"
                "score = fid.compute_fid(sys.argv[1], sys.argv[2], model_name='clip_vit_b_32', num_workers=0,\n"
                "    device=cpu, verbose=False)\n"
                "feats = fid.get_folder_features(sys.argv[3], CLIP_fx('ViT-B/32', device=cpu), num_workers=0,\n"
                "    batch_size=4, device=cpu, custom_fn_resize=img_preprocess_clip, verbose=False)\n"
                "print(json.dumps({'fid': float(score), 'feats': feats.tolist()}))\n")
        versions = subprocess.run([PY, "-c", "import importlib.metadata as m; print(m.version('openai-clip'), "
                                   "m.version('ftfy'))"], capture_output=True, text=True).stdout
        key = (Key("clean-fid-clip-vit-b-32").text("versions", self.versions + versions).text("code", code)
               .folder("A", self.a).folder("B", self.b).folder("P", photos).file("weights", weights))

        def theirs_now():
            r = subprocess.run([PY, "-c", code, self.a, self.b, photos], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                raise AssertionError(f"clean-fid failed: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            return json.loads(r.stdout.strip().splitlines()[-1])
        theirs = cached(key, theirs_now)
        out = os.path.join(self.tmp.name, "clean-fid.json")
        run = run_vecbench(["metrics", self.a, self.b, "--like", "clean-fid", "--encoder", "clip-vit-b-32", "--fid",
                            "--allow-synthetic-weights", "--json", out], env)
        with open(out) as f:
            ours = json.load(f)
        self.assertAlmostEqual(ours["fid"] / theirs["fid"], 1.0, delta=1e-4, msg=(ours["fid"], theirs["fid"]))
        self.assertIn("FD_CLIP (clip-vit-b-32, clean-fid) = ", run.stdout)
        # each vector: the protocol exported, its resize mode by default
        model, store = os.path.join(self.tmp.name, "b32-clean-fid.pt"), os.path.join(self.tmp.name, "S-clean-fid")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tools", "export_encoder.py"), "--encoder",
                        "clip-vit-b-32", "--protocol", "clean-fid", "--weights", weights, "--out", model], check=True)
        run_vecbench(["vectorize", "--images", photos, "--out", store, "--model", model, "--progress", "0"], env)
        ours_v = {os.path.basename(k): v for k, v in vecbench_store.store_vectors(store).items()}
        names = sorted(ours_v)
        self.assertEqual(len(names), len(theirs["feats"]))
        worst = 0.0
        for n, v in zip(names, theirs["feats"]):
            v = np.array(v, np.float32)
            worst = max(worst, float(np.abs(ours_v[n] - v).max() / np.abs(v).max()))
        self.assertLess(worst, 1e-5)
        print(f"clean-fid CLIP-FID: {theirs['fid']!r} vecbench {ours['fid']!r} "
              f"rel {ours['fid'] / theirs['fid'] - 1:.2e}; vectors within {worst:.1e} of the largest")

    def test_cmmd_protocol_is_the_references_preprocessing(self):
        # google-research/cmmd's io_util on each file: PIL open (no conversion), the centre square,
        # Pillow's bicubic on the uint8 image, grayscale tiled to three channels, x / 255, CLIP's
        # mean/std (scenic's normalize_image), the embedding L2-normalized; the network run by
        # PyTorch (torch-fidelity's). Landscape photos of odd and even margins, a portrait, a gray PNG.
        photos = self.photos()
        model, store = os.path.join(self.tmp.name, "b32-cmmd.pt"), os.path.join(self.tmp.name, "S-cmmd")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tools", "export_encoder.py"), "--encoder", ENC,
                        "--protocol", "cmmd", "--weights", self.weights, "--out", model], check=True)
        run_vecbench(["vectorize", "--images", photos, "--out", store, "--model", model, "--progress", "0"], self.env)
        ours = {os.path.basename(k): v for k, v in vecbench_store.store_vectors(store).items()}
        code = ("import sys, json, os, numpy as np, torch\n"
                "from PIL import Image\n"
                "from torch_fidelity.feature_extractor_clip import FeatureExtractorCLIP\n"
                "visual = FeatureExtractorCLIP(sys.argv[1], ['clip'], feature_extractor_weights_path=sys.argv[2])"
                ".eval().model.visual\n"
                "mean = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)\n"
                "std = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)\n"
                "out = {}\n"
                "for n in sorted(os.listdir(sys.argv[3])):\n"
                "    im = Image.open(os.path.join(sys.argv[3], n)); im.load()\n"
                "    w, h = im.size; l = min(w, h); top, left = (h - l) // 2, (w - l) // 2\n"
                "    im = im.crop((left, top, left + l, top + l)).resize((224, 224), resample=Image.BICUBIC)\n"
                "    x = np.asarray(im).astype(np.float32)\n"
                "    if x.ndim == 2: x = np.tile(x[..., np.newaxis], (1, 1, 3))\n"
                "    x = (x / 255.0 - mean) / std\n"
                "    with torch.no_grad():\n"
                "        e = visual(torch.from_numpy(x).permute(2, 0, 1)[None])[0]\n"
                "    out[n] = (e / e.norm()).tolist()\n"
                "print(json.dumps(out))\n")
        ref = json.loads(self.tool(code, ENC, self.weights, photos))
        self.assertEqual(sorted(ours), sorted(ref))
        for n, v in ref.items():
            self.assertLess(float(np.abs(ours[n] - np.array(v, np.float32)).max()), 1e-5, n)
            self.assertAlmostEqual(float(np.linalg.norm(ours[n].astype(np.float64))), 1.0, delta=1e-6)
        # --cmmd embeds with CLIP ViT-L/14@336px: a store of another encoder is refused by name
        r = run_vecbench(["metrics", store, store, "--cmmd"], self.env, ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("holds clip-vit-b-32 features, not clip-vit-l-14-336px", r.stderr)
        self.assertNotIn("CMMD", r.stdout)
        # the crop matters: the same network on the whole image resized differs
        whole = os.path.join(self.tmp.name, "S-whole")
        run_vecbench(["vectorize", "--images", photos, "--out", whole, "--model", model, "--resize", "pil-bicubic-u8",
                      "--progress", "0"], self.env)
        other = {os.path.basename(k): v for k, v in vecbench_store.store_vectors(whole).items()}
        self.assertGreater(float(np.abs(other["aloeL.jpg"] - ours["aloeL.jpg"]).max()), 1e-3)

    def refused(self, name, make, want):
        home = os.path.join(self.tmp.name, "bad-" + name)
        ckpt = os.path.join(home, "hub", "checkpoints")
        os.makedirs(ckpt)
        path = os.path.join(ckpt, TF_FILE["clip-vit-l-14-336px"])
        make(path)
        cache, out = os.path.join(home, "cache"), os.path.join(home, "out")
        env = dict(self.env, TORCH_HOME=home, VECBENCH_CACHE=cache)
        r = run_vecbench(["vectorize", "--images", self.b, "--out", out, "--like", "torch-fidelity", "--encoder",
                          "clip-vit-l-14-336px"], env, ok=False)
        assert_refused(self, r, path, want, out, cache)

    def test_bad_files_are_refused_naming_the_file_and_cause(self):
        def other_size(path):  # ViT-B/32's file under the 336 px one's name
            os.link(self.weights, path)

        def truncated(path):
            with open(self.weights, "rb") as f:
                raw = f.read()
            with open(path, "wb") as f:
                f.write(raw[:len(raw) // 2])

        def code_in_it(path):  # data.pkl naming a function: never called, refused
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("m/data.pkl", b"cos\nsystem\n(S'true'\ntR.")
                z.writestr("m/version", "3\n")

        def shared(path):  # one module object under two names at every level: 2^40 paths, refused at once
            import pickle
            import types
            top, mod = types.ModuleType("__torch__"), types.ModuleType("__torch__.m")
            top.m = mod
            sys.modules.update({"__torch__": top, "__torch__.m": mod})

            class M:
                def __init__(self, **attrs):
                    self.attrs = attrs

                def __getstate__(self):
                    return self.attrs
            M.__module__, M.__qualname__ = "__torch__.m", "M"
            mod.M = M
            node = M(training=True)
            for _ in range(40):
                node = M(a=node, b=node)
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("m/data.pkl", pickle.dumps(node, protocol=2))
            del sys.modules["__torch__.m"], sys.modules["__torch__"]

        self.refused("other-size", other_size, ("visual.class_embedding has shape [768]", "needs [1024]"))
        self.refused("shared", shared, ("share or nest beyond a model's",))
        self.refused("truncated", truncated, ("truncated or damaged",))
        self.refused("code", code_in_it, ("names os.system", "only modules and tensors"))


if __name__ == "__main__":
    if not os.path.exists(PY):
        ctest_unittest.skip_all(f"no {PY} (tools/peers_setup.sh makes it; CI does)")
    ctest_unittest.main()
