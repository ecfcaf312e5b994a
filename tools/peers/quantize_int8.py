#!/usr/bin/env python3
"""Peers' own int8: post-training static quantization of the peers' ONNX Inception-v3 on real
photos, the way each peer's documentation does it, for the int8 comparison of issue #29.
  ort:      onnxruntime.quantization's quant_pre_process, then quantize_static (QDQ, u8
            activations, s8 weights per channel; run in the onnxruntime venv, which needs `onnx`)
  openvino: nncf.quantize on the OpenVINO model (its default preset; run in the openvino venv,
            which needs `nncf`), saved as OpenVINO IR (OUT.xml + OUT.bin)
PHOTOS.npy: `vecbench predecode --images LIST --out PHOTOS.npy` (uint8 [N, 299, 299, 3]), fed as
the model expects it (torchvision: x / 255 normalized by ImageNet's mean and std, NCHW).
usage: quantize_int8.py ort|openvino MODEL.onnx PHOTOS.npy OUT"""
import sys

import numpy as np

peer, model, photos, out = sys.argv[1:5]
x = np.load(photos).astype(np.float32) / 255.0
x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
if peer == "ort":
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Photos(CalibrationDataReader):
        def __init__(self):
            self.it = iter(x[i:i + 1] for i in range(len(x)))

        def get_next(self):
            b = next(self.it, None)
            return None if b is None else {"x": b}

    quant_pre_process(model, out + ".pre.onnx", skip_symbolic_shape=True)  # what ONNX Runtime's guide asks for
    quantize_static(out + ".pre.onnx", out, Photos(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    print(f"onnxruntime={ort.__version__}: {out} (QDQ, per-channel s8 weights, u8 activations, {len(x)} photos)")
elif peer == "openvino":
    import nncf
    import openvino as ov

    m = ov.Core().read_model(model)
    q = nncf.quantize(m, nncf.Dataset([x[i:i + 1] for i in range(len(x))]), subset_size=len(x))
    ov.save_model(q, out)
    print(f"openvino={ov.__version__} nncf={nncf.__version__}: {out} (nncf.quantize, {len(x)} photos)")
else:
    sys.exit("quantize_int8.py: peer must be ort or openvino")
