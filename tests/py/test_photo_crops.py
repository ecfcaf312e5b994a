#!/usr/bin/env python3
"""tools/make_photo_crops.py: the set does not depend on where its sources were unpacked (sorted by
name, then content), and a pinned set is checked: other sources are refused before anything is
written, the crops against their checksums after (issue #63). Needs Pillow (python3-pil)."""
import io
import os
import random
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
try:
    from PIL import Image
    import make_photo_crops as mpc
except ImportError:  # no Pillow in this Python
    mpc = None


def picture(path, seed, size=(96, 72)):
    """A noisy (not flat) picture."""
    rng = random.Random(seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    im = Image.new("RGB", size)
    im.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(size[0] * size[1])])
    im.save(path)


@unittest.skipIf(mpc is None, "needs Pillow")
class PhotoCrops(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.pinned = mpc.PINNED
        mpc.PINNED = os.path.join(self.tmp, "pinned")
        pkg = os.path.join(self.tmp, "a", "photos", "usr", "share")
        # a Plasma wallpaper in two variants of one size (one source: the first in name order), others by name
        picture(os.path.join(pkg, "wallpapers", "Foo", "contents", "images", "96x72.png"), 1)
        picture(os.path.join(pkg, "wallpapers", "Foo", "contents", "images_dark", "96x72.png"), 2)
        picture(os.path.join(pkg, "wallpapers", "Bar", "contents", "images", "96x72.png"), 3)
        picture(os.path.join(pkg, "backgrounds", "zebra.jpg"), 4)
        picture(os.path.join(self.tmp, "a", "doc", "apple.png"), 5)
        picture(os.path.join(self.tmp, "a", "doc", "flat.png"), 6, (8, 8))  # under --min-side
        # the same files unpacked elsewhere, deeper, and named in the other order
        shutil.copytree(os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b", "deep", "er"))
        self.first = [os.path.join(self.tmp, "a", "photos"), os.path.join(self.tmp, "a", "doc")]
        self.second = [os.path.join(self.tmp, "b", "deep", "er", d) for d in ("doc", "photos")]

    def tearDown(self):
        mpc.PINNED = self.pinned
        shutil.rmtree(self.tmp)

    def main(self, *args):
        """make_photo_crops's main with ARGS: (exit message or None, stdout)."""
        argv, sys.argv = sys.argv, ["make_photo_crops.py", "--count", "12", "--min-side", "64", *args]
        out = io.StringIO()
        try:
            with redirect_stdout(out):
                mpc.main()
            return None, out.getvalue()
        except SystemExit as e:
            return str(e.code), out.getvalue()
        finally:
            sys.argv = argv

    def test_sources_sorted_by_name_wherever_unpacked(self):
        a = mpc.sources(self.first, 64, 10.0)
        b = mpc.sources(self.second, 64, 10.0)
        self.assertEqual([s["name"] for s in a], ["Bar/96x72.png", "Foo/96x72.png", "apple.png", "zebra.jpg"])
        self.assertEqual([(s["name"], s["sha256"]) for s in a], [(s["name"], s["sha256"]) for s in b])
        self.assertTrue(a[1]["found_as"].endswith(os.path.join("Foo", "contents", "images", "96x72.png")))

    def test_a_pinned_set_is_checked(self):
        err, out = self.main("--out", os.path.join(self.tmp, "c1"), "--write-manifest", *self.first)
        self.assertIsNone(err)
        err, out = self.main("--out", os.path.join(self.tmp, "c2"), *self.second)
        self.assertIsNone(err, out)
        self.assertIn("every crop the same bits", out)
        with open(os.path.join(self.tmp, "c1", "crop_00003.jpg"), "rb") as f, \
                open(os.path.join(self.tmp, "c2", "crop_00003.jpg"), "rb") as g:
            self.assertEqual(f.read(), g.read())
        # other options: another set, said and not checked
        err, out = self.main("--out", os.path.join(self.tmp, "c3"), "--seed", "1", *self.second)
        self.assertIsNone(err)
        self.assertIn("not the pinned set", out)
        # a source changed: refused before anything is written
        picture(os.path.join(self.tmp, "b", "deep", "er", "doc", "apple.png"), 7)
        err, _ = self.main("--out", os.path.join(self.tmp, "c4"), *self.second)
        self.assertIn("source with other contents: apple.png", err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "c4")))
        # a folder that is not empty: refused
        err, _ = self.main("--out", os.path.join(self.tmp, "c1"), *self.first)
        self.assertIn("is not empty", err)

    def test_crops_other_than_pinned_are_refused(self):
        self.main("--out", os.path.join(self.tmp, "c1"), "--write-manifest", *self.first)
        with open(os.path.join(mpc.PINNED, "crops.sha256")) as f:
            lines = f.read().splitlines()
        lines[2] = "0" * 64 + lines[2][64:]  # as if another Pillow had encoded crop_00002 otherwise
        with open(os.path.join(mpc.PINNED, "crops.sha256"), "w") as f:
            f.write("\n".join(lines) + "\n")
        err, _ = self.main("--out", os.path.join(self.tmp, "c2"), *self.first)
        self.assertIn("the crops differ from the pinned set", err)
        self.assertIn("crop with other contents: crop_00002.jpg", err)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
