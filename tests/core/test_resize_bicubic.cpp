// The bicubic resizes of the DINOv2 protocols (issue #62): dgm-eval's (Pillow's 8-bit bicubic,
// input/resize_pil.hpp) and EDM2's (LibTorch's antialiased bicubic in float,
// input/resize_torch_aa.hpp). tests/py/encoder_tools.py checks both against Pillow and torch
// themselves through DINOv2; these check their arithmetic's properties here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "vecbench/input/resize.hpp"

using namespace vecbench;

namespace {

/// A w x h RGB image: waves within 28..228, and (`edge`) a sharp edge at mid-width where a bicubic
/// overshoots 0..255.
std::vector<std::uint8_t> image(int w, int h, bool edge = true) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const double wave = 128 + 100 * std::sin(x / 7.0 + c) * std::cos(y / 11.0);
        px[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>(edge && x >= w / 2 ? (c == 1 ? 255 : 0) : wave);
      }
  return px;
}

std::vector<float> resized(const std::vector<std::uint8_t>& px, int w, int h, int out, ResizeMode m) {
  std::vector<float> dst(3 * static_cast<std::size_t>(out) * out);
  resize_rgb_to_chw(px.data(), h, w, static_cast<std::size_t>(w) * 3, out, m, dst.data());
  return dst;
}

}  // namespace

TEST(ResizeBicubic, PillowsEightBitResizeGivesBytesWithinOneStepOfItsFloatResize) {
  // (where nothing overshoots: Pillow clips its 8-bit intermediate image, the float resize does not)
  for (const auto& [w, h, out] : {std::tuple{256, 256, 224}, {160, 160, 224}, {300, 200, 224}, {97, 131, 64}}) {
    const auto px = image(w, h, false);
    const auto u8 = resized(px, w, h, out, ResizeMode::pil_bicubic_u8);
    const auto f = resized(px, w, h, out, ResizeMode::pil_bicubic);  // clean-fid's: float channels, clipped
    for (std::size_t i = 0; i < u8.size(); ++i) {
      ASSERT_EQ(u8[i], std::round(u8[i])) << w << "x" << h << " " << i;  // whole bytes
      ASSERT_GE(u8[i], 0.0f);
      ASSERT_LE(u8[i], 255.0f);
      // two passes each rounded to a byte: at most about a step and a half from the float result
      ASSERT_NEAR(u8[i], f[i], 1.6f) << w << "x" << h << " " << i;
    }
  }
}

TEST(ResizeBicubic, BothAreTheIdentityAtTheInputSize) {
  const auto px = image(64, 64);
  for (const ResizeMode m : {ResizeMode::pil_bicubic_u8, ResizeMode::torch_bicubic_aa}) {
    const auto out = resized(px, 64, 64, 64, m);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 64 * 64; ++i) ASSERT_EQ(out[c * 64 * 64 + i], px[i * 3 + c]) << to_string(m);
  }
}

TEST(ResizeBicubic, TorchsAntialiasedBicubicOvershootsAndItsWeightsSumToOne) {
  for (const auto& [in, out] : {std::pair{256, 224}, {160, 224}, {37, 16}}) {
    const auto t = detail::torch_aa_taps(in, out);
    for (int i = 0; i < out; ++i) {
      double sum = 0;
      for (int j = 0; j < t.count[i]; ++j) sum += t.weights[static_cast<std::size_t>(i) * t.ksize + j];
      ASSERT_NEAR(sum, 1.0, 1e-6) << in << "->" << out << " " << i;
      ASSERT_GE(t.first[i], 0);
      ASSERT_LE(t.first[i] + t.count[i], in);
    }
  }
  // not clamped: near the sharp edge a bicubic upscale leaves 0..255 (Pillow's 8-bit one clips)
  const auto px = image(160, 160);
  const auto f = resized(px, 160, 160, 224, ResizeMode::torch_bicubic_aa);
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  EXPECT_TRUE(*lo < 0.0f || *hi > 255.0f) << *lo << " " << *hi;
  EXPECT_EQ(parse_resize_mode("torch-bicubic-aa"), ResizeMode::torch_bicubic_aa);
  EXPECT_EQ(parse_resize_mode("pil-bicubic-u8"), ResizeMode::pil_bicubic_u8);
  EXPECT_TRUE(host_only_resize(ResizeMode::pil_bicubic_u8));
  EXPECT_FALSE(host_only_resize(ResizeMode::bilinear));
}

TEST(ResizeBicubic, CmmdsCentreCropIsPillowsBicubicOfTheCentreSquare) {
  // google-research/cmmd's box: side min(w, h), corner ((w - side) // 2, (h - side) // 2); odd and
  // even margins, landscape and portrait, and a square image (no crop)
  for (const auto& [w, h] : {std::pair{300, 200}, {201, 300}, {97, 131}, {64, 64}}) {
    const auto px = image(w, h);
    const int side = std::min(w, h), left = (w - side) / 2, top = (h - side) / 2;
    std::vector<std::uint8_t> square(static_cast<std::size_t>(side) * side * 3);
    for (int y = 0; y < side; ++y)
      std::copy_n(px.data() + ((static_cast<std::size_t>(top + y) * w + left) * 3), static_cast<std::size_t>(side) * 3,
                  square.data() + static_cast<std::size_t>(y) * side * 3);
    const auto want = resized(square, side, side, 48, ResizeMode::pil_bicubic_u8);
    EXPECT_EQ(resized(px, w, h, 48, ResizeMode::center_crop_pil_bicubic_u8), want) << w << "x" << h;
    if (w != h) {
      EXPECT_NE(resized(px, w, h, 48, ResizeMode::pil_bicubic_u8), want) << "the crop matters";
    }
  }
  EXPECT_EQ(parse_resize_mode("center-crop-pil-bicubic-u8"), ResizeMode::center_crop_pil_bicubic_u8);
  EXPECT_TRUE(host_only_resize(ResizeMode::center_crop_pil_bicubic_u8));  // the CUDA kernel does not crop
}

TEST(ResizeBicubic, ClipsShortSideResizeThenCentreCropIsPillowsResizeWindowed) {
  constexpr int kOut = 48;
  // the shorter side already the size: torchvision's long side int(48 * long / 48) = long, no pass
  // runs, the result is the source's window; its offset int(round(d / 2.0)) rounds half to even
  for (const auto& [d, at] : {std::pair{0, 0}, {1, 0}, {2, 1}, {3, 2}, {5, 2}, {7, 4}, {9, 4}}) {
    for (const bool portrait : {false, true}) {
      const int w = portrait ? kOut : kOut + d, h = portrait ? kOut + d : kOut;
      const auto px = image(w, h);
      const auto got = resized(px, w, h, kOut, ResizeMode::pil_bicubic_u8_short_side_crop);
      for (int y = 0; y < kOut; ++y)
        for (int x = 0; x < kOut; ++x)
          for (int c = 0; c < 3; ++c) {
            const int sx = portrait ? x : x + at, sy = portrait ? y + at : y;
            ASSERT_EQ(got[(static_cast<std::size_t>(c) * kOut + y) * kOut + x],
                      px[(static_cast<std::size_t>(sy) * w + sx) * 3 + c])
                << w << "x" << h << " at " << x << "," << y;
          }
    }
  }
  // a square image: the whole image resized, as pil-bicubic-u8
  const auto sq = image(97, 97);
  EXPECT_EQ(resized(sq, 97, 97, kOut, ResizeMode::pil_bicubic_u8_short_side_crop),
            resized(sq, 97, 97, kOut, ResizeMode::pil_bicubic_u8));
  // windows of one resize agree where they overlap: 300x200 -> 72x48, the crop at x = 12, and the
  // window at x = 0 and x = 24 computed separately
  const auto px = image(300, 200);
  std::vector<float> at0(3 * kOut * kOut), at24(3 * kOut * kOut);
  detail::pil_bicubic_u8_window(px.data(), 200, 300, 900, 72, kOut, 0, 0, kOut, at0.data());
  detail::pil_bicubic_u8_window(px.data(), 200, 300, 900, 72, kOut, 24, 0, kOut, at24.data());
  const auto crop = resized(px, 300, 200, kOut, ResizeMode::pil_bicubic_u8_short_side_crop);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < kOut; ++y)
      for (int x = 0; x < kOut; ++x) {
        const std::size_t i = (static_cast<std::size_t>(c) * kOut + y) * kOut;
        if (x + 12 < kOut) {
          ASSERT_EQ(crop[i + x], at0[i + x + 12]) << x << "," << y;
        }
        if (x >= 12) {
          ASSERT_EQ(crop[i + x], at24[i + x - 12]) << x << "," << y;
        }
      }
  // and vertically: 200x300 -> 48x72, the crop at y = 12
  const auto tall = image(200, 300);
  std::vector<float> top0(3 * kOut * kOut);
  detail::pil_bicubic_u8_window(tall.data(), 300, 200, 600, kOut, 72, 0, 0, kOut, top0.data());
  const auto tcrop = resized(tall, 200, 300, kOut, ResizeMode::pil_bicubic_u8_short_side_crop);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y + 12 < kOut; ++y)
      for (int x = 0; x < kOut; ++x)
        ASSERT_EQ(tcrop[(static_cast<std::size_t>(c) * kOut + y) * kOut + x],
                  top0[(static_cast<std::size_t>(c) * kOut + y + 12) * kOut + x])
            << x << "," << y;
  // a sliver whose longer side would be resized past 2^20 pixels is refused, not resized
  const std::vector<std::uint8_t> sliver(3 * 5000, 100);
  std::vector<float> dst(3 * 25 * kOut * kOut);
  EXPECT_THROW(resize_rgb_to_chw(sliver.data(), 1, 5000, 15000, kOut * 5, ResizeMode::pil_bicubic_u8_short_side_crop,
                                 dst.data()),
               Error);
  EXPECT_EQ(parse_resize_mode("pil-bicubic-u8-short-side-crop"), ResizeMode::pil_bicubic_u8_short_side_crop);
  EXPECT_TRUE(host_only_resize(ResizeMode::pil_bicubic_u8_short_side_crop));
}
