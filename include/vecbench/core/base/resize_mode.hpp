// How images are resized to the model's input size: the enum alone, with no include, so that the
// CUDA kernel's arithmetic (input/resize_formula.hpp) can take it; its names are in
// core/base/input_settings.hpp.
#pragma once

namespace vecbench {

/// How images are resized to the model's input size.
enum class ResizeMode {
  /// TF1 `ResizeBilinear` (align_corners=false, half_pixel_centers=false): src = dst * in/out.
  /// What the seed's graph (classify_image_graph_def.pb) does internally, in float.
  tf_legacy,
  /// Bilinear with half-pixel centres: src = (dst + 0.5) * in/out - 0.5 (clamped at 0).
  bilinear,
  /// clean-fid's "clean" resize: Pillow's bicubic (antialiased) on float channels, clipped to
  /// 0..255 (input/resize_pil.hpp). Host only: the CUDA kernel never sees it.
  pil_bicubic,
  /// dgm-eval's resize (and EDM2's resize_mode 'pil'): Pillow's bicubic on the RGB uint8 image, to
  /// uint8 pixels (input/resize_pil.hpp). Host only.
  pil_bicubic_u8,
  /// EDM2's resize_mode 'torch': F.interpolate(bicubic, antialias=True) on floats, LibTorch's CPU
  /// arithmetic (input/resize_torch_aa.hpp). Host only.
  torch_bicubic_aa,
  /// google-research/cmmd's: the centre square of the image (side min(w, h), its top-left corner
  /// at ((w - side) / 2, (h - side) / 2), integer division, as its PIL crop box), then Pillow's
  /// bicubic on the uint8 image as pil_bicubic_u8. Host only.
  center_crop_pil_bicubic_u8,
  /// torchvision's Resize(size, BICUBIC) then CenterCrop(size) on the PIL image (OpenAI CLIP's
  /// preprocessing, clean-fid's CLIP-FID): the shorter side to the size by Pillow's bicubic on the
  /// uint8 image, then the centre window, its offset int(round((side - size) / 2.0)). Host only.
  pil_bicubic_u8_short_side_crop,
};

}  // namespace vecbench
