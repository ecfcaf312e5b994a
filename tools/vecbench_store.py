"""Read the vectors of a vecbench output folder from Python (NumPy), either format.

`store_vectors(store, dtype)` returns {input path as written in the manifest: 1-D vector} for every
input whose newest manifest line says `ok`, across every `manifest*.jsonl` of the folder (a store
written by several ranks or shards has one per writer): `--format npy` lines name their own file
(`output`), `--format shards` lines a shard and a row (`shard`, `row`). Needs NumPy (Debian's
python3-numpy). Used by the tests (tests/py/encoder_tools.py) and the sensitivity tools
(tools/fid_sensitivity.py, tools/fd_dinov2_sensitivity.py).
"""
import json
import os

import numpy as np


def store_vectors(store, dtype=np.float32):
    """{input: 1-D vector as `dtype` (the stores hold float32)} of the newest `ok` line of each input
    in the folder `store`."""
    lines = {}
    for m in sorted(f for f in os.listdir(store) if f.startswith("manifest") and f.endswith(".jsonl")):
        with open(os.path.join(store, m)) as f:
            for line in f:
                r = json.loads(line)
                lines[r["input"]] = r  # the newest line of an input wins, ok or not
    shards = {}
    out = {}
    for name, r in lines.items():
        if r.get("status") != "ok":
            continue
        if "output" in r:
            out[name] = np.load(os.path.join(store, r["output"])).reshape(-1).astype(dtype)
        else:
            if r["shard"] not in shards:
                shards[r["shard"]] = np.load(os.path.join(store, r["shard"]), mmap_mode="r")
            out[name] = np.array(shards[r["shard"]][r["row"]], dtype=dtype)
    return out
