#!/usr/bin/env python3
"""Export an Inception-v3 pool-feature extractor as TorchScript for vecbench.

The command line of the package tools/vecbench_export (architectures, weight sources with the
GraphDef reader, the fused export, the CLI); `--help` and vecbench_export/cli.py say the rest.
Run with Debian's interpreter: /usr/bin/python3 tools/export_inception.py --out FILE.pt [...]"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vecbench_export.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
