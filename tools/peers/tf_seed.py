#!/usr/bin/env python3
"""The seed's program (shared/seed/program.py, TF 1.14) ported to TensorFlow 2 (tf.compat.v1), on
the CPU: classify_image_graph_def.pb (tools/make_tf_graph.py), one Session, per image
`PIL.Image.open(p).convert('RGB')` -> `session.run(pool_3:0, {'DecodeJpeg:0': image})` ->
`np.squeeze` -> `np.savetxt(basename + '.vc')`.

--mode single    the seed's single-device loop
--mode posted    3 logical devices made as the seed made them (set_logical_device_configuration,
                 here on the CPU, after the Session exists), then for each device
                 `with tf.device(d):` a loop over the WHOLE list (as posted), .vc files afterwards
--mode chunked   the same with the asker's commented-out variant: each device a third of the list
--mode graph-copies  the answer's TF 1 fix: the graph imported once per device under
                 tf.device (3 copies), one Session.run feeding one image to each copy
--mode function  the answer's TF 2 fix: the graph as a function (wrap_function importing it
                 with DecodeJpeg:0 mapped to the argument; its batch norms respelled in plain ops,
                 since TF 2 refuses BatchNormWithGlobalNormalization inside functions), one tf.function calling it under each tf.device,
                 fed by tf.data (PIL decode in parallel, prefetch)

img_per_s = images in the list / seconds from the first image to the last .vc written (the
seed's own "Single GPU" / "All time" clocks, graph loading excluded; `posted` does 3x the work).
usage: tf_seed.py --mode M --graph classify_image_graph_def.pb --out DIR IMG...  (or --list FILE)"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from PIL import Image  # noqa: E402

v1 = tf.compat.v1
NDEV = 3


def load_graph_def(path):
    gd = v1.GraphDef()
    with open(path, "rb") as f:
        gd.ParseFromString(f.read())
    return gd


def load_graph(path):
    with tf.Graph().as_default() as graph:
        v1.import_graph_def(load_graph_def(path), name="")
    return graph


def save(out_dir, image, vector):
    np.savetxt(os.path.join(out_dir, os.path.basename(image) + ".vc"), np.squeeze(vector), delimiter=",")


def seed_config():
    config = v1.ConfigProto()
    config.gpu_options.per_process_gpu_memory_fraction = 0.9  # as posted (no effect on the CPU)
    config.gpu_options.allow_growth = True
    return config


def make_logical_devices():
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * NDEV)
    return tf.config.list_logical_devices("CPU")


def run_single(graph_path, images, out_dir):
    session = v1.Session(graph=load_graph(graph_path), config=seed_config())
    t0 = time.time()
    for image in images:
        with Image.open(image) as f:
            image_data = f.convert("RGB")
            feature_tensor = session.graph.get_tensor_by_name("pool_3:0")
            feature_vector = session.run(feature_tensor, {"DecodeJpeg:0": image_data})
            save(out_dir, image, feature_vector)
    dt = time.time() - t0
    session.close()
    return dt, len(images), "session_devices=1"


def run_seed_multi(graph_path, images, out_dir, chunked):
    session = v1.Session(graph=load_graph(graph_path), config=seed_config())
    gpus = make_logical_devices()  # after the Session, as in the seed: the Session never sees them
    n = len(images)
    chunks = [images[i * n // NDEV:(i + 1) * n // NDEV] for i in range(NDEV)] if chunked else [images] * NDEV
    t0 = time.time()
    feature_vectors = []
    runs = 0
    for gpu, selected_list in zip(gpus, chunks):
        with tf.device(gpu.name):  # places no node: the loop creates none; Session.run blocks
            for image in selected_list:
                with Image.open(image) as f:
                    image_data = f.convert("RGB")
                    feature_tensor = session.graph.get_tensor_by_name("pool_3:0")
                    feature_vectors.append(session.run(feature_tensor, {"DecodeJpeg:0": image_data}))
                    runs += 1
    for image_index, image in enumerate(images):
        save(out_dir, image, feature_vectors[image_index])
    dt = time.time() - t0
    devices = len(session.list_devices())
    session.close()
    return dt, runs, f"logical_devices={len(gpus)} session_devices={devices}"


def run_graph_copies(graph_path, images, out_dir):
    tf.config.threading.set_inter_op_parallelism_threads(NDEV)  # the copies run side by side
    devs = make_logical_devices()
    gd = load_graph_def(graph_path)
    with tf.Graph().as_default() as graph:
        for i, d in enumerate(devs):
            with tf.device(d.name):
                v1.import_graph_def(gd, name=f"dev{i}")
    session = v1.Session(graph=graph)  # config None: the context's, which has the logical devices
    fetches = [graph.get_tensor_by_name(f"dev{i}/pool_3:0") for i in range(NDEV)]
    t0 = time.time()
    runs = 0
    for s in range(0, len(images), NDEV):
        group = images[s:s + NDEV]
        feed = {}
        for i, image in enumerate(group):
            with Image.open(image) as f:
                feed[f"dev{i}/DecodeJpeg:0"] = f.convert("RGB")
        vectors = session.run(fetches[:len(group)], feed)
        runs += 1
        for image, v in zip(group, vectors):
            save(out_dir, image, v)
    dt = time.time() - t0
    session.close()
    return dt, runs, f"logical_devices={len(devs)} graph_copies={NDEV}"


def without_global_bn(gd):
    """The GraphDef with each BatchNormWithGlobalNormalization (refused inside functions: TF 2
    checks ops against its own GraphDef version there, and the op is gone from version 9 on)
    spelled as the kernel computes it: (t - mean) * rsqrt(var + eps) [* gamma] + beta."""
    from tensorflow.core.framework import attr_value_pb2, node_def_pb2
    out = v1.GraphDef()
    out.versions.CopyFrom(gd.versions)
    f32 = attr_value_pb2.AttrValue(type=tf.float32.as_datatype_enum)

    def node(name, op, inputs, **attrs):
        n = node_def_pb2.NodeDef(name=name, op=op, input=inputs)
        n.attr["T"].CopyFrom(f32)
        for k, v in attrs.items():
            n.attr[k].CopyFrom(v)
        out.node.append(n)

    for n in gd.node:
        if n.op != "BatchNormWithGlobalNormalization":
            out.node.append(n)
            continue
        t, m, var, beta, gamma = n.input
        eps = tf.make_tensor_proto(np.float32(n.attr["variance_epsilon"].f))
        c = node_def_pb2.NodeDef(name=f"{n.name}/eps", op="Const")
        c.attr["dtype"].CopyFrom(f32)
        c.attr["value"].CopyFrom(attr_value_pb2.AttrValue(tensor=eps))
        out.node.append(c)
        node(f"{n.name}/add_eps", "AddV2", [var, f"{n.name}/eps"])
        node(f"{n.name}/rsqrt", "Rsqrt", [f"{n.name}/add_eps"])
        scale = f"{n.name}/rsqrt"
        if n.attr["scale_after_normalization"].b:
            node(f"{n.name}/scale", "Mul", [scale, gamma])
            scale = f"{n.name}/scale"
        node(f"{n.name}/centred", "Sub", [t, m])
        node(f"{n.name}/scaled", "Mul", [f"{n.name}/centred", scale])
        node(n.name, "AddV2", [f"{n.name}/scaled", beta])
    return out


def run_function(graph_path, images, out_dir):
    devs = make_logical_devices()
    gd = without_global_bn(load_graph_def(graph_path))
    spec = tf.TensorSpec([None, None, 3], tf.uint8)
    pool3 = v1.wrap_function(lambda img: v1.import_graph_def(gd, input_map={"DecodeJpeg:0": img},
                                                             return_elements=["pool_3:0"], name="")[0], [spec])

    @tf.function(input_signature=[spec] * NDEV)
    def step(*imgs):
        outs = []
        for d, img in zip(devs, imgs):
            with tf.device(d.name):
                outs.append(pool3(img))
        return outs

    @tf.function(input_signature=[spec])
    def one(img):
        return pool3(img)

    def decode(path):
        with Image.open(path.numpy().decode()) as f:
            return np.asarray(f.convert("RGB"))

    ds = tf.data.Dataset.from_tensor_slices(images).map(
        lambda p: tf.py_function(decode, [p], tf.uint8), num_parallel_calls=tf.data.AUTOTUNE).prefetch(2 * NDEV)
    step(*[tf.zeros([8, 8, 3], tf.uint8)] * NDEV)  # traced before the clock, as a Session's graph is built before
    one(tf.zeros([8, 8, 3], tf.uint8))
    t0 = time.time()
    pending, runs, k = [], 0, 0
    for img in ds:
        pending.append(img)
        if len(pending) == NDEV:
            for v in step(*pending):
                save(out_dir, images[k], v.numpy())
                k += 1
            pending, runs = [], runs + 1
    for img in pending:
        save(out_dir, images[k], one(img).numpy())
        k += 1
        runs += 1
    dt = time.time() - t0
    return dt, runs, f"logical_devices={len(devs)} tf_function=1 tf_data=1"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", required=True, choices=["single", "posted", "chunked", "graph-copies", "function"])
    p.add_argument("--graph", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--list", help="a list file, one path per line")
    p.add_argument("images", nargs="*")
    a = p.parse_args()
    images = list(a.images)
    if a.list:
        with open(a.list) as f:
            images += [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    if not images:
        p.error("no images")
    if not os.path.isfile(a.graph):
        print(f"tf_seed: skipped: no graph {a.graph} (tools/peers_setup.sh makes it)")
        return 2
    os.makedirs(a.out, exist_ok=True)
    run = {"single": run_single, "posted": lambda g, i, o: run_seed_multi(g, i, o, False),
           "chunked": lambda g, i, o: run_seed_multi(g, i, o, True),
           "graph-copies": run_graph_copies, "function": run_function}[a.mode]
    dt, runs, what = run(a.graph, images, a.out)
    print(f"tf_seed mode={a.mode} tensorflow={tf.__version__} {what} session_runs={runs} images={len(images)} "
          f"seconds={dt:.2f} img_per_s={len(images) / dt:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
