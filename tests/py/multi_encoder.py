#!/usr/bin/env python3
"""Several encoders from one decode (issue #62): `vectorize --encoders ENC[:TOOL],... --out OUT`.

On real-photo crops (opencv-doc's photos, two sizes) with DINOv2 ViT-S/14 (random weights in the hub
checkpoint's format, in a fresh $TORCH_HOME) in dgm-eval's pipeline and the build's Inception-v3:
- each encoder's store OUT/ENC holds, byte for byte, the vectors and the fingerprint of that
  encoder's own run, and `verify OUT` checks both stores;
- a store that is ahead (half its inputs done by a run of that encoder alone) is resumed on its
  own: the run does the other half there and every input in the other store, one line each;
- a run killed (it aborts right after its 6th image reached both stores: tests/vecbench_fault.cpp's
  VECBENCH_TEST_DIE_AFTER) and run again redoes no finished input of either store: one ok line per input in each, the vectors
  of the encoders' own runs;
- DINOv2's vectors (the LibTorch route) are the same bytes at batch 1, 4, 5 and 7 (a short last
  batch), on one or two replicas, with one or two threads, data-parallel or sequential.

Run by ctest with Debian's Python (torch 1.13 makes the checkpoint).
"""
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from vecbench_export import dinov2  # noqa: E402

sys.path.insert(0, HERE)
from fid_tools import tool_weights  # noqa: E402

EXE = os.environ.get("VECBENCH_EXE", "build/vecbench")
# vecbench with a fault around the writer (tests/vecbench_fault.cpp): VECBENCH_TEST_DIE_AFTER=N aborts after N images
FAULT_EXE = os.environ.get("VECBENCH_FAULT_EXE", "build/tests/vecbench_fault")
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"
ENC = "dinov2-vit-s-14"
N = 48
ENCODERS = f"{ENC}:dgm-eval,inception-v3"


def ok_records(store):
    """Every ok manifest line of a store, over all its manifests (a line torn by a kill is skipped:
    the next writer cuts it)."""
    for m in glob.glob(os.path.join(store, "manifest*.jsonl")):
        with open(m) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("status") == "ok":
                    yield r


def ok_outputs(store):
    """{input: the output file its (last) ok line names}."""
    return {r["input"]: os.path.join(store, r["output"]) for r in ok_records(store)}


def ok_lines(store):
    """{input: number of ok lines}."""
    seen = {}
    for r in ok_records(store):
        seen[r["input"]] = seen.get(r["input"], 0) + 1
    return seen


class MultiEncoder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.images = os.path.join(t, "images")
        os.makedirs(cls.images)
        rng = random.Random(5)
        photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
        for i in range(N):  # crops of 256 and of 160 pixels: a downscale and an upscale to 224
            im = Image.open(os.path.join(PHOTOS, photos[rng.randrange(len(photos))])).convert("RGB")
            s = int(min(im.size) * rng.uniform(0.3, 1.0))
            x, y = rng.randrange(im.size[0] - s + 1), rng.randrange(im.size[1] - s + 1)
            side = 256 if i % 2 else 160
            im.crop((x, y, x + s, y + s)).resize((side, side), Image.LANCZOS).save(os.path.join(cls.images, f"{i:03d}.png"))
        ckpt = os.path.join(t, "torch", "hub", "checkpoints")
        os.makedirs(ckpt)
        torch.save(dinov2.seeded_checkpoint(ENC, 2), os.path.join(ckpt, dinov2.checkpoint_name(ENC)))
        # pytorch-fid's weights there too: `vectorize` without --like still runs the build's model, and
        # so must `--encoders inception-v3` (a tool's preset only when named: inception-v3:pytorch-fid)
        torch.save(tool_weights(7), os.path.join(ckpt, "pt_inception-2015-12-05-6726825d.pth"))
        cls.env = dict(os.environ, TORCH_HOME=os.path.join(t, "torch"), VECBENCH_CACHE=os.path.join(t, "cache"))
        cls.env.pop("VECBENCH_MODELS", None)
        # each encoder alone: the references
        cls.alone = {ENC: os.path.join(t, "alone-dino"), "inception-v3": os.path.join(t, "alone-inception")}
        cls.vb("vectorize", "--images", cls.images, "--out", cls.alone[ENC], "--like", "dgm-eval", "--encoder", ENC)
        cls.vb("vectorize", "--images", cls.images, "--out", cls.alone["inception-v3"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def vb(cls, *args, ok=True):
        r = subprocess.run([EXE, *args, "--format", "npy", "--progress", "0"] if args[0] == "vectorize" else [EXE, *args],
                           capture_output=True, text=True, env=cls.env)
        if ok and r.returncode != 0:
            raise AssertionError(f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def assert_same_as_alone(self, out):
        for enc, ref in self.alone.items():
            store = os.path.join(out, enc)
            with open(os.path.join(store, "vecbench.json")) as f, open(os.path.join(ref, "vecbench.json")) as g:
                self.assertEqual(json.load(f)["fingerprint"], json.load(g)["fingerprint"], enc)
            lines = ok_lines(store)
            self.assertEqual(len(lines), N, enc)
            self.assertEqual(set(lines.values()), {1}, f"{enc}: an input with more than one ok line")
            mine, theirs = ok_outputs(store), ok_outputs(ref)
            self.assertEqual(sorted(mine), sorted(theirs), enc)
            for name in sorted(mine):
                with open(mine[name], "rb") as a, open(theirs[name], "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{enc}: {name}")

    def test_one_decode_gives_each_encoder_its_own_runs_vectors(self):
        out = os.path.join(self.tmp.name, "multi")
        r = self.vb("vectorize", "--images", self.images, "--out", out, "--encoders", ENCODERS)
        self.assertIn("each decoded once for 2 encoders", r.stderr)
        self.assertIn("encoders=2", r.stdout)
        self.assert_same_as_alone(out)
        v = self.vb("verify", out)
        self.assertIn(f"verify {os.path.join(out, ENC)}: {N} vectors checked, 0 bad", v.stdout)
        self.assertIn(f"verify {os.path.join(out, 'inception-v3')}: {N} vectors checked, 0 bad", v.stdout)
        # the figures read each encoder's store of the folder
        m = self.vb("metrics", out, out, "--encoder", ENC, "--fid", "--prc")
        self.assertIn(f"FD_DINOv2 ({ENC}, dgm-eval) = ", m.stdout)
        bad = self.vb("vectorize", "--images", self.images, "--out", out, "--encoders", ENC + "," + ENC, ok=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("named twice", bad.stderr)

    def test_dinov2_vectors_do_not_depend_on_batch_threads_or_strategy(self):
        # the reference ran on this machine's default route; 48 inputs at batch 7 end in a short batch
        for i, route in enumerate((["--batch", "1", "--devices", "cpu"], ["--batch", "7", "--devices", "cpu/2"],
                                   ["--batch", "5", "--devices", "cpu", "--threads", "2", "--strategy", "sequential"])):
            out = os.path.join(self.tmp.name, f"route{i}")
            self.vb("vectorize", "--images", self.images, "--out", out, "--like", "dgm-eval", "--encoder", ENC, *route)
            mine, theirs = ok_outputs(out), ok_outputs(self.alone[ENC])
            self.assertEqual(sorted(mine), sorted(theirs))
            for name in mine:
                with open(mine[name], "rb") as a, open(theirs[name], "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{route}: {name}")

    def test_each_store_resumes_on_its_own(self):
        out = os.path.join(self.tmp.name, "ahead")
        half = os.path.join(self.tmp.name, "half.txt")
        names = sorted(os.listdir(self.images))
        with open(half, "w") as f:
            f.write("".join(os.path.join(self.images, n) + "\n" for n in names[: N // 2]))
        self.vb("vectorize", "--images", half, "--out", os.path.join(out, ENC), "--like", "dgm-eval", "--encoder", ENC)
        r = self.vb("vectorize", "--images", self.images, "--out", out, "--encoders", ENCODERS)
        self.assertIn(f"{os.path.join(out, ENC)}: {ENC} (dgm-eval; ", r.stderr)
        self.assertIn(f": {N - N // 2} to do, {N // 2} already done", r.stderr)
        self.assertIn(f": {N} to do, 0 already done", r.stderr)
        self.assert_same_as_alone(out)

    def test_a_killed_run_redoes_no_finished_input(self):
        out = os.path.join(self.tmp.name, "killed")
        kill_at = 6  # the process aborts (as a crash) right after its 6th image reached both stores
        r = subprocess.run([FAULT_EXE, "vectorize", "--images", self.images, "--out", out, "--encoders", ENCODERS,
                            "--format", "npy", "--progress", "0", "--batch", "1", "--devices", "cpu"],
                           capture_output=True, text=True, env=dict(self.env, VECBENCH_TEST_DIE_AFTER=str(kill_at)))
        self.assertLess(r.returncode, 0, r.stderr)  # killed by SIGABRT
        self.assertIn("dying on purpose", r.stderr)
        before = {enc: ok_lines(os.path.join(out, enc)) for enc in self.alone}
        for enc, lines in before.items():
            self.assertGreaterEqual(len(lines), kill_at, enc)
            self.assertLess(len(lines), N, enc)
        print(f"aborted after {len(before['inception-v3'])} Inception and {len(before[ENC])} DINOv2 vectors on disk")
        r = self.vb("vectorize", "--images", self.images, "--out", out, "--encoders", ENCODERS)
        for enc in self.alone:
            self.assertIn(f"{N - len(before[enc])} to do, {len(before[enc])} already done", r.stderr, enc)
        self.assert_same_as_alone(out)

if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
