#!/usr/bin/env python3
"""The layering check: no header or source under include/vecbench/, src/ or tests/support/ includes a layer above
its own (docs/development.md "Layout"). Layers and what each may include (besides itself):

  core        standard library only
  input       core                                  (OpenCV, libjpeg, libpng in .cpp / decode)
  engine      core, input                           (LibTorch, oneDNN in src/engine/; input: device decode)
  pipeline    core, input, engine
  strategies  core, input, engine, pipeline
  output      core, input
  results     core
  dist        core, input, engine, pipeline, strategies, output, results
  experiment  every layer above but testing
  app         every layer above but testing (the commands of the CLI, src/app/)
  testing     anything (helpers for the tests: tests/support/vecbench/testing/, outside include/)

`tools/check_layers.py` checks the tree and exits 1 naming each upward include;
`tools/check_layers.py --self-test` shows that it catches one (CI runs both)."""
import os
import re
import sys
import tempfile

ALLOWED = {
    "core": set(),
    "input": {"core"},
    "engine": {"core", "input"},
    "pipeline": {"core", "input", "engine"},
    "strategies": {"core", "input", "engine", "pipeline"},
    "output": {"core", "input"},
    "results": {"core"},
    "fid": {"core", "input", "output"},
    "dist": {"core", "input", "engine", "pipeline", "strategies", "output", "results"},
    "experiment": {"core", "input", "engine", "pipeline", "strategies", "output", "results", "dist"},
    "app": {"core", "input", "engine", "pipeline", "strategies", "output", "results", "dist", "experiment", "fid"},
    "testing": {"core", "input", "engine", "pipeline", "strategies", "output", "results", "dist", "experiment", "fid"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"vecbench/([a-z_]+)/[^"]+"', re.M)


def layer_of(path, root):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "include" and len(rel) > 3 and rel[1] == "vecbench":
        return rel[2]
    if rel[0] == "src" and len(rel) > 2:
        return rel[1]
    if rel[:3] == ["tests", "support", "vecbench"] and len(rel) > 4:  # the tests' helpers (testing)
        return rel[3]
    return None


def check(root):
    errors = []
    for top in ("include/vecbench", "src", "tests/support/vecbench"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".hpp", ".cpp", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                own = layer_of(path, root)
                rel = os.path.relpath(path, root)
                if own is None:
                    errors.append(f"{rel}: not inside a layer folder ({', '.join(ALLOWED)})")
                    continue
                if own not in ALLOWED:
                    errors.append(f"{rel}: unknown layer '{own}'")
                    continue
                text = open(path, encoding="utf-8").read()
                for m in INCLUDE.finditer(text):
                    dep = m.group(1)
                    if dep != own and dep not in ALLOWED[own]:
                        line = text.count("\n", 0, m.start()) + 1
                        errors.append(f"{rel}:{line}: {own}/ includes {dep}/ (upward or across: {own} may include "
                                      f"{', '.join(sorted(ALLOWED[own])) or 'no other layer'})")
    return errors


def self_test():
    with tempfile.TemporaryDirectory() as d:
        for layer in ("core", "results"):
            os.makedirs(os.path.join(d, "include", "vecbench", layer))
        open(os.path.join(d, "include", "vecbench", "results", "ok.hpp"), "w").write('#include "vecbench/core/x.hpp"\n')
        open(os.path.join(d, "include", "vecbench", "core", "bad.hpp"), "w").write(
            '#pragma once\n#include "vecbench/results/ok.hpp"\n')
        errors = check(d)
        assert len(errors) == 1 and "core/bad.hpp:2: core/ includes results/" in errors[0], errors
    print("check_layers: self-test: an upward include is caught")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--self-test" in sys.argv:
        self_test()
    errors = check(root)
    for e in errors:
        print("check_layers: " + e, file=sys.stderr)
    if errors:
        return 1
    print("check_layers: every include of include/vecbench/ and src/ stays in its layer or goes down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
