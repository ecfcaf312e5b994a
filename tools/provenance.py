#!/usr/bin/env python3
"""Which binary made a results file (issue #63): the commit it was built from and whether that tree
was dirty, as the binary itself says (`vecbench --version`: compiled in by tools/build_info.cmake
at every build, never read from the checkout, which may hold another commit by now), and the
commit of the scripts that ran it. Every script that writes a results file takes this record
first and writes it into the file.

A binary built from a dirty tree (or one that cannot say its commit) is refused: its figures
belong to no commit. Told otherwise (--allow-dirty, or VECBENCH_ALLOW_DIRTY=1 in the environment)
it runs, and the record says **dirty** where the file's reader sees it.

  python3 tools/provenance.py BINARY [--allow-dirty] [--json | --markdown]
      exit 0 and the record (JSON, or one markdown line); exit 1 and the reason when refused
  from provenance import binary_record, markdown_line   # from a script in tools/

image_set_record() names an image set by the SHA-256 of its files' checksums, so that a results file
says which set it measured (tools/make_photo_crops.py pins the photo-crop set by the same digest).
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# vecbench 0.1.0 (cba1cb88ab9e, Release) / (cba1cb88ab9e, dirty, Release) / (unknown, Release)
VERSION = re.compile(r"^vecbench (?P<version>\S+) \((?P<sha>[0-9a-f]{7,40}|unknown)(?P<dirty>, dirty)?, (?P<type>[^)]*)\)")


class Refused(Exception):
    """The binary's build belongs to no commit and the caller did not allow it."""


def allow_dirty_from_env():
    return os.environ.get("VECBENCH_ALLOW_DIRTY", "") not in ("", "0")


def _git(*args):
    r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def scripts_record():
    """The commit of this checkout's scripts and whether tools/ (or anything but results/) differs from it."""
    sha = _git("rev-parse", "--short=12", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return {"commit": sha or "unknown", "dirty": bool(status) if status is not None else None}


def binary_record(binary, allow_dirty=None):
    """{'binary', 'version_line', 'commit', 'dirty', 'build_type', 'allowed_dirty', 'scripts'} of BINARY,
    or Refused when its tree was dirty or its commit unknown and allow_dirty (default: the environment)
    is false."""
    if allow_dirty is None:
        allow_dirty = allow_dirty_from_env()
    try:
        r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
        out = (r.stdout.strip() or r.stderr.strip())
        line = out.splitlines()[0] if out else ""
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Refused(f"{binary}: cannot run --version ({e})")
    m = VERSION.match(line)
    if not m:
        raise Refused(f"{binary}: --version printed {line!r}, not 'vecbench VERSION (COMMIT[, dirty], TYPE)'")
    rec = {"binary": binary, "version_line": line, "commit": m["sha"], "dirty": bool(m["dirty"]),
           "build_type": m["type"], "allowed_dirty": False, "scripts": scripts_record()}
    unsure = rec["dirty"] or rec["commit"] == "unknown"
    if unsure and not allow_dirty:
        why = "was built from a dirty tree" if rec["dirty"] else "does not know its commit (built outside git)"
        raise Refused(f"{binary} ({line}) {why}: its figures would belong to no commit. Commit, rebuild and rerun; "
                      "or allow it (--allow-dirty / VECBENCH_ALLOW_DIRTY=1) and the results file says dirty")
    rec["allowed_dirty"] = unsure
    return rec


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checksum_lines(folder):
    """sha256sum's lines ('SHA256  NAME') of every file below FOLDER, NAME relative to it, sorted by NAME."""
    names = sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, files in os.walk(folder) for f in files)
    return "".join(f"{file_sha256(os.path.join(folder, n))}  {n}\n" for n in names)


def image_set_record(images):
    """{'path', 'files', 'sha256'} of an image set (a folder, or a list file of paths): the SHA-256 of its
    checksum lines, which for a folder is the SHA-256 of `sha256sum` of its files sorted by name (a photo-crop
    set's pinned crops.sha256, results/photo-crops/)."""
    if os.path.isdir(images):
        lines = checksum_lines(images)
    else:
        with open(images) as f:
            paths = [l.strip() for l in f if l.strip()]
        lines = "".join(f"{file_sha256(p)}  {p}\n" for p in paths)
    return {"path": images, "files": lines.count("\n"), "sha256": hashlib.sha256(lines.encode()).hexdigest()}


def markdown_line(rec, label="Binary"):
    """One markdown line a results file carries about its binary (and the scripts' commit)."""
    s = rec["scripts"]
    scripts = f"scripts at {s['commit']}" + (" (with uncommitted changes)" if s["dirty"] else "")
    if rec["dirty"] or rec["commit"] == "unknown":
        what = "**built from a dirty tree**" if rec["dirty"] else "**commit unknown**"
        return (f"{label}: `{rec['version_line']}`: {what} (allowed with VECBENCH_ALLOW_DIRTY=1): these figures "
                f"belong to no commit; {scripts}.")
    return f"{label}: `{rec['version_line']}`: commit {rec['commit']}, clean tree; {scripts}."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--allow-dirty", action="store_true", help="run a dirty build (the record says so); "
                    "also VECBENCH_ALLOW_DIRTY=1")
    ap.add_argument("--label", default="Binary", help="the markdown line's first word(s)")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    try:
        rec = binary_record(a.binary, a.allow_dirty or None)
    except Refused as e:
        print(f"provenance: refused: {e}", file=sys.stderr)
        return 1
    print(json.dumps(rec) if a.json else markdown_line(rec, a.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
