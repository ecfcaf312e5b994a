// clean-fid's resize (its "clean" mode): each channel of the RGB uint8 image as a float image
// (PIL mode "F"), resized by Pillow's Image.resize(BICUBIC), then clipped to 0..255. Pillow's
// resampling as it computes it for float images: a separable convolution, the horizontal pass
// first into a float image, then the vertical one, each output a sum in double of float pixels
// times double weights, stored as float. The weights: Pillow's bicubic (a = -0.5) over a support
// of 2 input pixels, widened by the scale when downscaling (antialiasing), taken at the input
// pixels' centres and divided by their sum (fewer taps at the borders, not clamped pixels).
// Host only (no CUDA kernel does it: --decode gpu refuses this mode).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"

namespace vecbench {
namespace detail {

/// Pillow's bicubic filter (a = -0.5), support 2.
inline double pil_bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

/// The taps of one axis: output i reads inputs first[i] .. first[i] + count[i] - 1 with the
/// weights weights[i * ksize ...] (normalized to sum 1).
struct PilTaps {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<double> weights;
};

/// The taps of resizing `in` samples to `out` as Pillow computes them (its precompute_coeffs,
/// for the whole image as the box).
inline PilTaps pil_bicubic_taps(int in, int out) {
  PilTaps t;
  const double scale = static_cast<double>(in) / out;
  const double filterscale = std::max(scale, 1.0);  // widened only when downscaling
  const double support = 2.0 * filterscale;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out));
  t.count.resize(static_cast<std::size_t>(out));
  t.weights.assign(static_cast<std::size_t>(out) * static_cast<std::size_t>(t.ksize), 0.0);
  for (int i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // truncation toward zero, as C's (int) cast (a negative value is 0 after the clamp anyway)
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in);
    const int n = std::max(hi - lo, 0);
    double* w = t.weights.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(t.ksize);
    double sum = 0.0;
    for (int x = 0; x < n; ++x) sum += w[x] = pil_bicubic((x + lo - center + 0.5) * ss);
    if (sum != 0.0)
      for (int x = 0; x < n; ++x) w[x] /= sum;
    t.first[static_cast<std::size_t>(i)] = lo;
    t.count[static_cast<std::size_t>(i)] = n;
  }
  return t;
}

}  // namespace detail

/// Resizes the interleaved RGB uint8 image `src` (h x w, `row_stride` bytes per row) to out x out
/// as clean-fid's "clean" resize does and writes it planar (CHW) as float 0..255 into `dst`
/// (3*out*out floats). The same floats as clean-fid's make_resizer("PIL", False, "bicubic")
/// (tests/py/fid_tools.py compares the features; tests/core test the taps and the identity).
inline void resize_rgb_to_chw_pil_bicubic(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out,
                                          float* dst) {
  const std::size_t n = static_cast<std::size_t>(out), plane = n * n;
  const std::size_t W = static_cast<std::size_t>(w), H = static_cast<std::size_t>(h);
  // Pillow skips a pass whose size does not change; the other reads the float image as it is
  const bool horizontal = w != out, vertical = h != out;
  const std::size_t tw = horizontal ? n : W;
  std::vector<float> tmp(3 * H * tw);  // the horizontal pass's float image, planar
  const detail::PilTaps tx = detail::pil_bicubic_taps(w, horizontal ? out : w);
  for (std::size_t y = 0; y < H; ++y) {
    const std::uint8_t* row = src + y * row_stride;
    for (std::size_t c = 0; c < 3; ++c) {
      float* o = tmp.data() + (c * H + y) * tw;
      if (!horizontal) {
        for (std::size_t x = 0; x < W; ++x) o[x] = row[x * 3 + c];
        continue;
      }
      for (std::size_t x = 0; x < n; ++x) {
        const double* k = tx.weights.data() + x * static_cast<std::size_t>(tx.ksize);
        const int first = tx.first[x], count = tx.count[x];
        double ss = 0.0;
        for (int i = 0; i < count; ++i)
          ss += static_cast<float>(row[static_cast<std::size_t>(first + i) * 3 + c]) * k[i];
        o[x] = static_cast<float>(ss);
      }
    }
  }
  const detail::PilTaps ty = detail::pil_bicubic_taps(h, vertical ? out : h);
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t y = 0; y < n; ++y) {
      float* o = dst + c * plane + y * n;
      if (!vertical) {
        std::copy(tmp.data() + (c * H + y) * tw, tmp.data() + (c * H + y + 1) * tw, o);
      } else {
        const double* k = ty.weights.data() + y * static_cast<std::size_t>(ty.ksize);
        const int first = ty.first[y], count = ty.count[y];
        for (std::size_t x = 0; x < n; ++x) {
          double ss = 0.0;
          for (int i = 0; i < count; ++i) ss += tmp[(c * H + static_cast<std::size_t>(first + i)) * tw + x] * k[i];
          o[x] = static_cast<float>(ss);
        }
      }
      for (std::size_t x = 0; x < n; ++x) o[x] = std::clamp(o[x], 0.0f, 255.0f);  // clean-fid's clip
    }
}

namespace detail {
/// Pillow's Image.resize((rw, rh), BICUBIC) of the interleaved RGB uint8 image `src` (h x w,
/// `row_stride` bytes per row), of which the out x out window with its top-left corner at (left,
/// top) is written planar (CHW) as floats into `dst` (3*out*out floats). Pillow's 8-bit
/// resampling: the taps of pil_bicubic_taps, each weight in fixed point with 22 fractional bits
/// (rounded half away from zero), each output (2^21 + sum of pixel x weight) >> 22 clamped to
/// 0..255; the horizontal pass first into an 8-bit image, then the vertical one, a pass skipped when
/// its size does not change. Each output pixel depends on its own taps alone, so computing only the
/// window's columns and rows gives the pixels of the whole resize, cropped.
inline void pil_bicubic_u8_window(const std::uint8_t* src, int h, int w, std::size_t row_stride, int rw, int rh,
                                  int left, int top, int out, float* dst) {
  constexpr int kBits = 22;  // Pillow's PRECISION_BITS (32 - 8 - 2)
  const auto fixed = [](const PilTaps& t) {
    std::vector<std::int32_t> k(t.weights.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      const double v = t.weights[i] * static_cast<double>(1 << kBits);
      k[i] = static_cast<std::int32_t>(v < 0 ? -0.5 + v : 0.5 + v);
    }
    return k;
  };
  const auto clip8 = [](std::int32_t v) -> std::uint8_t {
    if (v >= (1 << kBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<std::uint8_t>(v >> kBits);
  };
  const std::size_t n = static_cast<std::size_t>(out), x0 = static_cast<std::size_t>(left);
  const bool horizontal = w != rw, vertical = h != rh;
  const PilTaps ty = pil_bicubic_taps(h, rh);
  // the source rows the window's output rows read: [r0, r1)
  int r0 = top, r1 = top + out;
  if (vertical) {
    r0 = ty.first[static_cast<std::size_t>(top)];
    r1 = r0;
    for (int y = top; y < top + out; ++y)
      r1 = std::max(r1, ty.first[static_cast<std::size_t>(y)] + ty.count[static_cast<std::size_t>(y)]);
  }
  std::vector<std::uint8_t> tmp(static_cast<std::size_t>(r1 - r0) * n * 3);  // the window's columns, 8-bit
  const PilTaps tx = pil_bicubic_taps(w, rw);
  const std::vector<std::int32_t> kx = fixed(tx);
  for (int y = r0; y < r1; ++y) {
    const std::uint8_t* row = src + static_cast<std::size_t>(y) * row_stride;
    std::uint8_t* o = tmp.data() + static_cast<std::size_t>(y - r0) * n * 3;
    if (!horizontal) {
      std::copy(row + x0 * 3, row + (x0 + n) * 3, o);
      continue;
    }
    for (std::size_t x = 0; x < n; ++x) {
      const std::int32_t* k = kx.data() + (x0 + x) * static_cast<std::size_t>(tx.ksize);
      const std::size_t first = static_cast<std::size_t>(tx.first[x0 + x]);
      for (std::size_t c = 0; c < 3; ++c) {
        std::int32_t ss = 1 << (kBits - 1);
        for (int i = 0; i < tx.count[x0 + x]; ++i) ss += row[(first + static_cast<std::size_t>(i)) * 3 + c] * k[i];
        o[x * 3 + c] = clip8(ss);
      }
    }
  }
  const std::vector<std::int32_t> ky = fixed(ty);
  const std::size_t plane = n * n;
  for (std::size_t y = 0; y < n; ++y) {
    const std::size_t sy = static_cast<std::size_t>(top) + y;
    const std::int32_t* k = ky.data() + sy * static_cast<std::size_t>(ty.ksize);
    const std::size_t first =
        vertical ? static_cast<std::size_t>(ty.first[sy] - r0) : sy - static_cast<std::size_t>(r0);
    for (std::size_t x = 0; x < n; ++x)
      for (std::size_t c = 0; c < 3; ++c) {
        std::int32_t ss = 1 << (kBits - 1);
        if (vertical)
          for (int i = 0; i < ty.count[sy]; ++i)
            ss += tmp[((first + static_cast<std::size_t>(i)) * n + x) * 3 + c] * k[i];
        dst[c * plane + y * n + x] = vertical ? clip8(ss) : tmp[(first * n + x) * 3 + c];
      }
  }
}
}  // namespace detail

/// Resizes the interleaved RGB uint8 image `src` to out x out as Pillow's Image.resize((out, out),
/// BICUBIC) does on an RGB image (dgm-eval's torchvision Resize on a PIL image, EDM2's resize_mode
/// 'pil') and writes the resulting uint8 pixels planar (CHW) as floats into `dst`
/// (detail::pil_bicubic_u8_window's arithmetic, the window the whole image).
inline void resize_rgb_to_chw_pil_bicubic_u8(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out,
                                             float* dst) {
  detail::pil_bicubic_u8_window(src, h, w, row_stride, out, out, 0, 0, out, dst);
}

/// torchvision's Resize(out, BICUBIC) then CenterCrop(out) on a PIL RGB image (OpenAI CLIP's
/// preprocessing, clean-fid's CLIP-FID): the shorter side to `out`, the longer to
/// int(out * long / short) (in double, truncated: torchvision's _compute_resized_output_size), by
/// Pillow's 8-bit bicubic; then the out x out window at int(round((size - out) / 2.0)) on each axis,
/// Python's round (half to even). Written planar (CHW) as floats into `dst`.
inline void resize_rgb_to_chw_pil_bicubic_u8_short_side_crop(const std::uint8_t* src, int h, int w,
                                                             std::size_t row_stride, int out, float* dst) {
  const int shorter = std::min(w, h), longer = std::max(w, h);
  const double long_side = std::floor(static_cast<double>(out) * longer / shorter);
  // the resize's taps span the whole resized axis: a sliver of an image (1 x 10^6) would need
  // gigabytes of them, and Pillow fails on such a resize too
  if (long_side > 1 << 20)
    throw Error("resize: a " + std::to_string(w) + " x " + std::to_string(h) + " image's shorter side to " +
                std::to_string(out) + " makes its longer " + std::to_string(static_cast<long long>(long_side)) +
                " pixels: sides this unequal are not resized");
  const int resized_long = static_cast<int>(long_side);
  const int rw = w <= h ? out : resized_long, rh = w <= h ? resized_long : out;
  const auto offset = [out](int size) {  // int(round((size - out) / 2.0)), half to even
    const int d = size - out, m = d / 2;
    return d % 2 == 0 || m % 2 == 0 ? m : m + 1;
  };
  detail::pil_bicubic_u8_window(src, h, w, row_stride, rw, rh, offset(rw), offset(rh), out, dst);
}

}  // namespace vecbench
