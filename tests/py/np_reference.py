#!/usr/bin/env python3
"""Independent NumPy reference of vecbench's preprocessing + feature run.

usage: np_reference.py MODEL.pt OUT.npy [--resize tf-legacy|bilinear]
                       [--save-input IN.npy] [--batch N] IMG...

Each image is decoded with OpenCV (IMREAD_COLOR | IMREAD_IGNORE_ORIENTATION,
BGR -> RGB), converted to float32 and resized to 299x299 in NumPy:

  tf-legacy  TF1 ResizeBilinear, align_corners=False, half_pixel_centers=False:
             scale = float32(in)/float32(out), src = float32(dst) * scale,
             y0 = floor(src), y1 = min(y0+1, in-1), frac = src - y0.
  bilinear   half-pixel centres: src = (dst+0.5)*scale - 0.5 (float32),
             clamped below at 0; y0 = floor(src), y1 = min(y0+1, in-1).

Both interpolate in float32 without rounding, first along x, then along y:
top = a + (b-a)*fx; bottom = c + (d-c)*fx; out = top + (bottom-top)*fy.
The images are stacked as NCHW float32 RGB 0..255, fed to the TorchScript model
(torch.set_num_threads(1)), and the [N,2048] float32 features are np.save'd.
--resize defaults to the model's vecbench_meta.json "resize_default".
Run with /usr/bin/python3."""

import argparse
import json
import sys

import numpy as np

SIZE = 299


def _axis_tf_legacy(in_size, out_size):
    scale = np.float32(in_size) / np.float32(out_size)  # float32 division, as TF
    src = np.arange(out_size, dtype=np.float32) * scale
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    frac = (src - i0.astype(np.float32)).astype(np.float32)
    return i0, i1, frac


def _axis_half_pixel(in_size, out_size):
    scale = np.float32(in_size) / np.float32(out_size)  # float32 division, as TF
    src = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    src = np.maximum(src, np.float32(0.0))
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    frac = (src - i0.astype(np.float32)).astype(np.float32)
    return i0, i1, frac


def _resize(img, out_h, out_w, axis_fn):
    img = np.asarray(img, dtype=np.float32)
    squeeze = img.ndim == 2
    if squeeze:
        img = img[:, :, None]
    h, w = img.shape[:2]
    y0, y1, fy = axis_fn(h, out_h)
    x0, x1, fx = axis_fn(w, out_w)
    fx = fx[None, :, None]
    fy = fy[:, None, None]
    r0, r1 = img[y0], img[y1]                       # [out_h, w, C]
    top = r0[:, x0] + (r0[:, x1] - r0[:, x0]) * fx  # [out_h, out_w, C]
    bot = r1[:, x0] + (r1[:, x1] - r1[:, x0]) * fx
    out = top + (bot - top) * fy
    out = out.astype(np.float32, copy=False)
    return out[:, :, 0] if squeeze else out


def resize_tf_legacy(img, out_h=SIZE, out_w=SIZE):
    """HxW[xC] -> out_h x out_w [xC] float32, TF1 legacy ResizeBilinear."""
    return _resize(img, out_h, out_w, _axis_tf_legacy)


def resize_bilinear(img, out_h=SIZE, out_w=SIZE):
    """HxW[xC] -> out_h x out_w [xC] float32, half-pixel-centre bilinear."""
    return _resize(img, out_h, out_w, _axis_half_pixel)


RESIZERS = {"tf-legacy": resize_tf_legacy, "bilinear": resize_bilinear}


def load_rgb(path):
    import cv2
    data = np.fromfile(path, np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if img is None:
        raise ValueError(f"{path}: cannot decode image")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def preprocess(path, resize):
    """-> [3,299,299] float32 RGB 0..255."""
    rgb = load_rgb(path).astype(np.float32)
    out = RESIZERS[resize](rgb, SIZE, SIZE)
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def main(argv=None):
    p = argparse.ArgumentParser(prog="np_reference.py", description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("images", nargs="+", metavar="IMG")
    p.add_argument("--resize", choices=sorted(RESIZERS))
    p.add_argument("--save-input", metavar="IN.npy", help="also save the [N,3,299,299] model input")
    p.add_argument("--batch", type=int, default=1, help="images per forward (default 1)")
    args = p.parse_args(argv)

    import torch
    torch.set_num_threads(1)
    extra = {"vecbench_meta.json": ""}
    try:
        model = torch.jit.load(args.model, map_location="cpu", _extra_files=extra)
    except Exception as e:  # noqa: BLE001
        print(f"np_reference.py: error: {args.model}: cannot load TorchScript ({e})", file=sys.stderr)
        return 2
    model.eval()
    resize = args.resize
    if resize is None:
        try:
            resize = json.loads(extra["vecbench_meta.json"])["resize_default"]
        except (ValueError, KeyError, TypeError):
            print(f"np_reference.py: error: {args.model}: no vecbench_meta.json resize_default; "
                  "pass --resize", file=sys.stderr)
            return 2
    try:
        inputs = np.stack([preprocess(pth, resize) for pth in args.images])
    except (ValueError, OSError) as e:
        print(f"np_reference.py: error: {e}", file=sys.stderr)
        return 2
    feats = []
    with torch.no_grad():
        for i in range(0, len(inputs), max(1, args.batch)):
            x = torch.from_numpy(inputs[i:i + max(1, args.batch)].copy())
            feats.append(model(x).numpy().astype(np.float32))
    feats = np.concatenate(feats)
    np.save(args.out, feats)
    if args.save_input:
        np.save(args.save_input, inputs)
    print(f"np_reference.py: {len(args.images)} image(s), resize={resize} -> {args.out} {feats.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
