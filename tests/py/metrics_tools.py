#!/usr/bin/env python3
"""`vecbench metrics` against the reference implementations themselves (issue #49).

On vecbench's own stored vectors (two stores of real-photo crops, vectorized with the build's
default model, whose synthetic weights include a synthetic 1008-class classifier):
- the Inception Score equals torch-fidelity 0.4's `isc_features_to_metric` on the same vectors'
  logits (pool_3 x fc.weight^T, its 'logits_unbiased', rows in its order: files sorted, then
  NumPy's RandomState(2020) shuffle) within 1e-9 relative in float64, and within 1e-6 against the
  float32 logits torch-fidelity itself computes;
- precision and recall equal torch-fidelity's `prc_features_to_metric` (k = 3; A generated, B real);
  with --like torch-fidelity to the bit (its float32 distances), also on points put on balls' edges;
- precision, recall, density and coverage equal `prdc.compute_prdc(real=B, fake=A, nearest_k=5)`;
- the Inception Score from pool_3 vectors equals the one from the logits the TorchScript network
  computes itself (its logits_unbiased method) within 1e-6;
- a model without a classifier, a classifier whose bytes changed, and a store of another model
  are refused, naming the file and the cause.

The references run in the venv of tools/peers_setup.sh (fid-tools: torch-fidelity, prdc; it sees
Debian's NumPy, scikit-learn and torch). Run by ctest (VECBENCH_EXE, VECBENCH_DEFAULT_MODEL) with
Debian's Python; exit 77 (skipped) without the venv.
"""
import ctypes
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fid_tools import PHOTOS, PY, VENV, make_crops, run_tool, run_vecbench  # noqa: E402

MODEL = os.environ.get("VECBENCH_DEFAULT_MODEL", "build/models/inception_tf2015_seed0.pt")

# torch-fidelity's isc on logits from a .npy file (float32 or float64, as saved)
ISC = ("import sys, json, numpy as np, torch\n"
       "from torch_fidelity.metric_isc import isc_features_to_metric\n"
       "r = isc_features_to_metric(torch.from_numpy(np.load(sys.argv[1])), splits=int(sys.argv[2]))\n"
       "print(json.dumps(r))\n")
# torch-fidelity's prc (its defaults: neighborhood 3, batch 10000; both of its code paths)
PRC = ("import sys, json, numpy as np, torch\n"
       "from torch_fidelity.metric_prc import prc_features_to_metric\n"
       "a, b = torch.from_numpy(np.load(sys.argv[1])), torch.from_numpy(np.load(sys.argv[2]))\n"
       "out = [prc_features_to_metric(a, b, prc_neighborhood=3, prc_batch_size=10000, save_cpu_ram=s,\n"
       "                              verbose=False) for s in (False, True)]\n"
       "print(json.dumps(out))\n")
PRDC = ("import sys, json, numpy as np\n"
        "from prdc import compute_prdc\n"
        "r = compute_prdc(real_features=np.load(sys.argv[2]), fake_features=np.load(sys.argv[1]), nearest_k=5)\n"
        "print(json.dumps({k: float(v) for k, v in r.items()}))\n")


def openblas_core():
    """The kernel set OpenBLAS picks here (vecbench may pick another on CPUs it does not know:
    named in both processes' environment, torch's sgemm and vecbench's are the same code)."""
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def store_rows(store):
    """The store's vectors, rows sorted by input name (torch-fidelity's file order)."""
    with open(os.path.join(store, "manifest.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    lines = sorted((j for j in lines if j.get("status") == "ok"), key=lambda j: j["input"])
    return np.stack([np.load(os.path.join(store, j["shard"]))[j["row"]] for j in lines]).astype(np.float32)


def classifier(model):
    with zipfile.ZipFile(model) as z:
        names = {n.rsplit("/", 1)[-1]: n for n in z.namelist()}
        return (np.load(io.BytesIO(z.read(names["vecbench_fc_weight.npy"]))),
                np.load(io.BytesIO(z.read(names["vecbench_fc_bias.npy"]))))


def rewrite_model(src, dst, edit):
    """A copy of the TorchScript zip with `edit(name, bytes) -> bytes` applied, members stored."""
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zo:
        for info in zi.infolist():
            zo.writestr(info.filename, edit(info.filename, zi.read(info.filename)))


class MetricsTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        photos = sorted(f for f in os.listdir(PHOTOS) if f.endswith(".jpg"))
        cls.env = dict(os.environ, VECBENCH_CACHE=os.path.join(t, "cache"))
        a, b = os.path.join(t, "A"), os.path.join(t, "B")
        make_crops(a, photos[0::2], 60, 256, 11)
        make_crops(b, photos[1::2], 80, 320, 12)
        cls.sa, cls.sb = os.path.join(t, "SA"), os.path.join(t, "SB")
        for src, out in ((a, cls.sa), (b, cls.sb)):
            cls.vb("vectorize", "--images", src, "--out", out, "--model", MODEL, "--format", "shards",
                   "--progress", "0")
        cls.xa, cls.xb = os.path.join(t, "a.npy"), os.path.join(t, "b.npy")
        np.save(cls.xa, store_rows(cls.sa))
        np.save(cls.xb, store_rows(cls.sb))
        out = os.path.join(t, "m.json")
        cls.printed = cls.vb("metrics", cls.sa, cls.sb, "--isc", "--prc", "--prdc", "--fid", "--model", MODEL,
                             "--allow-synthetic-weights", "--json", out).stdout
        with open(out) as f:
            cls.got = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def vb(cls, *args, ok=True):
        return run_vecbench(args, cls.env, ok)

    def tool(self, code, *args):
        return json.loads(run_tool(code, args, self.env).strip().splitlines()[-1])

    def test_inception_score_equals_torch_fidelitys(self):
        w, _ = classifier(MODEL)
        x = np.load(self.xa)
        for name, logits, tol in (("float64", x.astype(np.float64) @ w.T.astype(np.float64), 1e-9),
                                  ("float32", torch.from_numpy(x).mm(torch.from_numpy(w).T).numpy(), 1e-6)):
            path = os.path.join(self.tmp.name, f"logits_{name}.npy")
            np.save(path, logits)
            ref = self.tool(ISC, path, "10")
            with self.subTest(logits=name):
                got = self.got["isc"]
                self.assertLess(abs(got["mean"] - ref["inception_score_mean"]), tol * ref["inception_score_mean"])
                self.assertLess(abs(got["std"] - ref["inception_score_std"]), tol * max(1.0, ref["inception_score_mean"]))
        self.assertGreater(self.got["isc"]["mean"], 1.05)  # the synthetic classifier is not uniform
        self.assertIn("IS ", self.printed)
        self.assertIn("synthetic weights", self.printed)

    def test_precision_recall_equal_torch_fidelitys(self):
        full, part = self.tool(PRC, self.xa, self.xb)
        self.assertEqual(full, part)
        got = self.got["prc"]
        for k in ("precision", "recall", "f_score"):  # torch-fidelity's means are float32; one row is 1/60
            self.assertAlmostEqual(got[k], full[k], delta=1e-6, msg=k)
        self.assertTrue(0.0 < got["precision"] < 1.0 or 0.0 < got["recall"] < 1.0, got)

    def test_like_torch_fidelity_gives_its_float32_figures_to_the_bit(self):
        # issue #63: recall 0.8 where torch-fidelity gave 0.80625 (one sample on a ball's edge, its
        # distances float32). With --like torch-fidelity, vecbench computes torch.cdist's float32
        # distances as torch 1.13 does: equal figures on the stores' vectors (its matmul form), on
        # generated points put on the real balls' edges, on sets of at most 25 rows (its direct
        # kernel) and on the 2-D case of Metrics.TorchFidelitysArithmeticPutsAPointOnABallsEdgeInFloat32;
        # the float64 figures differ from them by at most the boundary samples the output names.
        t = self.tmp.name
        a, b = np.load(self.xa), np.load(self.xb)
        b64 = b.astype(np.float64)
        d = np.sqrt(((b64[:, None, :] - b64[None, :, :]) ** 2).sum(-1))
        radius = np.sort(d, axis=1)[:, 3]  # each real row's 3rd neighbour's distance (itself at 0 first)
        u = np.random.default_rng(63).standard_normal((40, b.shape[1]))
        u /= np.linalg.norm(u, axis=1, keepdims=True)  # away from every other row: on this ball's edge only
        t_off = 1 + np.linspace(-4e-7, 4e-7, 40)
        edge = (b64[:40] + u * (radius[:40] * t_off)[:, None]).astype(np.float32)
        far = [[4096.0 + 200 + 20 * i, 0.0] for i in range(29)]
        cases = {"stores": (a, b), "edges": (np.concatenate([edge, a[:20]]), b), "small": (a[:12], b[:20]),
                 "float32-edge": (np.array([[4097.0, -4.0]] + far, np.float32),
                                  np.array([[4096.0, 0.0], [4096.0, 4.0]], np.float32))}
        env = dict(self.env, OPENBLAS_CORETYPE=openblas_core())  # the same sgemm kernel on both sides
        differ = 0
        for name, (gen, real) in cases.items():
            with self.subTest(case=name):
                pa, pb = os.path.join(t, f"tf_{name}_a.npy"), os.path.join(t, f"tf_{name}_b.npy")
                np.save(pa, gen)
                np.save(pb, real)
                k = "1" if name == "float32-edge" else "3"
                full, part = json.loads(run_tool(PRC.replace("prc_neighborhood=3", "prc_neighborhood=" + k),
                                                 (pa, pb), env).strip().splitlines()[-1])
                out, exact = os.path.join(t, f"tf_{name}.json"), os.path.join(t, f"f64_{name}.json")
                r = run_vecbench(("metrics", pa, pb, "--prc", "--prc-k", k, "--like", "torch-fidelity", "--json",
                                  out), env)
                run_vecbench(("metrics", pa, pb, "--prc", "--prc-k", k, "--json", exact), env)
                with open(out) as f:
                    got = json.load(f)["prc"]
                with open(exact) as f:
                    f64 = json.load(f)["prc"]
                self.assertEqual(got["distances"], "float32 (torch-fidelity)")
                self.assertIn("float32 distances as torch-fidelity computes them", r.stdout)
                self.assertEqual(got["precision"], full["precision"])
                self.assertEqual(got["recall"], full["recall"])
                self.assertAlmostEqual(got["f_score"], full["f_score"], delta=1e-12)
                for key, n, edge_rows in (("precision", len(gen), got["boundary_generated"]),
                                          ("recall", len(real), got["boundary_real"])):
                    moved = abs(round(got[key] * n) - round(f64[key] * n))
                    differ += moved
                    self.assertLessEqual(moved, edge_rows, (key, got, f64))
                if name == "float32-edge":
                    self.assertEqual((f64["precision"], got["boundary_generated"]), (0.0, 1))
                    self.assertNotEqual(got["precision"], 0.0)
                    self.assertIn("1 of 30 generated", r.stdout)
        self.assertGreaterEqual(differ, 1)

    def test_density_and_coverage_equal_prdcs(self):
        ref = self.tool(PRDC, self.xa, self.xb)
        got = self.got["prdc"]
        for k in ("precision", "recall", "density", "coverage"):
            self.assertAlmostEqual(got[k], ref[k], places=12, msg=k)

    def test_fid_is_fids_to_the_bit(self):
        # metrics takes the statistics from the vectors it loaded, fid streams them from the stores
        out = os.path.join(self.tmp.name, "fid.json")
        self.vb("fid", self.sa, self.sb, "--allow-synthetic-weights", "--json", out)
        with open(out) as f:
            self.assertEqual(self.got["fid"], json.load(f)["fid"])

    def test_the_inception_score_of_stored_vectors_is_the_networks_own(self):
        net = torch.jit.load(MODEL)
        crops = sorted(os.listdir(os.path.join(self.tmp.name, "A")))[:24]
        x = torch.stack([torch.from_numpy(np.asarray(
            Image.open(os.path.join(self.tmp.name, "A", f)).resize((299, 299), Image.BILINEAR),
            dtype=np.float32)).permute(2, 0, 1) for f in crops])
        with torch.no_grad():
            pool, logits = net(x), net.logits_unbiased(x)
        pool_path, logits_path = (os.path.join(self.tmp.name, n) for n in ("pool.npy", "net_logits.npy"))
        np.save(pool_path, pool.numpy())
        np.save(logits_path, logits.numpy())
        ref = self.tool(ISC, logits_path, "4")
        out = os.path.join(self.tmp.name, "net.json")
        r = self.vb("metrics", pool_path, "--isc", "--isc-splits", "4", "--model", MODEL,
                    "--allow-synthetic-weights", "--json", out)
        self.assertIn("unchecked", r.stderr)  # a matrix has no fingerprint: said so
        with open(out) as f:
            got = json.load(f)["isc"]
        self.assertLess(abs(got["mean"] - ref["inception_score_mean"]), 1e-6 * ref["inception_score_mean"])

    def test_a_model_without_a_sound_classifier_is_refused_by_name(self):
        bare = os.path.join(self.tmp.name, "bare.pt")

        def drop(name, data):
            if not name.endswith("vecbench_meta.json"):
                return data
            meta = json.loads(data)
            del meta["classifier"]
            return json.dumps(meta).encode()
        rewrite_model(MODEL, bare, drop)
        r = self.vb("metrics", self.xa, "--isc", "--model", bare, "--allow-synthetic-weights", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bare.pt", r.stderr)
        self.assertIn("has no classifier", r.stderr)
        rotted = os.path.join(self.tmp.name, "rotted.pt")

        def flip(name, data):
            if not name.endswith("vecbench_fc_weight.npy"):
                return data
            b = bytearray(data)
            b[-5] ^= 0x40
            return bytes(b)
        rewrite_model(MODEL, rotted, flip)
        r = self.vb("metrics", self.xa, "--isc", "--model", rotted, "--allow-synthetic-weights", ok=False)
        self.assertIn("rotted.pt", r.stderr)
        self.assertIn("SHA-256", r.stderr)

    def test_a_store_of_another_model_gets_no_classifier_of_this_one(self):
        other = os.path.join(self.tmp.name, "seed5.pt")
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "..", "..", "tools", "export_inception.py"),
                        "--seed", "5", "--out", other], check=True, capture_output=True)
        r = self.vb("metrics", self.sa, "--isc", "--model", other, "--allow-synthetic-weights", ok=False)
        self.assertIn("was vectorized by the model of weights", r.stderr)
        self.assertIn("seed5.pt", r.stderr)

    def test_sides_made_differently_are_refused(self):
        sc = os.path.join(self.tmp.name, "SC")
        self.vb("vectorize", "--images", os.path.join(self.tmp.name, "B"), "--out", sc, "--model", MODEL,
                "--format", "shards", "--resize", "bilinear", "--progress", "0")
        r = self.vb("metrics", self.sa, sc, "--prdc", "--allow-synthetic-weights", ok=False)
        self.assertIn("resize", r.stderr)
        self.assertIn("--allow-mismatch", r.stderr)
        r = self.vb("metrics", self.sa, self.sb, "--prdc", ok=False)
        self.assertIn("synthetic", r.stderr)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    if not os.path.exists(PY):
        ctest_unittest.skip_all(f"no venv at {VENV} (tools/peers_setup.sh tensorflow makes it)")
    ctest_unittest.main()
