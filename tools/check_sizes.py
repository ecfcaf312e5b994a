#!/usr/bin/env python3
"""The size check (issue #11's limits): no function body over 80 lines in include/, src/ and
tools/*.cpp, and no header over 400 lines. Exits 1 naming each one over.

Functions are found by brace matching on lines with comments and string literals blanked: a
brace opens a function body when its line ends a parameter list (`) {`, `) const {`, ...) and
no function encloses it (lambdas and nested blocks count toward their function).
`tools/check_sizes.py --self-test` shows that it catches a long function and a long header."""
import glob
import os
import re
import sys
import tempfile

MAX_FUNCTION_LINES = 80
MAX_HEADER_LINES = 400
SIG_END = re.compile(r"\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[\w:<>]+\s*)?\{\s*$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|else|catch|do|try)\b")


def blank(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return re.sub(r"//.*", "", line)


def long_functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    stack, out = [], []
    for i, raw in enumerate(lines):
        code = blank(raw)
        for ch in code:
            if ch == "{":
                is_fn = bool(SIG_END.search(code)) and not CONTROL.match(code) and "[" not in code.split("(")[0]
                stack.append((i, is_fn and not any(f for _, f in stack)))
            elif ch == "}" and stack:
                start, is_fn = stack.pop()
                if is_fn and i - start > MAX_FUNCTION_LINES:
                    out.append((start + 1, i - start, lines[start].strip()))
    return out


def check(root):
    problems = []
    files = [f for pat in ("include/**/*.hpp", "src/**/*.cpp", "tools/*.cpp")
             for f in glob.glob(os.path.join(root, pat), recursive=True)]
    for f in sorted(files):
        rel = os.path.relpath(f, root)
        n = open(f, encoding="utf-8").read().count("\n")
        if f.endswith(".hpp") and n > MAX_HEADER_LINES:
            problems.append(f"{rel}: {n} lines (headers: at most {MAX_HEADER_LINES})")
        for line, length, text in long_functions(f):
            problems.append(f"{rel}:{line}: function of {length} lines (at most {MAX_FUNCTION_LINES}): {text[:80]}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "include", "vecbench", "core"))
        body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES + 5))
        with open(os.path.join(d, "include", "vecbench", "core", "a.hpp"), "w") as f:
            f.write("inline int f(int x) {\n" + body + "  return x;\n}\n" + "// pad\n" * MAX_HEADER_LINES)
        p = check(d)
        assert any("function of" in x for x in p), p
        assert any("headers: at most" in x for x in p), p
        with open(os.path.join(d, "include", "vecbench", "core", "a.hpp"), "w") as f:
            f.write("inline int f(int x) {\n  auto g = [&] {\n    return x;\n  };\n  return g();\n}\n")
        assert check(d) == [], check(d)
    print("check_sizes: self-test: a long function and a long header are caught")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--self-test" in sys.argv:
        self_test()
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_sizes: {len(problems)} over the limits")
        return 1
    print(f"check_sizes: every function <= {MAX_FUNCTION_LINES} lines, every header <= {MAX_HEADER_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
