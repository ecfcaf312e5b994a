// Resizing RGB uint8 images to the model's square float input, without rounding to 8 bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/base/input_settings.hpp"
#include "vecbench/input/resize_formula.hpp"
#include "vecbench/input/resize_pil.hpp"
#include "vecbench/input/resize_torch_aa.hpp"

namespace vecbench {

namespace detail {
inline std::vector<Tap> resize_taps(int in, int out, ResizeMode mode) {
  std::vector<Tap> taps(static_cast<std::size_t>(out));
  const float scale = resize_scale(in, out);
  for (int i = 0; i < out; ++i) taps[static_cast<std::size_t>(i)] = resize_tap(i, in, scale, mode);
  return taps;
}

/// Source row `r` interpolated horizontally at the output columns `tx`, planar: o[c * out + x] =
/// tl + (tr - tl) * fx, the first step of bilinear_blend (the same float operations in the same
/// order, so that the result is bilinear_blend's bit for bit).
inline void resize_row(const std::uint8_t* row, const std::vector<Tap>& tx, float* o) {
  const std::size_t out = tx.size();
  for (std::size_t x = 0; x < out; ++x) {
    const Tap& b = tx[x];
    const int l = b.lo * 3, r = b.hi * 3;
    for (std::size_t c = 0; c < 3; ++c) {
      const float a = row[l + static_cast<int>(c)], z = row[r + static_cast<int>(c)];
      o[c * out + x] = fadd(a, fmul(fsub(z, a), b.frac));
    }
  }
}
}  // namespace detail

/// Resizes an interleaved RGB uint8 image (h x w, `row_stride` bytes per row) to out x out and
/// writes it planar (CHW) as float 0..255 into `dst` (3*out*out floats). pil-bicubic: clean-fid's
/// resize (resize_rgb_to_chw_pil_bicubic). The bilinear modes interpolate in float
/// (detail::bilinear_blend's operations; the CUDA kernel computes the same floats:
/// resize_formula.hpp): each source row that an output row reads is interpolated across once and
/// kept while the next output row reads it too (a downscale below 2x reads most rows twice), then
/// the two rows are blended down each output row.
inline void resize_rgb_to_chw(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out, ResizeMode mode,
                              float* dst) {
  if (h <= 0 || w <= 0) throw Error("resize: empty image");
  if (mode == ResizeMode::pil_bicubic) return resize_rgb_to_chw_pil_bicubic(src, h, w, row_stride, out, dst);
  if (mode == ResizeMode::pil_bicubic_u8) return resize_rgb_to_chw_pil_bicubic_u8(src, h, w, row_stride, out, dst);
  if (mode == ResizeMode::center_crop_pil_bicubic_u8) {  // the centre square: an offset into the same rows
    const int side = std::min(h, w);
    const std::size_t top = static_cast<std::size_t>((h - side) / 2), left = static_cast<std::size_t>((w - side) / 2);
    return resize_rgb_to_chw_pil_bicubic_u8(src + top * row_stride + left * 3, side, side, row_stride, out, dst);
  }
  if (mode == ResizeMode::pil_bicubic_u8_short_side_crop)
    return resize_rgb_to_chw_pil_bicubic_u8_short_side_crop(src, h, w, row_stride, out, dst);
  if (mode == ResizeMode::torch_bicubic_aa) return resize_rgb_to_chw_torch_bicubic_aa(src, h, w, row_stride, out, dst);
  const std::size_t plane = static_cast<std::size_t>(out) * static_cast<std::size_t>(out);
  if (h == out && w == out) {  // identity in both modes: just convert
    for (int y = 0; y < out; ++y) {
      const std::uint8_t* row = src + static_cast<std::size_t>(y) * row_stride;
      for (int x = 0; x < out; ++x)
        for (int c = 0; c < 3; ++c)
          dst[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y) * out + x] = row[x * 3 + c];
    }
    return;
  }
  const auto ty = detail::resize_taps(h, out, mode);
  const auto tx = detail::resize_taps(w, out, mode);
  const std::size_t n = static_cast<std::size_t>(out);
  std::vector<float> cache(2 * 3 * n);
  int held[2] = {-1, -1};  // the source rows in the cache's two slots
  const auto fill = [&](int slot, int r) {
    detail::resize_row(src + static_cast<std::size_t>(r) * row_stride, tx,
                       cache.data() + static_cast<std::size_t>(slot) * 3 * n);
    held[slot] = r;
  };
  for (int y = 0; y < out; ++y) {
    const auto& a = ty[static_cast<std::size_t>(y)];
    int lo = held[0] == a.lo ? 0 : held[1] == a.lo ? 1 : -1;
    int hi = held[0] == a.hi ? 0 : held[1] == a.hi ? 1 : -1;
    if (lo < 0) fill(lo = hi == 0 ? 1 : 0, a.lo);
    if (hi < 0) fill(hi = a.hi == a.lo ? lo : 1 - lo, a.hi);
    const float* top = cache.data() + static_cast<std::size_t>(lo) * 3 * n;
    const float* bottom = cache.data() + static_cast<std::size_t>(hi) * 3 * n;
    for (std::size_t c = 0; c < 3; ++c) {
      float* o = dst + c * plane + static_cast<std::size_t>(y) * n;
      const float* t = top + c * n;
      const float* b = bottom + c * n;
      for (std::size_t x = 0; x < n; ++x) o[x] = detail::fadd(t[x], detail::fmul(detail::fsub(b[x], t[x]), a.frac));
    }
  }
}

}  // namespace vecbench
