"""The reference tools' results kept between runs, by the hash of everything they read.

The FID tests (fid_tools.py, tf_fidelity.py) compare vecbench with pytorch-fid, torch-fidelity,
clean-fid and TensorFlow run on the same files. The tools' side is ~400 Inception forwards in
PyTorch or TensorFlow per test, three quarters of each test's time, and it gives the same number
for the same bytes: so its result is kept under a key that hashes every input the tool reads (the
image files' names and bytes, the weights file, the tool's code and the versions of the tool and
of the libraries that compute its number). Any change to one of them is another key, and the tool
runs again; vecbench's side always runs. Nothing is kept in the repository: a fresh machine runs
every tool, as before.

VECBENCH_REFERENCE_CACHE: the folder (default ~/.cache/vecbench/references); "off" runs every
tool every time.
"""
import datetime
import hashlib
import json
import os
import tempfile


def cache_dir():
    d = os.environ.get("VECBENCH_REFERENCE_CACHE", os.path.expanduser("~/.cache/vecbench/references"))
    return None if d.lower() in ("", "0", "off", "no") else d


class Key:
    """A SHA-256 over labelled parts: texts, files (their bytes) and folders (each file's name and bytes)."""

    def __init__(self, name):
        self.name = name
        self.h = hashlib.sha256()
        self.text("reference", name)

    def _part(self, label, data):
        for b in (label.encode(), data):
            self.h.update(len(b).to_bytes(8, "little"))
            self.h.update(b)

    def text(self, label, s):
        self._part(label, str(s).encode())
        return self

    def file(self, label, path):
        with open(path, "rb") as f:
            self._part(label, f.read())
        return self

    def folder(self, label, path):
        names = sorted(os.listdir(path))
        self.text(label + "/", "\n".join(names))
        for n in names:
            self.file(f"{label}/{n}", os.path.join(path, n))
        return self

    def hexdigest(self):
        return self.h.hexdigest()


def cached(key, compute):
    """compute()'s JSON-able result, from the cache when `key` was computed before; says which on stdout."""
    d = cache_dir()
    digest = key.hexdigest()
    path = os.path.join(d, f"{key.name}-{digest[:32]}.json") if d else None
    if path and os.path.isfile(path):
        try:
            with open(path) as f:
                kept = json.load(f)
            if kept.get("key") == digest:
                print(f"reference {key.name}: kept from {kept['computed']} (key {digest[:16]}, {path})", flush=True)
                return kept["result"]
        except (OSError, ValueError, KeyError):
            pass  # unreadable: computed again and rewritten below
    result = compute()
    if path:
        os.makedirs(d, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump({"key": digest, "name": key.name, "computed": now, "result": result}, f)
        os.replace(tmp, path)
        print(f"reference {key.name}: computed and kept (key {digest[:16]}, {path})", flush=True)
    return result
