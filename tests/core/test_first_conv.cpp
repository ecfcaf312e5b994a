// engine/first_conv.hpp (the int8 and bf16 routes' first layer) against a scalar reference that
// computes each output the way the kernel promises: bias, then the 27 products in order as fused
// multiply-adds, ReLU as max(0, v), then u8 (scaled, rounded to nearest even, saturated) or bf16
// (rounded to nearest even). Equal bits, for any split of the rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "vecbench/engine/first_conv.hpp"

#ifdef VECBENCH_CORE_TESTS_ONEDNN
#include <dnnl.hpp>
#endif

namespace fc = vecbench::first_conv;

namespace {

struct FcCase {
  int n, h, w;
  std::vector<float> in, oihw, bias;
};

FcCase fc_random_case(int n, int h, int w, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  FcCase c{n, h, w, {}, {}, {}};
  c.in.resize(static_cast<std::size_t>(n) * 3 * h * w);
  for (auto& v : c.in) v = nd(rng);
  c.oihw.resize(fc::kOutChannels * fc::kTaps);
  for (auto& v : c.oihw) v = 0.3f * nd(rng);
  c.bias.resize(fc::kOutChannels);
  for (auto& v : c.bias) v = 0.2f * nd(rng);
  return c;
}

/// The output of channel o at (image, y, x), before quantization.
float fc_reference(const FcCase& c, int img, int y, int x, int o) {
  float acc = c.bias[static_cast<std::size_t>(o)];
  for (int ch = 0; ch < 3; ++ch)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const float v = c.in[((static_cast<std::size_t>(img) * 3 + ch) * c.h + 2 * y + ky) * c.w + 2 * x + kx];
        acc = std::fma(v, c.oihw[static_cast<std::size_t>(o) * fc::kTaps + (ch * 3 + ky) * 3 + kx], acc);
      }
  return acc > 0.0f ? acc : 0.0f;  // max(v, 0) as oneDNN's ReLU: NaN and -0 give +0
}

std::uint8_t fc_u8(float v, float inv_scale) {
  const float r = std::nearbyint(v * inv_scale);  // the default rounding: to nearest even
  return r >= 255.0f ? 255 : static_cast<std::uint8_t>(r);
}

std::uint16_t fc_bf16(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest even (no NaN after the ReLU, no denormal here)
  return static_cast<std::uint16_t>(u >> 16);
}

/// Runs the kernel on `c` with its rows split at `cuts` into one buffer with a guard after it.
template <class T>
std::vector<T> fc_run_rows(const FcCase& c, fc::Output kind, float inv_scale, const std::vector<int>& cuts) {
  const int oh = fc::out_dim(c.h), ow = fc::out_dim(c.w), rows = c.n * oh;
  const std::size_t count = static_cast<std::size_t>(rows) * ow * fc::kOutChannels;
  std::vector<T> out(count + 64, T(0x5a));
  const fc::Filter f = fc::make_filter(c.oihw.data(), c.bias.data());
  int first = 0;
  for (const int cut : cuts) fc::run(f, c.in.data(), c.h, c.w, kind, inv_scale, out.data(), first, cut), first = cut;
  fc::run(f, c.in.data(), c.h, c.w, kind, inv_scale, out.data(), first, rows);
  for (std::size_t i = count; i < out.size(); ++i) EXPECT_EQ(out[i], T(0x5a)) << "written past the output at " << i;
  out.resize(count);
  return out;
}

}  // namespace

TEST(FirstConv, U8AndBf16AreTheReferenceBitsForAnySplitOfTheRows) {
  // output widths 17 (two blocks of 8 and an overlapping last one) and 16 (blocks exactly)
  for (const auto& dims :
       {std::array<int, 3>{2, 35, 35}, std::array<int, 3>{3, 33, 33}, std::array<int, 3>{1, 21, 37}}) {
    FcCase c = fc_random_case(dims[0], dims[1], dims[2], 7u + static_cast<unsigned>(dims[1]));
    c.in[static_cast<std::size_t>(dims[2]) * 5 + 9] = std::nanf("");  // its outputs are 0, as oneDNN's ReLU gives
    const int oh = fc::out_dim(c.h), ow = fc::out_dim(c.w), rows = c.n * oh;
    const std::string what = std::to_string(c.n) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w);
    const float inv_scale = 255.0f / 3.0f;  // values past 3 saturate: a few percent do here
    if (fc::available(fc::Output::u8)) {
      const auto whole = fc_run_rows<std::uint8_t>(c, fc::Output::u8, inv_scale, {});
      EXPECT_EQ(fc_run_rows<std::uint8_t>(c, fc::Output::u8, inv_scale, {1, rows / 2, rows - 1}), whole) << what;
      std::size_t mismatches = 0, saturated = 0, zeros = 0;
      for (int r = 0; r < rows; ++r)
        for (int x = 0; x < ow; ++x)
          for (int o = 0; o < fc::kOutChannels; ++o) {
            const std::uint8_t want = fc_u8(fc_reference(c, r / oh, r % oh, x, o), inv_scale);
            const std::uint8_t got = whole[(static_cast<std::size_t>(r) * ow + x) * fc::kOutChannels + o];
            mismatches += got != want;
            saturated += want == 255;
            zeros += want == 0;
          }
      EXPECT_EQ(mismatches, 0u) << what;
      EXPECT_GT(saturated, 0u) << what << ": the case should reach the saturation";
      EXPECT_GT(zeros, 0u) << what << ": the case should reach the ReLU";
    }
    if (fc::available(fc::Output::bf16)) {
      const auto whole = fc_run_rows<std::uint16_t>(c, fc::Output::bf16, 1.0f, {});
      EXPECT_EQ(fc_run_rows<std::uint16_t>(c, fc::Output::bf16, 1.0f, {rows / 3, rows / 3 + 1}), whole) << what;
      std::size_t mismatches = 0;
      for (int r = 0; r < rows; ++r)
        for (int x = 0; x < ow; ++x)
          for (int o = 0; o < fc::kOutChannels; ++o)
            mismatches += whole[(static_cast<std::size_t>(r) * ow + x) * fc::kOutChannels + o] !=
                          fc_bf16(fc_reference(c, r / oh, r % oh, x, o));
      EXPECT_EQ(mismatches, 0u) << what;
    }
  }
  if (!fc::available(fc::Output::u8)) GTEST_SKIP() << "no AVX-512 here: the kernel is not built to run";
}

TEST(FirstConv, RefusedWhereTheCpuHasNoKernelOrTheInputIsTooSmall) {
  const FcCase c = fc_random_case(1, 15, 15, 3);  // output 7 wide: under the kernel's 8
  const fc::Filter f = fc::make_filter(c.oihw.data(), c.bias.data());
  std::vector<std::uint8_t> out(7 * 7 * fc::kOutChannels);
  EXPECT_THROW(fc::run(f, c.in.data(), 15, 15, fc::Output::u8, 1.0f, out.data(), 0, 7), std::logic_error);
  const FcCase flat = fc_random_case(1, 2, 40, 3);  // 2 rows: no output row (out_dim would say 1)
  EXPECT_THROW(fc::run(f, flat.in.data(), 2, 40, fc::Output::u8, 1.0f, out.data(), 0, 1), std::logic_error);
}

#ifdef VECBENCH_CORE_TESTS_ONEDNN
TEST(FirstConv, IsOneDnnsLayerAndReorderButForARareStep) {
  // What the kernel replaces in the int8 and bf16 routes: oneDNN's f32 convolution (bias, ReLU)
  // into its blocked layout, then a reorder to channels-last u8 (with the scale) or bf16. The
  // same arithmetic but the order of the 27 products: one step apart where a sum's last bit moves
  // the rounding, on 2 images of Inception's 299 x 299.
  using dnnl::memory;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const FcCase c = fc_random_case(2, 299, 299, 11);
  const int o = fc::out_dim(299);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory src({{c.n, 3, c.h, c.w}, dt::f32, tag::nchw}, eng, const_cast<float*>(c.in.data()));
  memory w({{fc::kOutChannels, 3, 3, 3}, dt::f32, tag::oihw}, eng, const_cast<float*>(c.oihw.data()));
  memory b({{fc::kOutChannels}, dt::f32, tag::x}, eng, const_cast<float*>(c.bias.data()));
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr relu;
  relu.set_post_ops(po);
  const memory::desc y_md({c.n, fc::kOutChannels, o, o}, dt::f32, tag::nChw16c);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src.get_desc(), memory::desc({fc::kOutChannels, 3, 3, 3}, dt::f32, tag::any),
                                      b.get_desc(), y_md, {2, 2}, {0, 0}, {0, 0}),
      relu, eng);
  memory wp(pd.weights_desc(), eng), y(pd.dst_desc(), eng);
  dnnl::reorder(w, wp).execute(s, w, wp);
  dnnl::convolution_forward(pd).execute(
      s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}});
  const float inv_scale = 255.0f / 3.0f;
  for (const auto kind : {fc::Output::u8, fc::Output::bf16}) {
    if (!fc::available(kind)) continue;
    const bool u8 = kind == fc::Output::u8;
    memory q({{c.n, fc::kOutChannels, o, o}, u8 ? dt::u8 : dt::bf16, tag::nhwc}, eng);
    dnnl::primitive_attr scale;
    if (u8) scale.set_output_scales(0, {inv_scale});
    dnnl::reorder(dnnl::reorder::primitive_desc(y, q, scale)).execute(s, y, q);
    s.wait();
    const std::size_t count = static_cast<std::size_t>(c.n) * o * o * fc::kOutChannels;
    std::size_t differ = 0;
    long worst = 0;
    if (u8) {
      const auto mine = fc_run_rows<std::uint8_t>(c, kind, inv_scale, {});
      const auto* theirs = static_cast<const std::uint8_t*>(q.get_data_handle());
      for (std::size_t i = 0; i < count; ++i) {
        const long d = std::labs(static_cast<long>(mine[i]) - static_cast<long>(theirs[i]));
        differ += d != 0, worst = std::max(worst, d);
      }
    } else {
      const auto mine = fc_run_rows<std::uint16_t>(c, kind, 1.0f, {});
      const auto* theirs = static_cast<const std::uint16_t*>(q.get_data_handle());
      const auto value = [](std::uint16_t h) {
        const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
        float f = 0;
        std::memcpy(&f, &u, sizeof f);
        return f;
      };
      for (std::size_t i = 0; i < count; ++i) {
        if (mine[i] == theirs[i]) continue;
        ++differ;
        // >= 0 here (ReLU): adjacent bit patterns are one step apart; a sum that cancels to near 0
        // keeps the f32 sums' absolute rounding (~1e-7 of its terms), many bf16 steps of a tiny value
        const float a = value(mine[i]), t = value(theirs[i]);
        const long d =
            std::fabs(a - t) <= 1e-5f ? 1 : std::labs(static_cast<long>(mine[i]) - static_cast<long>(theirs[i]));
        worst = std::max(worst, d);
      }
    }
    EXPECT_LE(worst, 1) << (u8 ? "u8" : "bf16") << ": more than one step from oneDNN's layer";
    EXPECT_LE(static_cast<double>(differ), 1e-3 * static_cast<double>(count)) << (u8 ? "u8" : "bf16");
  }
  if (!fc::available(fc::Output::u8)) GTEST_SKIP() << "no AVX-512 here: the kernel is not built to run";
}
#endif
