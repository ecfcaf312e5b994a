"""The inputs a tool-parity test file's processes share: image folders and weights files, made once.

ctest runs each of fid_tools.py's and encoder_tools.py's tests in its own process (both cores busy);
each process made the same crops and random weights again (12 s of CPU each for fid_tools.py). Now
the fixture test `py.NAME.inputs` (tests/CMakeLists.txt: `SCRIPT --prepare`) makes them once in
$VECBENCH_TOOL_INPUTS/NAME, which the file's tests require and only read; a test run alone
(no VECBENCH_TOOL_INPUTS) makes its own in its temporary folder, as before.
"""
import os
import shutil
import tempfile


def root():
    return os.environ.get("VECBENCH_TOOL_INPUTS") or None


def prepare(name, make):
    """The fixture: $VECBENCH_TOOL_INPUTS/NAME made afresh by make(folder), marked ready last."""
    folder = os.path.join(root(), name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    make(folder)
    with open(os.path.join(folder, ".ready"), "w") as f:
        f.write("ready\n")
    print(f"{name}: inputs made in {folder}")


def inputs(name, make):
    """(inputs folder, a TemporaryDirectory for the caller's own files, on the same file system)."""
    shared = root()
    if shared:
        folder = os.path.join(shared, name)
        if not os.path.isfile(os.path.join(folder, ".ready")):
            raise RuntimeError(f"{folder}: not made (ctest's fixture py.{name}.inputs makes it)")
        return folder, tempfile.TemporaryDirectory(dir=shared, prefix=f"{name}-")
    tmp = tempfile.TemporaryDirectory()
    folder = os.path.join(tmp.name, "inputs")
    os.makedirs(folder)
    make(folder)
    return folder, tmp


def link_files(src, dst, first=None):
    """dst/ with a hard link (a copy across file systems) of each file of src/ (of its `first` files
    by name, when given): a test's own folder (a $TORCH_HOME that a tool may write into) holding the
    shared files, or a subset of an image folder."""
    os.makedirs(dst, exist_ok=True)
    for n in sorted(os.listdir(src))[:first]:
        try:
            os.link(os.path.join(src, n), os.path.join(dst, n))
        except OSError:
            shutil.copyfile(os.path.join(src, n), os.path.join(dst, n))
