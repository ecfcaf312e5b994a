#!/usr/bin/env python3
"""reference_cache.py: a kept tool result is used only for the same bytes, names, code and versions."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_cache import Key, cached  # noqa: E402


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


class ReferenceCache(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.t = self.tmp.name
        self.old = os.environ.get("VECBENCH_REFERENCE_CACHE")
        os.environ["VECBENCH_REFERENCE_CACHE"] = os.path.join(self.t, "cache")
        for i in range(3):
            write(os.path.join(self.t, "A", f"{i}.png"), bytes([i]) * 100)
        write(os.path.join(self.t, "w.pth"), b"weights")

    def tearDown(self):
        if self.old is None:
            os.environ.pop("VECBENCH_REFERENCE_CACHE")
        else:
            os.environ["VECBENCH_REFERENCE_CACHE"] = self.old
        self.tmp.cleanup()

    def key(self, folder=None, code="tool A", versions="torch 1.13"):
        k = Key("tool").text("versions", versions).text("code", code)
        return k.folder("A", folder or os.path.join(self.t, "A")).file("weights", os.path.join(self.t, "w.pth"))

    def test_the_key_follows_every_input_but_not_the_folder_it_is_in(self):
        base = self.key().hexdigest()
        import shutil
        shutil.copytree(os.path.join(self.t, "A"), os.path.join(self.t, "elsewhere"))
        self.assertEqual(self.key(os.path.join(self.t, "elsewhere")).hexdigest(), base)
        self.assertNotEqual(self.key(code="tool B").hexdigest(), base)
        self.assertNotEqual(self.key(versions="torch 2.11").hexdigest(), base)
        write(os.path.join(self.t, "A", "1.png"), bytes([1]) * 99 + b"\x02")  # one byte
        self.assertNotEqual(self.key().hexdigest(), base)
        write(os.path.join(self.t, "A", "1.png"), bytes([1]) * 100)
        self.assertEqual(self.key().hexdigest(), base)
        os.rename(os.path.join(self.t, "A", "1.png"), os.path.join(self.t, "A", "9.png"))  # a name
        self.assertNotEqual(self.key().hexdigest(), base)
        os.rename(os.path.join(self.t, "A", "9.png"), os.path.join(self.t, "A", "1.png"))
        write(os.path.join(self.t, "w.pth"), b"weightz")
        self.assertNotEqual(self.key().hexdigest(), base)

    def test_computed_once_then_kept_and_an_unreadable_file_is_computed_again(self):
        calls = []

        def compute():
            calls.append(1)
            return {"fid": 1.5 + len(calls)}

        self.assertEqual(cached(self.key(), compute), {"fid": 2.5})
        self.assertEqual(cached(self.key(), compute), {"fid": 2.5})
        self.assertEqual(len(calls), 1)
        self.assertEqual(cached(self.key(code="tool B"), compute), {"fid": 3.5})  # another key: runs
        self.assertEqual(len(calls), 2)
        d = os.environ["VECBENCH_REFERENCE_CACHE"]
        for f in os.listdir(d):
            with open(os.path.join(d, f), "w") as fh:
                fh.write("{truncated")
        self.assertEqual(cached(self.key(), compute), {"fid": 4.5})
        self.assertEqual(len(calls), 3)
        self.assertEqual(cached(self.key(), compute), {"fid": 4.5})
        self.assertEqual(len(calls), 3)

    def test_off_runs_the_tool_every_time(self):
        os.environ["VECBENCH_REFERENCE_CACHE"] = "off"
        calls = []
        for _ in range(2):
            cached(self.key(), lambda: calls.append(1) or 1.0)
        self.assertEqual(len(calls), 2)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
