#!/usr/bin/env python3
"""Every relative link of README.md, CHANGELOG.md, docs/, bench/ and results/ markdown points at a
file that exists, and every #anchor at a heading of that file (GitHub's slugs). Exit 1 naming
each broken link. Run by tools/test.sh with the other source checks."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def markdown_files():
    yield from (os.path.join(ROOT, f) for f in ("README.md", "CHANGELOG.md"))
    for top in ("docs", "bench", "results"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            yield from (os.path.join(d, f) for f in sorted(files) if f.endswith(".md"))


def main():
    bad = []
    for md in markdown_files():
        with open(md, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            where = os.path.relpath(md, ROOT)
            if not os.path.exists(full):
                bad.append(f"{where}: {target}: no such file")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                bad.append(f"{where}: {target}: no heading #{anchor}")
    for b in bad:
        print("check_links: " + b)
    if bad:
        sys.exit(1)
    print("check_links: every relative link resolves")


if __name__ == "__main__":
    main()
