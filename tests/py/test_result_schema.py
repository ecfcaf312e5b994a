#!/usr/bin/env python3
"""Validates result files against schema/result.schema.json (python3-jsonschema).

Checked: every results/**/*.json in the repository that has a "schema_version" key, and the
golden files tests/data/compare/*.json; deliberately broken copies must fail validation.
Run from the repo root: /usr/bin/python3 tests/py/test_result_schema.py
"""
import copy
import glob
import json
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(ROOT, "schema", "result.schema.json")
GOLDEN = os.path.join(ROOT, "tests", "data", "compare")

try:
    import jsonschema
except ImportError as e:  # fail, do not skip: a skipped test would hide schema drift
    jsonschema = None
    IMPORT_ERROR = e


def load(path):
    with open(path) as f:
        return json.load(f)


def validator():
    if jsonschema is None:
        raise AssertionError(f"python3-jsonschema is required ({IMPORT_ERROR}); run with /usr/bin/python3")
    schema = load(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(v, doc):
    """Schema errors, plus what JSON Schema cannot express: run ids unique within a file."""
    out = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]
    ids = [r.get("id") for r in doc.get("runs", []) if isinstance(r, dict)] if isinstance(doc, dict) else []
    out += [f"duplicate run id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    return out


class ResultSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = validator()

    def test_committed_results_validate(self):
        files = sorted(glob.glob(os.path.join(ROOT, "results", "**", "*.json"), recursive=True))
        checked = 0
        for path in files:
            doc = load(path)
            if not isinstance(doc, dict) or "schema_version" not in doc:
                continue  # not a result file (e.g. an index)
            checked += 1
            with self.subTest(file=os.path.relpath(path, ROOT)):
                self.assertEqual(problems(self.v, doc), [])
        print(f"validated {checked} result file(s) under results/")

    def test_golden_files_validate(self):
        files = sorted(glob.glob(os.path.join(GOLDEN, "*.json")))
        self.assertGreaterEqual(len(files), 5, "golden files missing")
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                self.assertEqual(problems(self.v, load(path)), [])

    def test_broken_copies_fail(self):
        base = load(os.path.join(GOLDEN, "base.json"))
        self.assertEqual(problems(self.v, base), [])

        def drop(path, key):
            def f(d):
                obj = d
                for p in path:
                    obj = obj[p]
                del obj[key]
            return f

        def put(path, key, value):
            def f(d):
                obj = d
                for p in path:
                    obj = obj[p]
                obj[key] = value
            return f

        def dup_id(d):
            d["runs"][1]["id"] = d["runs"][0]["id"]

        breakages = {
            "schema_version 2": put([], "schema_version", 2),
            "no runs": drop([], "runs"),
            "no meta.host": drop(["meta"], "host"),
            "status not in enum": put(["runs", 0], "status", "fine"),
            "skipped without reason": put(["runs", 5], "reason", ""),
            "sample without images_per_s": drop(["runs", 0, "samples", 0], "images_per_s"),
            "wall_s is a string": put(["runs", 0, "samples", 0], "wall_s", "fast"),
            "images not an integer": put(["runs", 0, "samples", 0], "images", 2.5),
            "unknown sample key": put(["runs", 0, "samples", 0], "imgs_per_s", 1.0),
            "params value is a list": put(["runs", 0, "params"], "batch", [1]),
            "summary without count": drop(["runs", 0, "summary", "images_per_s"], "count"),
            "verification without reference": drop(["runs", 2, "verification"], "reference"),
            "queue_depth entry of 3": put(["runs", 2, "samples", 0, "queue_depth"], 0, [0.0, 1, 2]),
            "duplicate run id": dup_id,
        }
        for name, breakage in breakages.items():
            with self.subTest(breakage=name):
                doc = copy.deepcopy(base)
                breakage(doc)
                self.assertNotEqual(problems(self.v, doc), [], f"broken copy '{name}' passed validation")


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
