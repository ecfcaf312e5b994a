#!/usr/bin/env python3
"""The size check (issue #11's limits, widened by #48; files bounded by #64): no function body over 80
lines and no class body over 300 in include/, src/, tests/, bench/ and tools/*.cpp; no header or .inl file
over 400 lines; no source file (.cpp, .cu) over 500 in src/, bench/ and tools/, no test file over 700 (a
flat list of cases, each bounded by the function limit); no shell or Python tool (tools/, tests/py/)
over 500. Exits 1 naming each one over.

Functions are found by brace matching on lines with comments and string literals blanked: a
brace opens a function body when its line ends a parameter list (`) {`, `) const {`, ...) and
no function encloses it (lambdas and nested blocks count toward their function); a class
body opens where a `class`/`struct` head ends (`class A : public B {`; not `enum class`), and
a nested class counts toward its own size and its enclosing class's.
`tools/check_sizes.py --self-test` shows that it catches a long function and a long header."""
import glob
import os
import re
import sys
import tempfile

MAX_FUNCTION_LINES = 80
MAX_HEADER_LINES = 400
MAX_CLASS_LINES = 300
MAX_SOURCE_LINES = 500  # .cpp and .cu files of src/ and tools/
MAX_TEST_LINES = 700  # .cpp files of tests/
MAX_SCRIPT_LINES = 500  # .sh and .py files of tools/ and tests/py/
CLASS_HEAD = re.compile(r"^\s*(template\s*<.*>\s*)?(class|struct)\s+\w+[^;()=]*\{\s*$")
SIG_END = re.compile(r"\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[\w:<>]+\s*)?\{\s*$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|else|catch|do|try)\b")


def blank(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return re.sub(r"//.*", "", line)


def long_bodies(path):
    """(line, length, text, what) of each function body over MAX_FUNCTION_LINES and class body over MAX_CLASS_LINES."""
    lines = open(path, encoding="utf-8").read().split("\n")
    stack, out = [], []
    for i, raw in enumerate(lines):
        code = blank(raw)
        for ch in code:
            if ch == "{":
                is_fn = bool(SIG_END.search(code)) and not CONTROL.match(code) and "[" not in code.split("(")[0]
                is_class = bool(CLASS_HEAD.search(code)) and "enum" not in code
                kind = "class" if is_class else "function" if is_fn and not any(k == "function" for _, k in stack) else None
                stack.append((i, kind))
            elif ch == "}" and stack:
                start, kind = stack.pop()
                limit = {"function": MAX_FUNCTION_LINES, "class": MAX_CLASS_LINES}.get(kind)
                if limit and i - start > limit:
                    out.append((start + 1, i - start, lines[start].strip(), kind))
    return out


def check(root):
    problems = []
    pats = [f"{d}/**/*.{e}" for d in ("include", "src", "tests", "bench") for e in ("hpp", "cpp", "inl", "cu")]
    pats += ["tools/*.cpp"]
    files = {f for pat in pats for f in glob.glob(os.path.join(root, pat), recursive=True)}
    for f in sorted(files):
        rel = os.path.relpath(f, root)
        n = open(f, encoding="utf-8").read().count("\n")
        if f.endswith((".hpp", ".inl")) and n > MAX_HEADER_LINES:
            problems.append(f"{rel}: {n} lines (headers and .inl files: at most {MAX_HEADER_LINES})")
        limit = MAX_TEST_LINES if rel.startswith("tests" + os.sep) else MAX_SOURCE_LINES
        if f.endswith((".cpp", ".cu")) and n > limit:
            problems.append(f"{rel}: {n} lines (source files: at most {MAX_SOURCE_LINES}, test files {MAX_TEST_LINES})")
        for line, length, text, kind in long_bodies(f):
            limit = MAX_FUNCTION_LINES if kind == "function" else MAX_CLASS_LINES
            problems.append(f"{rel}:{line}: {kind} of {length} lines (at most {limit}): {text[:80]}")
    scripts = [f"tools/**/*.{e}" for e in ("sh", "py")] + ["tests/py/*.py"]
    for f in sorted({f for pat in scripts for f in glob.glob(os.path.join(root, pat), recursive=True)}):
        n = open(f, encoding="utf-8").read().count("\n")
        if n > MAX_SCRIPT_LINES:
            problems.append(f"{os.path.relpath(f, root)}: {n} lines (shell and Python tools: at most {MAX_SCRIPT_LINES})")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "include", "vecbench", "core"))
        body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES + 5))
        with open(os.path.join(d, "include", "vecbench", "core", "a.hpp"), "w") as f:
            f.write("inline int f(int x) {\n" + body + "  return x;\n}\n" + "// pad\n" * MAX_HEADER_LINES)
        p = check(d)
        assert any("function of" in x for x in p), p
        assert any("headers and .inl files: at most" in x for x in p), p
        with open(os.path.join(d, "include", "vecbench", "core", "a.hpp"), "w") as f:
            f.write("inline int f(int x) {\n  auto g = [&] {\n    return x;\n  };\n  return g();\n}\n")
        assert check(d) == [], check(d)
        os.makedirs(os.path.join(d, "src", "engine"))
        members = "".join(f"  int m{i} = {i};\n" for i in range(MAX_CLASS_LINES + 5))
        with open(os.path.join(d, "src", "engine", "b.cpp"), "w") as f:
            f.write("namespace {\nclass Big : public Base {\n public:\n" + members + "};\nenum class E {\n" +
                    "  a,\n" * (MAX_CLASS_LINES + 5) + "};\n}  // namespace\n")
        with open(os.path.join(d, "src", "engine", "c.inl"), "w") as f:
            f.write("// pad\n" * (MAX_HEADER_LINES + 1))
        os.makedirs(os.path.join(d, "tests", "core"))
        with open(os.path.join(d, "tests", "core", "test_x.cpp"), "w") as f:
            f.write("TEST(X, Long) {\n" + body + "}\n")
        with open(os.path.join(d, "src", "engine", "long.cpp"), "w") as f:
            f.write("// pad\n" * (MAX_SOURCE_LINES + 1))
        with open(os.path.join(d, "tests", "core", "test_long.cpp"), "w") as f:
            f.write("// pad\n" * (MAX_SOURCE_LINES + 1))  # a test file may be longer
        os.makedirs(os.path.join(d, "tools", "device"))
        with open(os.path.join(d, "tools", "device", "long.sh"), "w") as f:
            f.write("# pad\n" * (MAX_SCRIPT_LINES + 1))
        p = check(d)
        assert any("long.cpp" in x and "source files" in x for x in p), p
        assert not any("test_long.cpp" in x for x in p), p
        assert any("long.sh" in x and "shell and Python tools" in x for x in p), p
        assert sum("class of" in x for x in p) == 1 and any("Big" in x for x in p), p  # not the enum
        assert any("c.inl" in x and "at most" in x for x in p), p
        assert any("test_x.cpp" in x and "function of" in x for x in p), p
    print("check_sizes: self-test: a long function, class, header, .inl, source file, tool and test function are caught")


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
    print(f"check_sizes: every function <= {MAX_FUNCTION_LINES} lines, every class <= {MAX_CLASS_LINES}, every "
          f"header and .inl file <= {MAX_HEADER_LINES}, source file <= {MAX_SOURCE_LINES}, test file <= "
          f"{MAX_TEST_LINES}, shell and Python tool <= {MAX_SCRIPT_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
