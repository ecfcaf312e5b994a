// EDM2's resize (calculate_metrics.py, resize_mode 'torch', its DINOv2 detector):
// torch.nn.functional.interpolate(x.float(), size=(S, S), mode='bicubic', antialias=True) on the
// 0..255 float image, as LibTorch's CPU kernel (_upsample_bicubic2d_aa) computes it in float32:
// a separable convolution, the width first into a float image, then the height, each pass skipped
// when its size does not change; taps of Keys' cubic (a = -0.5, Pillow's) over a support of 2
// input pixels, widened by the scale when downscaling, at the pixels' centres, divided by their
// sum; every weight and every sum in float, in order (no FMA: the host code is compiled with
// -ffp-contract=off), and no clamping of the result (a bicubic overshoots 0..255 near edges).
// Host only (no CUDA kernel does it: --decode gpu refuses this mode).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vecbench {
namespace detail {

/// LibTorch's aa_filter for bicubic (a = -0.5), in float.
inline float torch_aa_cubic(float x) {
  constexpr float a = -0.5f;
  x = std::abs(x);
  if (x < 1.0f) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0f) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0f;
}

/// The taps of one axis as LibTorch's _compute_weights_aa computes them (float; the mixed
/// float/double expressions as C++ evaluates them there).
struct TorchAaTaps {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<float> weights;
};

inline TorchAaTaps torch_aa_taps(int in, int out) {
  TorchAaTaps t;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0f ? 2.0f * scale : 2.0f;  // (interp_size * 0.5) * scale, interp_size 4
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  const float invscale = scale >= 1.0f ? static_cast<float>(1.0 / static_cast<double>(scale)) : 1.0f;
  t.first.resize(static_cast<std::size_t>(out));
  t.count.resize(static_cast<std::size_t>(out));
  t.weights.assign(static_cast<std::size_t>(out) * static_cast<std::size_t>(t.ksize), 0.0f);
  for (int i = 0; i < out; ++i) {
    const float center = static_cast<float>(static_cast<double>(scale) * (i + 0.5));
    const int lo = std::max(static_cast<int>(static_cast<double>(center - support) + 0.5), 0);
    const int n = std::min(static_cast<int>(static_cast<double>(center + support) + 0.5), in) - lo;
    float* w = t.weights.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(t.ksize);
    float total = 0.0f;
    for (int j = 0; j < n; ++j) {
      const float d = static_cast<float>(j + lo) - center;
      w[j] = torch_aa_cubic(static_cast<float>((static_cast<double>(d) + 0.5) * static_cast<double>(invscale)));
      total += w[j];
    }
    if (total != 0.0f)
      for (int j = 0; j < n; ++j) w[j] /= total;
    t.first[static_cast<std::size_t>(i)] = lo;
    t.count[static_cast<std::size_t>(i)] = std::max(n, 0);
  }
  return t;
}

}  // namespace detail

/// Resizes the interleaved RGB uint8 image `src` (h x w, `row_stride` bytes per row) to out x out as
/// EDM2's 'torch' resize does (the file's first comment) and writes it planar (CHW) as floats into
/// `dst` (3*out*out floats).
inline void resize_rgb_to_chw_torch_bicubic_aa(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out,
                                               float* dst) {
  const std::size_t n = static_cast<std::size_t>(out), W = static_cast<std::size_t>(w), H = static_cast<std::size_t>(h);
  const bool horizontal = w != out, vertical = h != out;
  const std::size_t tw = horizontal ? n : W;
  std::vector<float> tmp(3 * H * tw);  // the width pass's float image, planar
  const detail::TorchAaTaps tx = detail::torch_aa_taps(w, horizontal ? out : w);
  for (std::size_t y = 0; y < H; ++y) {
    const std::uint8_t* row = src + y * row_stride;
    for (std::size_t c = 0; c < 3; ++c) {
      float* o = tmp.data() + (c * H + y) * tw;
      for (std::size_t x = 0; x < tw; ++x) {
        if (!horizontal) {
          o[x] = row[x * 3 + c];
          continue;
        }
        const float* k = tx.weights.data() + x * static_cast<std::size_t>(tx.ksize);
        const std::size_t first = static_cast<std::size_t>(tx.first[x]);
        float s = static_cast<float>(row[first * 3 + c]) * k[0];
        for (int i = 1; i < tx.count[x]; ++i)
          s += static_cast<float>(row[(first + static_cast<std::size_t>(i)) * 3 + c]) * k[i];
        o[x] = s;
      }
    }
  }
  const detail::TorchAaTaps ty = detail::torch_aa_taps(h, vertical ? out : h);
  const std::size_t plane = n * n;
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t y = 0; y < n; ++y) {
      float* o = dst + c * plane + y * n;
      const float* k = ty.weights.data() + y * static_cast<std::size_t>(ty.ksize);
      const std::size_t first = static_cast<std::size_t>(ty.first[y]);
      for (std::size_t x = 0; x < n; ++x) {
        if (!vertical) {
          o[x] = tmp[(c * H + y) * tw + x];
          continue;
        }
        float s = tmp[(c * H + first) * tw + x] * k[0];
        for (int i = 1; i < ty.count[y]; ++i) s += tmp[(c * H + first + static_cast<std::size_t>(i)) * tw + x] * k[i];
        o[x] = s;
      }
    }
}

}  // namespace vecbench
