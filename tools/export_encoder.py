#!/usr/bin/env python3
"""Export an encoder other than Inception-v3 (DINOv2 ViT-S/B/L/g 14, VGG-16) as TorchScript for vecbench.

The command line of tools/vecbench_export/encoders.py (the DINOv2 network: dinov2.py); `--help` says
the rest. vecbench runs it to import a weights file it found (--like TOOL --encoder NAME).
Run with Debian's interpreter: /usr/bin/python3 tools/export_encoder.py --encoder NAME --protocol P --out FILE.pt"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vecbench_export.encoders import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
