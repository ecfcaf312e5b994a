// The CUDA resize kernel's per-pixel code (resize_pixel_to_chw, resize_formula.hpp), run here on
// the host over every output pixel, gives resize_rgb_to_chw's floats bit for bit; and the build
// without nvJPEG refuses `--decode gpu` with a ConfigError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/input/device_decode.hpp"
#include "vecbench/input/resize.hpp"
#include "vecbench/input/resize_formula.hpp"

using namespace vecbench;

namespace {

struct Case {
  int h, w, out;
};

// Both resizes of a random h x w image (rows padded past 3*w) to out x out.
void expect_same(const Case& k, ResizeMode mode, std::mt19937& rng) {
  const std::size_t stride = static_cast<std::size_t>(k.w) * 3 + 5;
  std::vector<std::uint8_t> img(stride * static_cast<std::size_t>(k.h));
  for (auto& v : img) v = static_cast<std::uint8_t>(rng() & 255u);
  const std::size_t n = 3u * static_cast<std::size_t>(k.out) * static_cast<std::size_t>(k.out);
  std::vector<float> cpu(n, -1.0f), kernel(n, -2.0f);
  resize_rgb_to_chw(img.data(), k.h, k.w, stride, k.out, mode, cpu.data());
  for (int y = 0; y < k.out; ++y)
    for (int x = 0; x < k.out; ++x) resize_pixel_to_chw(img.data(), k.h, k.w, stride, k.out, mode, x, y, kernel.data());
  std::size_t differ = 0, first = n;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&cpu[i], &kernel[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << k.h << "x" << k.w << " -> " << k.out << " " << to_string(mode) << ": first at " << first
                        << ": " << (first < n ? cpu[first] : 0.0f) << " vs " << (first < n ? kernel[first] : 0.0f);
}

const Case kCases[] = {
    {500, 375, 299},   // downscale, non-square
    {120, 90, 299},    // upscale, non-square
    {299, 299, 299},   // identity
    {1, 640, 299},     // 1 x N
    {640, 1, 299},     // N x 1
    {1, 1, 5},         // a single pixel
    {3, 3, 7},         // small upscale
    {1000, 999, 299},  // large downscale
    {37, 1211, 64},    // extreme aspect
    {300, 299, 299},   // one side identity
    {2, 2, 1},         // to one pixel
};

}  // namespace

TEST(ResizeFormula, KernelPixelPathEqualsCpuResizeTfLegacy) {
  std::mt19937 rng(11);
  for (const auto& k : kCases) expect_same(k, ResizeMode::tf_legacy, rng);
}

TEST(ResizeFormula, KernelPixelPathEqualsCpuResizeBilinear) {
  std::mt19937 rng(12);
  for (const auto& k : kCases) expect_same(k, ResizeMode::bilinear, rng);
}

// The taps themselves, against the formulas written out (TF1 legacy: src = i * in/out; bilinear:
// src = (i + 0.5) * in/out - 0.5, clamped at 0), so that a change to the shared formula fails
// here even though the CPU and kernel paths would still agree with each other.
TEST(ResizeFormula, TapsFollowTheDocumentedFormulas) {
  const int in = 375, out = 299;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int i = 0; i < out; ++i) {
    const volatile float prod = static_cast<float>(i) * scale;  // volatile: rounded as the library does
    const float legacy = prod;
    const volatile float half = (static_cast<float>(i) + 0.5f) * scale;
    float bil = half - 0.5f;
    if (bil < 0.0f) bil = 0.0f;
    for (auto [mode, src] : {std::pair{ResizeMode::tf_legacy, legacy}, std::pair{ResizeMode::bilinear, bil}}) {
      const detail::Tap t = detail::resize_tap(i, in, detail::resize_scale(in, out), mode);
      const int lo = std::min(static_cast<int>(std::floor(src)), in - 1);
      EXPECT_EQ(t.lo, lo) << i;
      EXPECT_EQ(t.hi, std::min(lo + 1, in - 1)) << i;
      EXPECT_EQ(t.frac, src - std::floor(src)) << i;
    }
  }
  // Known values: 2x downscale in legacy mode reads even pixels exactly; identity reads pixel i.
  EXPECT_EQ(detail::resize_tap(3, 8, detail::resize_scale(8, 4), ResizeMode::tf_legacy).lo, 6);
  EXPECT_EQ(detail::resize_tap(3, 8, detail::resize_scale(8, 4), ResizeMode::tf_legacy).frac, 0.0f);
  EXPECT_EQ(detail::resize_tap(3, 8, detail::resize_scale(8, 4), ResizeMode::bilinear).lo, 6);
  EXPECT_EQ(detail::resize_tap(3, 8, detail::resize_scale(8, 4), ResizeMode::bilinear).frac, 0.5f);
  for (auto mode : {ResizeMode::tf_legacy, ResizeMode::bilinear}) {
    const detail::Tap t = detail::resize_tap(5, 9, detail::resize_scale(9, 9), mode);
    EXPECT_EQ(t.lo, 5);
    EXPECT_EQ(t.hi, 6);
    EXPECT_EQ(t.frac, 0.0f);
  }
}

TEST(ResizeFormula, BlendIsTopThenBottomThenVertical) {
  // top = 10 + (30 - 10) * 0.25 = 15; bottom = 50 + (90 - 50) * 0.25 = 60; 15 + 45 * 0.5 = 37.5
  EXPECT_EQ(detail::bilinear_blend(10, 30, 50, 90, 0.25f, 0.5f), 37.5f);
  EXPECT_EQ(detail::bilinear_blend(7, 200, 9, 3, 0.0f, 0.0f), 7.0f);
}

#ifndef VECBENCH_WITH_NVJPEG
TEST(DeviceDecode, BuildWithoutNvjpegRefusesGpuDecoding) {
  EXPECT_FALSE(nvjpeg_available());
  EXPECT_THROW(make_nvjpeg_decoder(0, nullptr, 8, 299, ResizeMode::tf_legacy), ConfigError);
  try {
    make_nvjpeg_decoder(0, nullptr, 8, 299, ResizeMode::bilinear);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no nvJPEG"), std::string::npos) << e.what();
  }
}
#else
TEST(DeviceDecode, BuildWithNvjpegHasIt) { EXPECT_TRUE(nvjpeg_available()); }
#endif

// clean-fid's resize (pil-bicubic): Pillow's taps, its normalization at the borders, the
// antialiasing support when downscaling, the skipped pass of an unchanged axis and the clip.
TEST(PilBicubic, TapsArePillowsBicubicNormalizedAtTheBorders) {
  // 2 -> 4 (upscale): output 0's centre is input 0.25, support 2: inputs 0..1 (2 of them, the
  // window cut at the left border) with bicubic(-0.25 + ...) weights, divided by their sum
  const detail::PilTaps t = detail::pil_bicubic_taps(2, 4);
  EXPECT_EQ(t.ksize, 5);
  ASSERT_EQ(t.first[0], 0);
  ASSERT_EQ(t.count[0], 2);
  const double w0 = detail::pil_bicubic(0 - 0.25 + 0.5), w1 = detail::pil_bicubic(1 - 0.25 + 0.5);
  EXPECT_DOUBLE_EQ(t.weights[0], w0 / (w0 + w1));
  EXPECT_DOUBLE_EQ(t.weights[1], w1 / (w0 + w1));
  // the filter: 1 at 0, 0 at the integers, negative lobes between 1 and 2 (a = -0.5)
  EXPECT_EQ(detail::pil_bicubic(0.0), 1.0);
  EXPECT_EQ(detail::pil_bicubic(1.0), 0.0);
  EXPECT_EQ(detail::pil_bicubic(2.0), 0.0);
  EXPECT_LT(detail::pil_bicubic(1.5), 0.0);
  EXPECT_DOUBLE_EQ(detail::pil_bicubic(-0.5), detail::pil_bicubic(0.5));
  // 1000 -> 299 (downscale 3.34x): the support widens with the scale (antialiasing)
  const detail::PilTaps d = detail::pil_bicubic_taps(1000, 299);
  EXPECT_EQ(d.ksize, 2 * static_cast<int>(std::ceil(2.0 * 1000 / 299)) + 1);
  for (std::size_t i = 0; i < 299; ++i) {
    double sum = 0;
    for (int k = 0; k < d.count[i]; ++k) sum += d.weights[i * static_cast<std::size_t>(d.ksize) + k];
    EXPECT_NEAR(sum, 1.0, 1e-12) << i;
    if (i >= 2 && i + 2 < 299) {
      EXPECT_GE(d.count[i], 13) << i;  // 4 taps upscaling; the borders cut the window
    }
  }
}

TEST(PilBicubic, FlatStaysFlatEdgesClipAndAnUnchangedSizeIsCopied) {
  const int h = 37, w = 53;
  std::vector<std::uint8_t> img(static_cast<std::size_t>(h) * w * 3, 200);
  std::vector<float> out(3 * 299 * 299);
  resize_rgb_to_chw(img.data(), h, w, static_cast<std::size_t>(w) * 3, 299, ResizeMode::pil_bicubic, out.data());
  for (float v : out) ASSERT_NEAR(v, 200.0f, 1e-3f);  // normalized weights: a flat image stays flat
  // a hard edge 0 | 255: bicubic overshoots on both sides; clean-fid clips to 0..255
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img[(static_cast<std::size_t>(y) * w + x) * 3 + c] = x < w / 2 ? 0 : 255;
  resize_rgb_to_chw(img.data(), h, w, static_cast<std::size_t>(w) * 3, 299, ResizeMode::pil_bicubic, out.data());
  EXPECT_EQ(*std::min_element(out.begin(), out.end()), 0.0f);
  EXPECT_EQ(*std::max_element(out.begin(), out.end()), 255.0f);
  // the same width as the output: only the vertical pass runs, each column resized on its own
  std::vector<std::uint8_t> col(static_cast<std::size_t>(h) * 299 * 3);
  std::mt19937 rng(5);
  for (auto& v : col) v = static_cast<std::uint8_t>(rng() & 255);
  resize_rgb_to_chw(col.data(), h, 299, 299 * 3, 299, ResizeMode::pil_bicubic, out.data());
  const detail::PilTaps t = detail::pil_bicubic_taps(h, 299);
  for (std::size_t y : {std::size_t{0}, std::size_t{150}, std::size_t{298}}) {
    double ss = 0;
    for (int k = 0; k < t.count[y]; ++k)
      ss += static_cast<float>(col[(static_cast<std::size_t>(t.first[y] + k) * 299 + 7) * 3 + 1]) *
            t.weights[y * static_cast<std::size_t>(t.ksize) + k];
    EXPECT_EQ(out[299 * 299 + y * 299 + 7], std::clamp(static_cast<float>(ss), 0.0f, 255.0f)) << y;
  }
  EXPECT_EQ(parse_resize_mode("pil-bicubic"), ResizeMode::pil_bicubic);
  EXPECT_EQ(to_string(ResizeMode::pil_bicubic), "pil-bicubic");
}
