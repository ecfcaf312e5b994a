#!/usr/bin/env python3
"""Build a runnable classify_image_graph_def.pb (inception-2015-12-05) with TensorFlow's own ops.

The frozen GraphDef has the node names and op types of the file the seed question used:
DecodeJpeg/contents -> DecodeJpeg -> Cast -> ExpandDims -> ResizeBilinear (299x299, no
half-pixel centres) -> Sub (128) -> Mul (1/128) -> Conv2D + BatchNormWithGlobalNormalization +
Relu per convolution (`<scope>/conv2d_params`, `<scope>/batchnorm/{beta,gamma,moving_mean,
moving_variance}`), MaxPool/AvgPool, Concat joins (`mixed*/join`), pool_3 (8x8 AvgPool),
pool_3/_reshape, softmax/logits, softmax (1008 classes). Feed `DecodeJpeg:0` (uint8 HxWx3 RGB)
or `DecodeJpeg/contents:0` (JPEG bytes); fetch `pool_3:0` ([1,1,1,2048]).

Weights: --weights FILE (a state_dict in torchvision's Inception3 key layout saved by
torch.save, as tools/export_inception.py --weights takes; read without PyTorch; fc.* become
softmax/* when they are [1008,2048]/[1008], as an export's classifier_weight/classifier_bias do,
else seeded) or --seed N (deterministic synthetic weights: fan-in scaled kernels, near-identity
batch norm). The GraphDef says producer version 8,
as the 2015 file does (BatchNormWithGlobalNormalization is refused from version 9 on).

Run with a Python that has TensorFlow (tools/peers_setup.sh tensorflow):
    ~/.cache/vecbench/venv/bin/python tools/make_tf_graph.py --seed 0 --out classify_image_graph_def.pb
"""

import argparse
import collections
import os
import pickle
import sys
import zipfile

import numpy as np

PROG = "make_tf_graph.py"
NUM_CLASSES = 1008
PRODUCER = 8  # GraphDef version of the 2015 file: BatchNormWithGlobalNormalization still allowed
BN_EPS = 0.001


# --------------------------------------------------------------------------------------------
# A torch.save state_dict, read with numpy only (zip: data.pkl + data/<key> raw storages)
# --------------------------------------------------------------------------------------------

_STORAGE_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                   "LongStorage": np.int64, "IntStorage": np.int32, "BoolStorage": np.bool_,
                   "ByteStorage": np.uint8}


def _rebuild_tensor(storage, offset, size, stride, *_rest):
    arr, = storage
    if not size:
        return arr[offset].copy()
    itemsize = arr.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(arr[offset:], shape=tuple(size),
                                           strides=tuple(s * itemsize for s in stride))
    return np.ascontiguousarray(view)


def read_torch_state_dict(path):
    """{key: numpy array} of a torch.save'd state_dict (or {'state_dict': ...})."""
    with zipfile.ZipFile(path) as z:
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkl:
            raise ValueError("not a torch.save zip file (no data.pkl)")
        prefix = pkl[0][:-len("data.pkl")]
        cache = {}

        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) in (("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor")):
                    return _rebuild_tensor
                if module == "torch" and name in _STORAGE_DTYPES:
                    return _STORAGE_DTYPES[name]
                if (module, name) == ("collections", "OrderedDict"):
                    return collections.OrderedDict
                raise pickle.UnpicklingError(f"{module}.{name} is not part of a plain state_dict")

            def persistent_load(self, pid):
                _kind, dtype, key, _location, _numel = pid
                if key not in cache:
                    cache[key] = np.frombuffer(z.read(f"{prefix}data/{key}"), dtype=dtype)
                return (cache[key],)

        with z.open(pkl[0]) as f:
            obj = Unpickler(f).load()
    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ValueError(f"expected a state_dict, got {type(obj).__name__}")
    return {(k[len("module."):] if k.startswith("module.") else k): v for k, v in obj.items()}


# --------------------------------------------------------------------------------------------
# The network, as torchvision prefixes and TF scopes
# --------------------------------------------------------------------------------------------

class Weights:
    """Conv kernels (HWIO) and batch norms by torchvision prefix: from a state_dict or a seed."""

    def __init__(self, state_dict=None, seed=0):
        self.sd = state_dict
        self.rng = np.random.default_rng(seed)
        self.used = set()

    def _get(self, key, shape):
        if key not in self.sd:
            raise KeyError(f"missing key {key}")
        v = np.asarray(self.sd[key], dtype=np.float32)
        if tuple(v.shape) != tuple(shape):
            raise ValueError(f"{key}: shape {list(v.shape)}, the network needs {list(shape)}")
        self.used.add(key)
        return v

    def conv(self, prefix, kh, kw, cin, cout):
        if self.sd is None:
            std = np.sqrt(2.0 / (kh * kw * cin))
            kernel = (self.rng.standard_normal((kh, kw, cin, cout)) * std).astype(np.float32)
            bn = {"beta": 0.02 * self.rng.standard_normal(cout), "gamma": np.ones(cout),
                  "moving_mean": 0.02 * self.rng.standard_normal(cout),
                  "moving_variance": 1.0 + 0.1 * self.rng.random(cout)}
            return kernel, {k: v.astype(np.float32) for k, v in bn.items()}
        w = self._get(f"{prefix}.conv.weight", (cout, cin, kh, kw))
        bn = {"beta": self._get(f"{prefix}.bn.bias", (cout,)), "gamma": self._get(f"{prefix}.bn.weight", (cout,)),
              "moving_mean": self._get(f"{prefix}.bn.running_mean", (cout,)),
              "moving_variance": self._get(f"{prefix}.bn.running_var", (cout,))}
        return np.ascontiguousarray(w.transpose(2, 3, 1, 0)), bn

    def softmax(self):
        # a state_dict's fc, or an export's classifier buffers (tools/export_inception.py keeps it)
        for w, b in (("fc.weight", "fc.bias"), ("classifier_weight", "classifier_bias")):
            if self.sd is not None and w in self.sd and np.shape(self.sd[w]) == (NUM_CLASSES, 2048):
                return np.ascontiguousarray(self._get(w, (NUM_CLASSES, 2048)).T), self._get(b, (NUM_CLASSES,))
        rng = np.random.default_rng(1008)
        return ((0.02 * rng.standard_normal((2048, NUM_CLASSES))).astype(np.float32),
                (0.01 * rng.standard_normal(NUM_CLASSES)).astype(np.float32))


class GraphBuilder:
    """Writes NodeDefs with TensorFlow's proto classes and op types of the 2015 graph."""

    def __init__(self, tf, weights):
        from tensorflow.core.framework import attr_value_pb2, graph_pb2, types_pb2
        self.tf, self.av, self.types, self.w = tf, attr_value_pb2.AttrValue, types_pb2, weights
        self.g = graph_pb2.GraphDef()
        self.g.versions.producer = PRODUCER
        self.channels = {}

    def node(self, name, op, inputs=(), **attrs):
        n = self.g.node.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for k, v in attrs.items():
            n.attr[k].CopyFrom(v)
        return name

    def t(self, dtype):
        return self.av(type=dtype)

    def ints(self, vals):
        return self.av(list=self.av.ListValue(i=list(vals)))

    def const(self, name, arr, dtype=None):
        arr = np.asarray(arr, dtype=dtype)
        tp = self.tf.make_tensor_proto(arr)
        return self.node(name, "Const", dtype=self.av(type=tp.dtype), value=self.av(tensor=tp))

    def conv(self, prefix, scope, x, cout, kh, kw, stride=1, padding="SAME"):
        F = self.types.DT_FLOAT
        cin = self.channels[x]
        kernel, bn = self.w.conv(prefix, kh, kw, cin, cout)
        p = self.const(f"{scope}/conv2d_params", kernel)
        c = self.node(f"{scope}/Conv2D", "Conv2D", [x, p], T=self.t(F), padding=self.av(s=padding.encode()),
                      strides=self.ints([1, stride, stride, 1]), use_cudnn_on_gpu=self.av(b=True),
                      data_format=self.av(s=b"NHWC"))
        names = [self.const(f"{scope}/batchnorm/{k}", bn[k]) for k in ("moving_mean", "moving_variance", "beta", "gamma")]
        # gamma of ones is what scale_after_normalization=false means; any other gamma is applied
        scale = not np.all(bn["gamma"] == 1.0)
        b = self.node(f"{scope}/batchnorm", "BatchNormWithGlobalNormalization", [c] + names, T=self.t(F),
                      variance_epsilon=self.av(f=BN_EPS), scale_after_normalization=self.av(b=bool(scale)))
        out = self.node(scope, "Relu", [b], T=self.t(F))
        self.channels[out] = cout
        return out

    def pool(self, op, name, x, k, stride, padding):
        out = self.node(name, op, [x], T=self.t(self.types.DT_FLOAT), ksize=self.ints([1, k, k, 1]),
                        strides=self.ints([1, stride, stride, 1]), padding=self.av(s=padding.encode()),
                        data_format=self.av(s=b"NHWC"))
        self.channels[out] = self.channels[x]
        return out

    def concat(self, name, xs):
        d = self.const(f"{name}/concat_dim", np.array(3, np.int32))
        out = self.node(name, "Concat", [d] + list(xs), N=self.av(i=len(xs)), T=self.t(self.types.DT_FLOAT))
        self.channels[out] = sum(self.channels[x] for x in xs)
        return out


def _c(i):
    return "conv" if i == 0 else f"conv_{i}"


def _tower(b, block, scope, x, convs):
    """convs: (torch branch name, cout, kh, kw[, stride, padding]) in sequence under scope."""
    for i, spec in enumerate(convs):
        name, cout, kh, kw = spec[:4]
        stride, padding = (spec[4], spec[5]) if len(spec) > 4 else (1, "SAME")
        x = b.conv(f"{block}.{name}", f"{scope}/{_c(i)}", x, cout, kh, kw, stride, padding)
    return x


def block_a(b, block, s, x, pool_features):
    outs = [b.conv(f"{block}.branch1x1", f"{s}/conv", x, 64, 1, 1),
            _tower(b, block, f"{s}/tower", x, [("branch5x5_1", 48, 1, 1), ("branch5x5_2", 64, 5, 5)]),
            _tower(b, block, f"{s}/tower_1", x, [("branch3x3dbl_1", 64, 1, 1), ("branch3x3dbl_2", 96, 3, 3),
                                                  ("branch3x3dbl_3", 96, 3, 3)])]
    p = b.pool("AvgPool", f"{s}/tower_2/pool", x, 3, 1, "SAME")
    outs.append(b.conv(f"{block}.branch_pool", f"{s}/tower_2/conv", p, pool_features, 1, 1))
    return b.concat(f"{s}/join", outs)


def block_b(b, s, x):  # Mixed_6a
    outs = [b.conv("Mixed_6a.branch3x3", f"{s}/conv", x, 384, 3, 3, 2, "VALID"),
            _tower(b, "Mixed_6a", f"{s}/tower", x, [("branch3x3dbl_1", 64, 1, 1), ("branch3x3dbl_2", 96, 3, 3),
                                                    ("branch3x3dbl_3", 96, 3, 3, 2, "VALID")]),
            b.pool("MaxPool", f"{s}/pool", x, 3, 2, "VALID")]
    return b.concat(f"{s}/join", outs)


def block_c(b, block, s, x, c7):
    outs = [b.conv(f"{block}.branch1x1", f"{s}/conv", x, 192, 1, 1),
            _tower(b, block, f"{s}/tower", x, [("branch7x7_1", c7, 1, 1), ("branch7x7_2", c7, 1, 7),
                                                ("branch7x7_3", 192, 7, 1)]),
            _tower(b, block, f"{s}/tower_1", x, [("branch7x7dbl_1", c7, 1, 1), ("branch7x7dbl_2", c7, 7, 1),
                                                  ("branch7x7dbl_3", c7, 1, 7), ("branch7x7dbl_4", c7, 7, 1),
                                                  ("branch7x7dbl_5", 192, 1, 7)])]
    p = b.pool("AvgPool", f"{s}/tower_2/pool", x, 3, 1, "SAME")
    outs.append(b.conv(f"{block}.branch_pool", f"{s}/tower_2/conv", p, 192, 1, 1))
    return b.concat(f"{s}/join", outs)


def block_d(b, s, x):  # Mixed_7a
    outs = [_tower(b, "Mixed_7a", f"{s}/tower", x, [("branch3x3_1", 192, 1, 1),
                                                    ("branch3x3_2", 320, 3, 3, 2, "VALID")]),
            _tower(b, "Mixed_7a", f"{s}/tower_1", x, [("branch7x7x3_1", 192, 1, 1), ("branch7x7x3_2", 192, 1, 7),
                                                      ("branch7x7x3_3", 192, 7, 1),
                                                      ("branch7x7x3_4", 192, 3, 3, 2, "VALID")]),
            b.pool("MaxPool", f"{s}/pool", x, 3, 2, "VALID")]
    return b.concat(f"{s}/join", outs)


def block_e(b, block, s, x, pool_op):
    t = b.conv(f"{block}.branch3x3_1", f"{s}/tower/conv", x, 384, 1, 1)
    t = b.concat(f"{s}/tower/mixed", [b.conv(f"{block}.branch3x3_2a", f"{s}/tower/mixed/conv", t, 384, 1, 3),
                                      b.conv(f"{block}.branch3x3_2b", f"{s}/tower/mixed/conv_1", t, 384, 3, 1)])
    d = _tower(b, block, f"{s}/tower_1", x, [("branch3x3dbl_1", 448, 1, 1), ("branch3x3dbl_2", 384, 3, 3)])
    d = b.concat(f"{s}/tower_1/mixed", [b.conv(f"{block}.branch3x3dbl_3a", f"{s}/tower_1/mixed/conv", d, 384, 1, 3),
                                        b.conv(f"{block}.branch3x3dbl_3b", f"{s}/tower_1/mixed/conv_1", d, 384, 3, 1)])
    p = b.pool(pool_op, f"{s}/tower_2/pool", x, 3, 1, "SAME")
    outs = [b.conv(f"{block}.branch1x1", f"{s}/conv", x, 320, 1, 1), t, d,
            b.conv(f"{block}.branch_pool", f"{s}/tower_2/conv", p, 192, 1, 1)]
    return b.concat(f"{s}/join", outs)


def build_graph_def(tf, weights):
    b = GraphBuilder(tf, weights)
    T = b.types
    b.node("DecodeJpeg/contents", "Const", dtype=b.t(T.DT_STRING),
           value=b.av(tensor=tf.make_tensor_proto(b"", dtype=tf.string)))
    b.node("DecodeJpeg", "DecodeJpeg", ["DecodeJpeg/contents"], channels=b.av(i=3), ratio=b.av(i=1),
           fancy_upscaling=b.av(b=True), try_recover_truncated=b.av(b=False), acceptable_fraction=b.av(f=1.0))
    b.node("Cast", "Cast", ["DecodeJpeg"], SrcT=b.t(T.DT_UINT8), DstT=b.t(T.DT_FLOAT))
    b.const("ExpandDims/dim", np.array(0, np.int32))
    b.node("ExpandDims", "ExpandDims", ["Cast", "ExpandDims/dim"], T=b.t(T.DT_FLOAT), Tdim=b.t(T.DT_INT32))
    b.const("ResizeBilinear/size", np.array([299, 299], np.int32))
    b.node("ResizeBilinear", "ResizeBilinear", ["ExpandDims", "ResizeBilinear/size"], T=b.t(T.DT_FLOAT),
           align_corners=b.av(b=False))
    b.const("Sub/y", np.array(128.0, np.float32))
    b.node("Sub", "Sub", ["ResizeBilinear", "Sub/y"], T=b.t(T.DT_FLOAT))
    b.const("Mul/y", np.array(1.0 / 128.0, np.float32))
    x = b.node("Mul", "Mul", ["Sub", "Mul/y"], T=b.t(T.DT_FLOAT))
    b.channels[x] = 3
    x = b.conv("Conv2d_1a_3x3", "conv", x, 32, 3, 3, 2, "VALID")
    x = b.conv("Conv2d_2a_3x3", "conv_1", x, 32, 3, 3, 1, "VALID")
    x = b.conv("Conv2d_2b_3x3", "conv_2", x, 64, 3, 3)
    x = b.pool("MaxPool", "pool", x, 3, 2, "VALID")
    x = b.conv("Conv2d_3b_1x1", "conv_3", x, 80, 1, 1, 1, "VALID")
    x = b.conv("Conv2d_4a_3x3", "conv_4", x, 192, 3, 3, 1, "VALID")
    x = b.pool("MaxPool", "pool_1", x, 3, 2, "VALID")
    x = block_a(b, "Mixed_5b", "mixed", x, 32)
    x = block_a(b, "Mixed_5c", "mixed_1", x, 64)
    x = block_a(b, "Mixed_5d", "mixed_2", x, 64)
    x = block_b(b, "mixed_3", x)
    for i, (block, c7) in enumerate((("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192))):
        x = block_c(b, block, f"mixed_{4 + i}", x, c7)
    x = block_d(b, "mixed_8", x)
    x = block_e(b, "Mixed_7b", "mixed_9", x, "AvgPool")
    x = block_e(b, "Mixed_7c", "mixed_10", x, "MaxPool")
    x = b.pool("AvgPool", "pool_3", x, 8, 1, "VALID")
    b.const("pool_3/_reshape/shape", np.array([1, 2048], np.int32))
    r = b.node("pool_3/_reshape", "Reshape", [x, "pool_3/_reshape/shape"], T=b.t(T.DT_FLOAT), Tshape=b.t(T.DT_INT32))
    sw, sb = weights.softmax()
    b.const("softmax/weights", sw)
    b.const("softmax/biases", sb)
    m = b.node("softmax/logits/MatMul", "MatMul", [r, "softmax/weights"], T=b.t(T.DT_FLOAT),
               transpose_a=b.av(b=False), transpose_b=b.av(b=False))
    lg = b.node("softmax/logits", "Add", [m, "softmax/biases"], T=b.t(T.DT_FLOAT))
    b.node("softmax", "Softmax", [lg], T=b.t(T.DT_FLOAT))
    return b.g


def check_runs(tf, graph_def):
    """Imports the GraphDef and runs one image through it: pool_3 [1,1,1,2048], finite."""
    v1 = tf.compat.v1
    with tf.Graph().as_default() as g:
        v1.import_graph_def(graph_def, name="")
    with v1.Session(graph=g) as s:
        img = (np.arange(200 * 150 * 3) % 251).astype(np.uint8).reshape(200, 150, 3)
        pool, sm = s.run(["pool_3:0", "softmax:0"], {"DecodeJpeg:0": img})
    if pool.shape != (1, 1, 1, 2048) or sm.shape != (1, NUM_CLASSES) or not np.isfinite(pool).all():
        raise RuntimeError(f"graph runs but gives pool_3 {pool.shape}, softmax {sm.shape}")
    return float(pool.mean())


def main(argv=None):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output frozen GraphDef (.pb)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=int, help="synthetic weights from this seed (default 0)")
    src.add_argument("--weights", metavar="FILE", help="torchvision-layout state_dict (torch.save)")
    args = p.parse_args(argv)
    try:
        import tensorflow as tf
    except ImportError as e:
        print(f"{PROG}: error: needs TensorFlow ({e}); tools/peers_setup.sh tensorflow installs it", file=sys.stderr)
        return 2
    if args.weights is not None:
        try:
            sd = read_torch_state_dict(args.weights)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, pickle.UnpicklingError) as e:
            print(f"{PROG}: error: {args.weights}: {e}", file=sys.stderr)
            return 2
        weights, source = Weights(sd), f"weights:{os.path.basename(args.weights)}"
    else:
        seed = 0 if args.seed is None else args.seed
        weights, source = Weights(None, seed), f"seed:{seed}"
    try:
        gd = build_graph_def(tf, weights)
    except (KeyError, ValueError) as e:
        print(f"{PROG}: error: {args.weights}: not a torchvision-layout Inception-v3 state_dict: {e}",
              file=sys.stderr)
        return 2
    if weights.sd is not None:
        left = sorted(k for k in weights.sd if k not in weights.used and not k.startswith(("AuxLogits.", "fc."))
                      and not k.endswith("num_batches_tracked") and not k.startswith(("input_", "classifier_")))
        if left:
            print(f"{PROG}: error: {args.weights}: unexpected keys {left[:6]}", file=sys.stderr)
            return 2
    mean = check_runs(tf, gd)
    data = gd.SerializeToString(deterministic=True)  # map fields in key order: the same bytes every run
    tmp = f"{args.out}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, args.out)
    print(f"{PROG}: wrote {args.out} ({len(gd.node)} nodes, {len(data) / 1e6:.1f} MB) source={source} "
          f"tensorflow={tf.__version__} pool_3_mean={mean:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
