#!/usr/bin/env python3
"""Test of tools/export_inception.py --from-tf: the test writes its own
GraphDef (own protobuf wire-format writer) with the node names and shapes of
classify_image_graph_def.pb (inception-2015-12-05), filled with seeded random
values, exports it, and compares with the independent eager reference fed with
the weights the test put under each TF name (own name table below).

Run from the repo root: /usr/bin/python3 tests/py/test_export_from_tf.py"""

import hashlib
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ref_inception import (load_exported, random_images, rel_l2, run_export,  # noqa: E402
                           tf2015_features, torchvision_shapes)

torch.set_num_threads(2)
TOL = 1e-5

# torchvision BasicConv2d prefix  ->  TF scope (written out by hand, one per conv).
NAME_TABLE = """
Conv2d_1a_3x3 conv
Conv2d_2a_3x3 conv_1
Conv2d_2b_3x3 conv_2
Conv2d_3b_1x1 conv_3
Conv2d_4a_3x3 conv_4
Mixed_5b.branch1x1 mixed/conv
Mixed_5b.branch5x5_1 mixed/tower/conv
Mixed_5b.branch5x5_2 mixed/tower/conv_1
Mixed_5b.branch3x3dbl_1 mixed/tower_1/conv
Mixed_5b.branch3x3dbl_2 mixed/tower_1/conv_1
Mixed_5b.branch3x3dbl_3 mixed/tower_1/conv_2
Mixed_5b.branch_pool mixed/tower_2/conv
Mixed_5c.branch1x1 mixed_1/conv
Mixed_5c.branch5x5_1 mixed_1/tower/conv
Mixed_5c.branch5x5_2 mixed_1/tower/conv_1
Mixed_5c.branch3x3dbl_1 mixed_1/tower_1/conv
Mixed_5c.branch3x3dbl_2 mixed_1/tower_1/conv_1
Mixed_5c.branch3x3dbl_3 mixed_1/tower_1/conv_2
Mixed_5c.branch_pool mixed_1/tower_2/conv
Mixed_5d.branch1x1 mixed_2/conv
Mixed_5d.branch5x5_1 mixed_2/tower/conv
Mixed_5d.branch5x5_2 mixed_2/tower/conv_1
Mixed_5d.branch3x3dbl_1 mixed_2/tower_1/conv
Mixed_5d.branch3x3dbl_2 mixed_2/tower_1/conv_1
Mixed_5d.branch3x3dbl_3 mixed_2/tower_1/conv_2
Mixed_5d.branch_pool mixed_2/tower_2/conv
Mixed_6a.branch3x3 mixed_3/conv
Mixed_6a.branch3x3dbl_1 mixed_3/tower/conv
Mixed_6a.branch3x3dbl_2 mixed_3/tower/conv_1
Mixed_6a.branch3x3dbl_3 mixed_3/tower/conv_2
Mixed_6b.branch1x1 mixed_4/conv
Mixed_6b.branch7x7_1 mixed_4/tower/conv
Mixed_6b.branch7x7_2 mixed_4/tower/conv_1
Mixed_6b.branch7x7_3 mixed_4/tower/conv_2
Mixed_6b.branch7x7dbl_1 mixed_4/tower_1/conv
Mixed_6b.branch7x7dbl_2 mixed_4/tower_1/conv_1
Mixed_6b.branch7x7dbl_3 mixed_4/tower_1/conv_2
Mixed_6b.branch7x7dbl_4 mixed_4/tower_1/conv_3
Mixed_6b.branch7x7dbl_5 mixed_4/tower_1/conv_4
Mixed_6b.branch_pool mixed_4/tower_2/conv
Mixed_6c.branch1x1 mixed_5/conv
Mixed_6c.branch7x7_1 mixed_5/tower/conv
Mixed_6c.branch7x7_2 mixed_5/tower/conv_1
Mixed_6c.branch7x7_3 mixed_5/tower/conv_2
Mixed_6c.branch7x7dbl_1 mixed_5/tower_1/conv
Mixed_6c.branch7x7dbl_2 mixed_5/tower_1/conv_1
Mixed_6c.branch7x7dbl_3 mixed_5/tower_1/conv_2
Mixed_6c.branch7x7dbl_4 mixed_5/tower_1/conv_3
Mixed_6c.branch7x7dbl_5 mixed_5/tower_1/conv_4
Mixed_6c.branch_pool mixed_5/tower_2/conv
Mixed_6d.branch1x1 mixed_6/conv
Mixed_6d.branch7x7_1 mixed_6/tower/conv
Mixed_6d.branch7x7_2 mixed_6/tower/conv_1
Mixed_6d.branch7x7_3 mixed_6/tower/conv_2
Mixed_6d.branch7x7dbl_1 mixed_6/tower_1/conv
Mixed_6d.branch7x7dbl_2 mixed_6/tower_1/conv_1
Mixed_6d.branch7x7dbl_3 mixed_6/tower_1/conv_2
Mixed_6d.branch7x7dbl_4 mixed_6/tower_1/conv_3
Mixed_6d.branch7x7dbl_5 mixed_6/tower_1/conv_4
Mixed_6d.branch_pool mixed_6/tower_2/conv
Mixed_6e.branch1x1 mixed_7/conv
Mixed_6e.branch7x7_1 mixed_7/tower/conv
Mixed_6e.branch7x7_2 mixed_7/tower/conv_1
Mixed_6e.branch7x7_3 mixed_7/tower/conv_2
Mixed_6e.branch7x7dbl_1 mixed_7/tower_1/conv
Mixed_6e.branch7x7dbl_2 mixed_7/tower_1/conv_1
Mixed_6e.branch7x7dbl_3 mixed_7/tower_1/conv_2
Mixed_6e.branch7x7dbl_4 mixed_7/tower_1/conv_3
Mixed_6e.branch7x7dbl_5 mixed_7/tower_1/conv_4
Mixed_6e.branch_pool mixed_7/tower_2/conv
Mixed_7a.branch3x3_1 mixed_8/tower/conv
Mixed_7a.branch3x3_2 mixed_8/tower/conv_1
Mixed_7a.branch7x7x3_1 mixed_8/tower_1/conv
Mixed_7a.branch7x7x3_2 mixed_8/tower_1/conv_1
Mixed_7a.branch7x7x3_3 mixed_8/tower_1/conv_2
Mixed_7a.branch7x7x3_4 mixed_8/tower_1/conv_3
Mixed_7b.branch1x1 mixed_9/conv
Mixed_7b.branch3x3_1 mixed_9/tower/conv
Mixed_7b.branch3x3_2a mixed_9/tower/mixed/conv
Mixed_7b.branch3x3_2b mixed_9/tower/mixed/conv_1
Mixed_7b.branch3x3dbl_1 mixed_9/tower_1/conv
Mixed_7b.branch3x3dbl_2 mixed_9/tower_1/conv_1
Mixed_7b.branch3x3dbl_3a mixed_9/tower_1/mixed/conv
Mixed_7b.branch3x3dbl_3b mixed_9/tower_1/mixed/conv_1
Mixed_7b.branch_pool mixed_9/tower_2/conv
Mixed_7c.branch1x1 mixed_10/conv
Mixed_7c.branch3x3_1 mixed_10/tower/conv
Mixed_7c.branch3x3_2a mixed_10/tower/mixed/conv
Mixed_7c.branch3x3_2b mixed_10/tower/mixed/conv_1
Mixed_7c.branch3x3dbl_1 mixed_10/tower_1/conv
Mixed_7c.branch3x3dbl_2 mixed_10/tower_1/conv_1
Mixed_7c.branch3x3dbl_3a mixed_10/tower_1/mixed/conv
Mixed_7c.branch3x3dbl_3b mixed_10/tower_1/mixed/conv_1
Mixed_7c.branch_pool mixed_10/tower_2/conv
"""
TORCH_TO_TF = dict(line.split() for line in NAME_TABLE.strip().splitlines())

# Special cases exercised by the test graph.
NO_SCALE_SCOPE = "conv_2"            # batchnorm node says scale_after_normalization=false
NO_GAMMA_SCOPE = "mixed_3/conv"      # no gamma Const and no batchnorm node at all
EPS_SCOPE = "mixed_10/tower_2/conv"  # variance_epsilon 0.01 instead of 0.001
PACKED_BETA_SCOPE = "mixed_4/conv"   # beta stored as packed float_val
UNPACKED_BETA_SCOPE = "mixed_9/conv"  # beta stored as unpacked float_val


# --------------------------------------------------------------------------
# Minimal protobuf writer
# --------------------------------------------------------------------------

def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint((field << 3) | wire)


def f_varint(field, n):
    return tag(field, 0) + varint(n)


def f_bytes(field, payload):
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return tag(field, 2) + varint(len(payload)) + payload


def f_fixed32(field, raw4):
    return tag(field, 5) + raw4


DT_FLOAT, DT_INT32 = 1, 3


def tensor_shape(shape):
    return b"".join(f_bytes(2, f_varint(1, d)) for d in shape)  # TensorShapeProto.dim{size}


def tensor_proto(arr, mode="content"):
    arr = np.asarray(arr)
    if arr.dtype == np.int32:
        body = f_varint(1, DT_INT32) + f_bytes(2, tensor_shape(arr.shape))
        return body + b"".join(f_varint(7, int(v)) for v in arr.ravel())  # int_val
    arr = arr.astype("<f4")
    body = f_varint(1, DT_FLOAT) + f_bytes(2, tensor_shape(arr.shape))
    if mode == "content":
        return body + f_bytes(4, arr.tobytes())
    if mode == "packed":
        return body + f_bytes(5, arr.tobytes())
    if mode == "unpacked":
        return body + b"".join(f_fixed32(5, struct.pack("<f", float(v))) for v in arr.ravel())
    raise ValueError(mode)


# AttrValue oneof: list=1, s=2, i=3, f=4, b=5, type=6, shape=7, tensor=8
def attr_type(t):
    return f_varint(6, t)


def attr_tensor(tp):
    return f_bytes(8, tp)


def attr_s(s):
    return f_bytes(2, s)


def attr_f(x):
    return f_fixed32(4, struct.pack("<f", x))


def attr_b(v):
    return f_varint(5, 1 if v else 0)


def attr_int_list(vals):
    return f_bytes(1, f_bytes(3, b"".join(varint(v) for v in vals)))  # ListValue.i packed


def node_def(name, op, inputs=(), attrs=()):
    out = f_bytes(1, name) + f_bytes(2, op)
    for i in inputs:
        out += f_bytes(3, i)
    out += f_bytes(4, "/cpu:0")  # device
    for key, value in attrs:
        out += f_bytes(5, f_bytes(1, key) + f_bytes(2, value))
    return out


def const_node(name, arr, mode="content"):
    dt = DT_INT32 if np.asarray(arr).dtype == np.int32 else DT_FLOAT
    return node_def(name, "Const", attrs=[("dtype", attr_type(dt)),
                                          ("value", attr_tensor(tensor_proto(arr, mode)))])


def graph_def(nodes):
    return b"".join(f_bytes(1, n) for n in nodes) + f_bytes(4, f_varint(1, 9))  # versions{producer}


# --------------------------------------------------------------------------
# Test network contents
# --------------------------------------------------------------------------

def make_tf_tensors(seed):
    """{tf scope: dict(kernel HWIO, beta, gamma, mean, var)} + softmax."""
    shapes = torchvision_shapes(num_classes=1008, aux_logits=False)
    rng = np.random.default_rng(seed)
    scopes = {}
    for tprefix, scope in TORCH_TO_TF.items():
        o, i, kh, kw = shapes[tprefix + ".conv.weight"]
        std = (2.0 / (i * kh * kw)) ** 0.5
        scopes[scope] = {
            "kernel": (rng.standard_normal((kh, kw, i, o)) * std).astype(np.float32),
            "beta": (0.05 * rng.standard_normal(o)).astype(np.float32),
            "gamma": (0.8 + 0.4 * rng.random(o)).astype(np.float32),
            "mean": (0.05 * rng.standard_normal(o)).astype(np.float32),
            "var": (0.8 + 0.4 * rng.random(o)).astype(np.float32),
        }
    softmax_w = (rng.standard_normal((2048, 1008)) * 0.02).astype(np.float32)
    softmax_b = (0.01 * rng.standard_normal(1008)).astype(np.float32)
    return scopes, softmax_w, softmax_b


def build_graph(scopes, softmax_w, softmax_b, drop=(), reshape=None):
    nodes = [
        node_def("DecodeJpeg/contents", "Const", attrs=[("dtype", attr_type(7))]),
        const_node("Sub/y", np.array(128.0, np.float32), mode="unpacked"),
        const_node("Mul/y", np.array(1.0 / 128.0, np.float32), mode="packed"),
        const_node("ResizeBilinear/size", np.array([299, 299], np.int32)),
        node_def("Sub", "Sub", inputs=["ResizeBilinear", "Sub/y"], attrs=[("T", attr_type(DT_FLOAT))]),
    ]
    prev = "Mul"
    for scope, t in scopes.items():
        kernel = t["kernel"]
        if reshape is not None and reshape[0] == scope:
            kernel = kernel.reshape(reshape[1])
        beta_mode = {"PACKED": "packed", "UNPACKED": "unpacked"}.get(
            "PACKED" if scope == PACKED_BETA_SCOPE else "UNPACKED" if scope == UNPACKED_BETA_SCOPE else "", "content")
        consts = [(f"{scope}/conv2d_params", kernel, "content"),
                  (f"{scope}/batchnorm/beta", t["beta"], beta_mode),
                  (f"{scope}/batchnorm/moving_mean", t["mean"], "content"),
                  (f"{scope}/batchnorm/moving_variance", t["var"], "content")]
        if scope != NO_GAMMA_SCOPE:
            consts.append((f"{scope}/batchnorm/gamma", t["gamma"], "content"))
        for name, arr, mode in consts:
            if name not in drop:
                nodes.append(const_node(name, arr, mode))
        nodes.append(node_def(f"{scope}/Conv2D", "Conv2D", inputs=[prev, f"{scope}/conv2d_params"],
                              attrs=[("T", attr_type(DT_FLOAT)), ("padding", attr_s("SAME")),
                                     ("strides", attr_int_list([1, 1, 1, 1])),
                                     ("use_cudnn_on_gpu", attr_b(True))]))
        if scope != NO_GAMMA_SCOPE:
            eps = 0.01 if scope == EPS_SCOPE else 0.001
            nodes.append(node_def(f"{scope}/batchnorm", "BatchNormWithGlobalNormalization",
                                  inputs=[f"{scope}/Conv2D"] + [f"{scope}/batchnorm/{n}" for n in
                                                                ("moving_mean", "moving_variance",
                                                                 "beta", "gamma")],
                                  attrs=[("T", attr_type(DT_FLOAT)),
                                         ("variance_epsilon", attr_f(eps)),
                                         ("scale_after_normalization", attr_b(scope != NO_SCALE_SCOPE))]))
        nodes.append(node_def(scope, "Relu", inputs=[f"{scope}/batchnorm"]))
        prev = scope
    nodes.append(const_node("pool_3/_reshape/shape", np.array([1, 2048], np.int32)))
    nodes.append(const_node("softmax/weights", softmax_w))
    nodes.append(const_node("softmax/biases", softmax_b))
    return graph_def(nodes)


def expected_state_dict(scopes):
    """What the test expects the export to use, in torchvision's layout."""
    sd, eps = {}, {}
    for tprefix, scope in TORCH_TO_TF.items():
        t = scopes[scope]
        sd[tprefix + ".conv.weight"] = torch.from_numpy(np.ascontiguousarray(t["kernel"].transpose(3, 2, 0, 1)))
        sd[tprefix + ".bn.bias"] = torch.from_numpy(t["beta"])
        use_gamma = scope not in (NO_SCALE_SCOPE, NO_GAMMA_SCOPE)
        sd[tprefix + ".bn.weight"] = torch.from_numpy(t["gamma"]) if use_gamma else torch.ones(len(t["beta"]))
        sd[tprefix + ".bn.running_mean"] = torch.from_numpy(t["mean"])
        sd[tprefix + ".bn.running_var"] = torch.from_numpy(t["var"])
        if scope == EPS_SCOPE:
            eps[tprefix] = 0.01
    return sd, eps


class TestFromTF(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.scopes, sw, sb = make_tf_tensors(seed=2015)
        cls.pb = os.path.join(cls.tmp.name, "classify_image_graph_def.pb")
        with open(cls.pb, "wb") as f:
            f.write(build_graph(cls.scopes, sw, sb))
        cls.out = os.path.join(cls.tmp.name, "from_tf.pt")
        cls.cp = run_export("--out", cls.out, "--from-tf", cls.pb)
        cls.softmax = (sw, sb)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_table_covers_all_convs(self):
        shapes = torchvision_shapes(num_classes=1008, aux_logits=False)
        convs = {k[:-len(".conv.weight")] for k in shapes if k.endswith(".conv.weight")}
        self.assertEqual(convs, set(TORCH_TO_TF))
        self.assertEqual(len(set(TORCH_TO_TF.values())), len(TORCH_TO_TF))

    def test_matches_reference(self):
        m, meta = load_exported(self.out)
        self.assertFalse(m.training)
        sd, eps = expected_state_dict(self.scopes)
        x = random_images(seed=31, n=2)
        with torch.no_grad():
            got = m(x.clone())
            ref = tf2015_features(sd, x.clone(), eps=eps)
        self.assertEqual(tuple(got.shape), (2, 2048))
        self.assertTrue(torch.isfinite(got).all())
        self.assertTrue(0.01 < float(ref.abs().mean()) < 100.0, float(ref.abs().mean()))
        err = rel_l2(got, ref)
        self.assertLessEqual(err, TOL, f"relative L2 error {err:.3g}")

    def test_weights_copied_exactly(self):
        m, _ = load_exported(self.out)
        got = m.state_dict()
        sd, _ = expected_state_dict(self.scopes)
        for k, v in sd.items():
            self.assertTrue(torch.equal(got[k], v), k)

    def test_meta(self):
        _, meta = load_exported(self.out)
        self.assertEqual(meta["arch"], "tf2015")
        self.assertEqual(meta["weight_source"], "from-tf:classify_image_graph_def.pb")
        with open(self.pb, "rb") as f:
            self.assertEqual(meta["weight_sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(meta["resize_default"], "tf-legacy")

    def _expect_failure(self, data, *needles):
        pb = os.path.join(self.tmp.name, "bad_graph.pb")
        with open(pb, "wb") as f:
            f.write(data)
        out = os.path.join(self.tmp.name, "bad.pt")
        cp = run_export("--out", out, "--from-tf", pb, check=False)
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn(pb, cp.stderr)
        for n in needles:
            self.assertIn(n, cp.stderr)
        self.assertNotIn("Traceback", cp.stderr)
        self.assertFalse(os.path.exists(out))

    def test_missing_node(self):
        sw, sb = self.softmax
        data = build_graph(self.scopes, sw, sb, drop={"mixed_7/tower_1/conv_3/conv2d_params"})
        self._expect_failure(data, "mixed_7/tower_1/conv_3/conv2d_params", "missing")

    def test_wrong_shape(self):
        # swap the 1x7 kernel of mixed_4/tower/conv_1 into a 7x1 one: must be caught
        sw, sb = self.softmax
        k = self.scopes["mixed_4/tower/conv_1"]["kernel"]
        data = build_graph(self.scopes, sw, sb, reshape=("mixed_4/tower/conv_1", (7, 1) + k.shape[2:]))
        self._expect_failure(data, "mixed_4/tower/conv_1/conv2d_params", "Mixed_6b.branch7x7_2.conv.weight")

    def test_garbage_file(self):
        self._expect_failure(b"\x0a\xff\xff\xff\xff\x0f garbage", "GraphDef")

    def test_arch_mismatch(self):
        out = os.path.join(self.tmp.name, "tv.pt")
        cp = run_export("--out", out, "--arch", "torchvision", "--from-tf", self.pb, check=False)
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn(self.pb, cp.stderr)


if __name__ == "__main__":
    import ctest_unittest  # a skipped test exits 77: ctest's "Skipped", never "Passed" (tests/py/ctest_unittest.py)
    ctest_unittest.main()
