#!/usr/bin/env bash
# Prepares the peers of experiments/peers.json (what a user would run instead of vecbench) in
# $VECBENCH_PEERS_WORK (default /tmp/vecbench-peers): the scripted torchvision Inception-v3 for
# the Python peers, its ONNX export, and ONNX Runtime for Node.js from npm (CPU library inside the
# package; install scripts skipped: they try to download a GPU provider).
# The peer scripts themselves come from $VECBENCH_PEERS (default ../shared/peers).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${VECBENCH_PEERS:-../shared/peers}
WORK=${VECBENCH_PEERS_WORK:-/tmp/vecbench-peers}
mkdir -p "$WORK/ort"
[ -f "$WORK/inc.pt" ] || /usr/bin/python3 "$PEERS/export_torchscript.py" "$WORK/inc.pt"
[ -f "$WORK/inc.onnx" ] || /usr/bin/python3 "$PEERS/export_onnx.py" "$WORK/inc.onnx"
if [ ! -d "$WORK/ort/node_modules/onnxruntime-node" ]; then
  (cd "$WORK/ort" && npm install --silent --ignore-scripts onnxruntime-node@1.30.0)
fi
cp "$PEERS/ort_bench.js" "$WORK/ort/"
echo "peers ready in $WORK"
