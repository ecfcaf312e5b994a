#!/usr/bin/env bash
# Prepares the peers of experiments/peers.json (what a user would run instead of vecbench):
# one virtual environment per peer from PyPI, versions pinned below, outside the source tree in
# $VECBENCH_VENVS (default ~/.cache/vecbench/venvs; kept: a venv whose pins are unchanged is
# reused), and the models they run in $VECBENCH_PEERS_WORK (default /tmp/vecbench-peers):
# the scripted torchvision Inception-v3 and its ONNX export (Debian's python3-torch), ncnn's
# conversion of that ONNX file (pnnx), and classify_image_graph_def.pb (tools/make_tf_graph.py
# --seed 0) for the seed's TF program.
#   tools/peers_setup.sh              every peer (about 13 GB: the torch wheel, which pnnx needs too, brings CUDA libraries)
#   tools/peers_setup.sh tensorflow   only TensorFlow and the FID tools (CI: tests/py/tf_fidelity.py, fid_check.py, fid_tools.py)
# Each peer prints its package versions on the line the experiment records (effective.output).
set -euo pipefail
cd "$(dirname "$0")/.."
VENVS=${VECBENCH_VENVS:-$HOME/.cache/vecbench/venvs}
WORK=${VECBENCH_PEERS_WORK:-/tmp/vecbench-peers}
PEERS=${VECBENCH_PEERS:-../shared/peers}   # seed_loop.py, torch_dataloader.py, export_*.py
declare -A PINS=(
  [tensorflow]="tensorflow-cpu==2.21.0 numpy==2.4.6 pillow==12.0.0"
  [onnxruntime]="onnxruntime==1.31.1 numpy==2.4.6 onnx==1.23.2"
  [openvino]="openvino==2026.4.1 numpy==2.4.6 nncf==3.4.0"
  [torch]="torch==2.15.0 torchvision==0.29.2 numpy==2.4.6 pillow==12.0.0"
  [ncnn]="ncnn==1.0.20261020 pnnx==20261020 numpy==2.4.6"
)
venv() {  # venv NAME: $VENVS/NAME with PINS[NAME] installed, unless already so
  local dir=$VENVS/$1
  if [ "$(cat "$dir/.vecbench-pins" 2>/dev/null)" = "${PINS[$1]}" ]; then
    echo "peers: $1 ready ($dir: ${PINS[$1]})"
    return
  fi
  echo "peers: installing ${PINS[$1]} into $dir"
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir"
  # shellcheck disable=SC2086
  "$dir/bin/python" -m pip install -q --disable-pip-version-check ${PINS[$1]}
  echo "${PINS[$1]}" > "$dir/.vecbench-pins"
}
graph() {  # the seed's graph, synthetic weights (speed does not depend on them)
  mkdir -p "$WORK"
  [ -f "$WORK/classify_image_graph_def.pb" ] ||
    "$VENVS/tensorflow/bin/python" tools/make_tf_graph.py --seed 0 --out "$WORK/classify_image_graph_def.pb"
}

# The FID tools vecbench reproduces (tests/py/fid_check.py, tests/py/fid_tools.py): pytorch-fid
# (its own calculate_frechet_distance too), torch-fidelity, clean-fid, prdc, the PyPI `dinov2`
# package (DINOv2's network for the offline torch.hub folder of tests/py/encoder_tools.py) and
# OpenAI's `clip` (openai-clip, with ftfy: clean-fid's CLIP-FID, tests/py/clip_tools.py), in a venv that sees
# Debian's numpy, SciPy, scikit-learn, Pillow, tqdm, requests, regex, wcwidth and torch 1.13 (--system-site-packages), the packages alone (--no-deps: no
# CUDA wheels downloaded).
fidtools() {
  local dir=$VENVS/fid-tools pin="pytorch-fid==0.3.0 torch-fidelity==0.4.0 clean-fid==0.1.35 prdc==0.2 dinov2==0.0.1.dev2 openai-clip==1.0.1 ftfy==6.1.1"
  if [ "$(cat "$dir/.vecbench-pins" 2>/dev/null)" = "$pin" ]; then
    echo "peers: fid-tools ready ($dir: $pin)"
    return
  fi
  rm -rf "$dir"
  /usr/bin/python3 -m venv --system-site-packages "$dir"
  # shellcheck disable=SC2086
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps $pin
  echo "$pin" > "$dir/.vecbench-pins"
}

venv tensorflow
fidtools
if [ "${1:-all}" = tensorflow ]; then
  exit 0
fi
for p in onnxruntime openvino torch ncnn; do venv $p; done
graph
[ -f "$WORK/inc.pt" ] || /usr/bin/python3 "$PEERS/export_torchscript.py" "$WORK/inc.pt"
[ -f "$WORK/inc.onnx" ] || /usr/bin/python3 "$PEERS/export_onnx.py" "$WORK/inc.onnx"
# ncnn's model: pnnx converts the ONNX file (fp32 weights) into inc.ncnn.param / inc.ncnn.bin
# (input in0, output out0) beside it, with its other outputs (inc.pnnx.*, *_pnnx.py, *_ncnn.py)
[ -f "$WORK/inc.ncnn.param" ] || (cd "$WORK" && "$VENVS/ncnn/bin/pnnx" inc.onnx "inputshape=[1,3,299,299]" fp16=0 > pnnx.log 2>&1) ||
  { cat "$WORK/pnnx.log" >&2; exit 1; }
echo "peers ready: venvs in $VENVS, models in $WORK"
