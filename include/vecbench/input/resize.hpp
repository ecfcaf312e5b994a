// Resizing RGB uint8 images to the model's square float input, without rounding to 8 bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "vecbench/core/error.hpp"
#include "vecbench/input/resize_formula.hpp"

namespace vecbench {

inline ResizeMode parse_resize_mode(const std::string& s) {
  if (s == "tf-legacy") return ResizeMode::tf_legacy;
  if (s == "bilinear") return ResizeMode::bilinear;
  throw ConfigError("resize", "unknown resize mode '" + s + "' (use tf-legacy or bilinear)");
}
inline std::string to_string(ResizeMode m) { return m == ResizeMode::tf_legacy ? "tf-legacy" : "bilinear"; }

namespace detail {
inline std::vector<Tap> resize_taps(int in, int out, ResizeMode mode) {
  std::vector<Tap> taps(static_cast<std::size_t>(out));
  const float scale = resize_scale(in, out);
  for (int i = 0; i < out; ++i) taps[static_cast<std::size_t>(i)] = resize_tap(i, in, scale, mode);
  return taps;
}
}  // namespace detail

/// Resizes an interleaved RGB uint8 image (h x w, `row_stride` bytes per row) to out x out and
/// writes it planar (CHW) as float 0..255 into `dst` (3*out*out floats). Interpolates in float
/// (detail::bilinear_blend; the CUDA kernel computes the same floats: resize_formula.hpp).
inline void resize_rgb_to_chw(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out, ResizeMode mode,
                              float* dst) {
  if (h <= 0 || w <= 0) throw Error("resize: empty image");
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
  for (int y = 0; y < out; ++y) {
    const auto& a = ty[static_cast<std::size_t>(y)];
    const std::uint8_t* r0 = src + static_cast<std::size_t>(a.lo) * row_stride;
    const std::uint8_t* r1 = src + static_cast<std::size_t>(a.hi) * row_stride;
    float* o = dst + static_cast<std::size_t>(y) * out;
    for (int x = 0; x < out; ++x) {
      const auto& b = tx[static_cast<std::size_t>(x)];
      const int l = b.lo * 3, r = b.hi * 3;
      for (int c = 0; c < 3; ++c) {
        o[static_cast<std::size_t>(c) * plane + x] =
            detail::bilinear_blend(r0[l + c], r0[r + c], r1[l + c], r1[r + c], b.frac, a.frac);
      }
    }
  }
}

}  // namespace vecbench
