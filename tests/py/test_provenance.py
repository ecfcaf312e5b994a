#!/usr/bin/env python3
"""tools/provenance.py: a results file names the binary's commit; a build from a dirty tree is refused
unless allowed, and then the file says dirty (issue #63). Also the whole-job report's headline."""
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from provenance import Refused, binary_record, image_set_record, markdown_line  # noqa: E402


class Provenance(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.old = os.environ.pop("VECBENCH_ALLOW_DIRTY", None)

    def tearDown(self):
        self.tmp.cleanup()
        if self.old is not None:
            os.environ["VECBENCH_ALLOW_DIRTY"] = self.old

    def fake(self, line):
        """A stand-in binary whose --version prints LINE."""
        path = os.path.join(self.tmp.name, f"vb{len(os.listdir(self.tmp.name))}")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho '{line}'\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        return path

    def test_clean_build_is_recorded(self):
        rec = binary_record(self.fake("vecbench 0.1.0 (cba1cb88ab9e, Release)"))
        self.assertEqual((rec["commit"], rec["dirty"], rec["build_type"], rec["allowed_dirty"]),
                         ("cba1cb88ab9e", False, "Release", False))
        self.assertIn("commit cba1cb88ab9e, clean tree", markdown_line(rec))

    def test_dirty_build_is_refused_unless_allowed_and_then_said(self):
        vb = self.fake("vecbench 0.1.0 (1cbb98f002df, dirty, Release)")
        with self.assertRaises(Refused):
            binary_record(vb)
        rec = binary_record(vb, allow_dirty=True)
        self.assertTrue(rec["dirty"] and rec["allowed_dirty"])
        self.assertIn("**built from a dirty tree**", markdown_line(rec))
        os.environ["VECBENCH_ALLOW_DIRTY"] = "1"
        self.assertTrue(binary_record(vb)["dirty"])

    def test_unknown_commit_and_other_programs_are_refused(self):
        with self.assertRaises(Refused):
            binary_record(self.fake("vecbench 0.1.0 (unknown, Release)"))
        self.assertIn("**commit unknown**", markdown_line(binary_record(self.fake("vecbench 0.1.0 (unknown, Release)"),
                                                                        allow_dirty=True)))
        with self.assertRaises(Refused):
            binary_record(self.fake("python 3.11"), allow_dirty=True)
        with self.assertRaises(Refused):
            binary_record(os.path.join(self.tmp.name, "missing"), allow_dirty=True)

    def test_command_line_exit_status(self):
        tool = os.path.join(ROOT, "tools", "provenance.py")
        vb = self.fake("vecbench 0.1.0 (1cbb98f002df, dirty, Release)")
        self.assertEqual(subprocess.run([sys.executable, tool, vb], capture_output=True).returncode, 1)
        r = subprocess.run([sys.executable, tool, vb, "--allow-dirty", "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertTrue(json.loads(r.stdout)["dirty"])

    def test_image_set_digest_is_sha256sum_of_the_folder(self):
        d = os.path.join(self.tmp.name, "set")
        os.makedirs(d)
        for n, data in (("b.jpg", b"2"), ("a.jpg", b"1")):
            with open(os.path.join(d, n), "wb") as f:
                f.write(data)
        listing = subprocess.run(["sha256sum", "a.jpg", "b.jpg"], cwd=d, capture_output=True).stdout
        self.assertEqual(image_set_record(d), {"path": d, "files": 2, "sha256": hashlib.sha256(listing).hexdigest()})

    def test_whole_job_report_says_dirty_and_gives_the_headline(self):
        runs = []
        for k, (d100, ort, ov, mo) in enumerate(((3.0, 20.0, 22.0, 30.0), (4.0, 21.0, 25.0, 32.0))):
            runs += [{"name": "default-60", "wall_s": 2.0, "rss_kb": 400000, "first_output_s": 0.4, "line": ""},
                     {"name": "default-100", "wall_s": d100, "rss_kb": 400000, "first_output_s": 0.4, "line": "",
                      "steal_share": 0.01 * (k + 1)},
                     {"name": "ort-b8-t2", "wall_s": 15, "rss_kb": 1, "line": f"img_per_s={ort}"},
                     {"name": "ov-b8-t2", "wall_s": 15, "rss_kb": 1, "line": f"img_per_s={ov}"},
                     {"name": "model-only-default", "wall_s": 3, "rss_kb": 1, "line": f"img_per_s={mo}"},
                     {"name": "default-100-vc", "wall_s": 3.0, "rss_kb": 1, "first_output_s": 0.4, "line": ""},
                     {"name": "seed-style-100-vc", "wall_s": 9.0, "rss_kb": 1, "first_output_s": 1.0, "line": ""}]
        raw, out, prov = (os.path.join(self.tmp.name, n) for n in ("raw.jsonl", "rep", "prov.json"))
        with open(raw, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in runs)
        with open(prov, "w") as f:
            json.dump(binary_record(self.fake("vecbench 0.1.0 (1cbb98f002df, dirty, Release)"), allow_dirty=True), f)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_whole_job_report.py"), raw, out,
                        "engine onednn, strategy data-parallel on cpu/2 = x, batch 4", "2", "load 0"], check=True,
                       capture_output=True, env=dict(os.environ, PROVENANCE=prov))
        with open(out + ".md") as f:
            md = f.read()
        self.assertIn("**built from a dirty tree**", md)
        self.assertIn("**dirty tree**; peers at fixed settings", md)
        with open(out + ".json") as f:
            h = json.load(f)["headline"]
        # rounds: 100/3 = 33.3 img/s against 22 (1.52), 25 against 25 (1.00); the whole job's median
        # (100 over the median wall time, 3.5 s) against the better peer's median (ov-b8-t2, 23.5)
        self.assertAlmostEqual(h["worst_round"], 1.0)
        self.assertAlmostEqual(h["ratio_of_medians"], 100 / 3.5 / 23.5)
        self.assertAlmostEqual(h["model_only_ratio"], 31 / 23.5)
        self.assertAlmostEqual(h["max_steal_share"], 0.02)
        self.assertTrue(h["binary_dirty"])
        self.assertIn("worst round 1.00 (**under the 1.2x goal**)", md)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
