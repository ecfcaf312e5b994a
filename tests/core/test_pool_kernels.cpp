// engine/pool_kernels.hpp (the int8 and bf16 routes' poolings) against scalar references that
// compute each output the way the header promises, on tensors that are slices of wider ones (the
// kernels write into concatenations): equal bits for any split of the rows, and nothing written
// outside the slice. Where the core tests are built with oneDNN, also against oneDNN's poolings
// and reorders, which the kernels replace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "vecbench/engine/pool_kernels.hpp"

#ifdef VECBENCH_CORE_TESTS_ONEDNN
#include <dnnl.hpp>
#endif

namespace pk = vecbench::pool_kernels;

namespace {

/// A channels-last buffer of `n x h x w` pixels of `stride` elements, of which a tensor takes
/// channels [offset, offset + c); the rest keeps its guard value.
template <class T>
struct PkBuffer {
  std::vector<T> data;
  pk::Tensor t;
  PkBuffer(int n, int h, int w, int c, int stride, int offset, T guard)
      : data(static_cast<std::size_t>(n) * h * w * stride, guard) {
    t.data = data.data() + offset;
    t.n = n, t.h = h, t.w = w, t.c = c, t.pixel_stride = stride;
  }
  T& at(int i, int y, int x, int ch) {
    return static_cast<T*>(t.data)[((static_cast<std::ptrdiff_t>(i) * t.h + y) * t.w + x) * t.pixel_stride + ch];
  }
  /// Every element outside the tensor's channels still `guard`.
  bool untouched_outside(int offset, T guard) const {
    for (std::size_t e = 0; e < data.size(); ++e) {
      const long ch = static_cast<long>(e % static_cast<std::size_t>(t.pixel_stride)) - offset;
      if ((ch < 0 || ch >= t.c) && std::memcmp(&data[e], &guard, sizeof(T)) != 0) return false;
    }
    return true;
  }
};

float pk_bf16_value(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint16_t pk_bf16(float v) {  // to nearest even (finite values)
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
std::uint8_t pk_u8(float v) {  // v >= 0: rounded to nearest even, saturated
  const float r = std::nearbyint(v);
  return r >= 255.0f ? 255 : static_cast<std::uint8_t>(r);
}

/// Runs `kernel(first, last)` over `rows` split at `cuts`.
template <class F>
void pk_split(int rows, const std::vector<int>& cuts, F kernel) {
  int first = 0;
  for (const int cut : cuts) kernel(first, cut), first = cut;
  kernel(first, rows);
}

const std::vector<std::vector<int>> kSplits{{}, {1}, {2, 3, 5}};  // every test has 6 rows or more

}  // namespace

TEST(PoolKernels, MaxPoolIsTheReferenceIntoASliceForAnySplitOfTheRows) {
  if (!pk::available(pk::Type::u8)) GTEST_SKIP() << "no AVX-512 here: the kernels are not built to run";
  std::mt19937 rng(5);
  struct Shape {
    int c, h, w, k, stride, pad;
  };
  // the stem's and reduction blocks' 3x3 stride-2 pools, Mixed_7c's stride-1 padded one; 288
  // channels: a masked last 64 (u8)
  for (const Shape s : {Shape{288, 9, 11, 3, 2, 0}, Shape{64, 8, 7, 3, 1, 1}, Shape{48, 6, 6, 3, 2, 1}}) {
    const int n = 2, oh = pk::out_dim(s.h, s.k, s.stride, s.pad), ow = pk::out_dim(s.w, s.k, s.stride, s.pad);
    for (const float rescale : {1.0f, 0.7f, 1.9f}) {  // 1.9: saturates at 255
      PkBuffer<std::uint8_t> src(n, s.h, s.w, s.c, s.c + 32, 16, 0xee);
      std::uniform_int_distribution<int> u(0, 255);
      for (int i = 0; i < n; ++i)
        for (int y = 0; y < s.h; ++y)
          for (int x = 0; x < s.w; ++x)
            for (int ch = 0; ch < s.c; ++ch) src.at(i, y, x, ch) = static_cast<std::uint8_t>(u(rng));
      for (const auto& cuts : kSplits) {
        PkBuffer<std::uint8_t> dst(n, oh, ow, s.c, s.c + 48, 32, 0x5a);
        pk_split(n * oh, cuts,
                 [&](int a, int b) { pk::max_pool(pk::Type::u8, src.t, dst.t, s.k, s.stride, s.pad, rescale, a, b); });
        ASSERT_TRUE(dst.untouched_outside(32, 0x5a)) << "written outside the slice, c " << s.c;
        for (int i = 0; i < n; ++i)
          for (int y = 0; y < oh; ++y)
            for (int x = 0; x < ow; ++x)
              for (int ch = 0; ch < s.c; ++ch) {
                int best = -1;
                for (int yy = std::max(0, y * s.stride - s.pad); yy < std::min(s.h, y * s.stride - s.pad + s.k); ++yy)
                  for (int xx = std::max(0, x * s.stride - s.pad); xx < std::min(s.w, x * s.stride - s.pad + s.k); ++xx)
                    best = std::max(best, static_cast<int>(src.at(i, yy, xx, ch)));
                const auto want =
                    rescale == 1.0f ? static_cast<std::uint8_t>(best) : pk_u8(static_cast<float>(best) * rescale);
                ASSERT_EQ(dst.at(i, y, x, ch), want)
                    << "c " << s.c << " rescale " << rescale << " at " << i << "," << y << "," << x << "," << ch;
              }
      }
    }
    if (!pk::available(pk::Type::bf16)) continue;
    PkBuffer<std::uint16_t> src(n, s.h, s.w, s.c, s.c + 16, 16, 0xeeee);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < s.h; ++y)
        for (int x = 0; x < s.w; ++x)
          for (int ch = 0; ch < s.c; ++ch) src.at(i, y, x, ch) = pk_bf16(nd(rng));  // negatives too
    src.at(1, 2, 3, 7) = 0x7fc0;  // a NaN: left out of every window's maximum (std::max below drops it too)
    for (const auto& cuts : kSplits) {
      PkBuffer<std::uint16_t> dst(n, oh, ow, s.c, s.c + 32, 16, 0x5a5a);
      pk_split(n * oh, cuts,
               [&](int a, int b) { pk::max_pool(pk::Type::bf16, src.t, dst.t, s.k, s.stride, s.pad, 1.0f, a, b); });
      ASSERT_TRUE(dst.untouched_outside(16, 0x5a5a)) << "bf16 written outside the slice, c " << s.c;
      for (int i = 0; i < n; ++i)
        for (int y = 0; y < oh; ++y)
          for (int x = 0; x < ow; ++x)
            for (int ch = 0; ch < s.c; ++ch) {
              float best = -std::numeric_limits<float>::infinity();
              for (int yy = std::max(0, y * s.stride - s.pad); yy < std::min(s.h, y * s.stride - s.pad + s.k); ++yy)
                for (int xx = std::max(0, x * s.stride - s.pad); xx < std::min(s.w, x * s.stride - s.pad + s.k); ++xx)
                  best = std::max(best, pk_bf16_value(src.at(i, yy, xx, ch)));
              ASSERT_EQ(dst.at(i, y, x, ch), pk_bf16(best)) << "bf16 c " << s.c << " at " << i << "," << y << "," << x;
            }
    }
  }
}

TEST(PoolKernels, AverageWithReluIsTheReferenceIntoASliceForAnySplitOfTheRows) {
  if (!pk::available(pk::Type::u8)) GTEST_SKIP() << "no AVX-512 here: the kernels are not built to run";
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.2f, 1.0f);
  const int n = 2, h = 7, w = 9, c = 48;
  PkBuffer<float> src(n, h, w, c, c, 0, 0.0f);  // dense, as the pool branch's 1x1 layer writes it
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int ch = 0; ch < c; ++ch) src.at(i, y, x, ch) = nd(rng);
  src.at(1, 3, 4, 5) = std::numeric_limits<float>::quiet_NaN();  // every window over it: 0 (max(v, 0))
  // the window's sum in the promised order (rows top to bottom, each left to right), over its count
  const auto mean = [&](int i, int y, int x, int ch) {
    float sum = 0.0f;
    int count = 0;
    for (int yy = std::max(0, y - 1); yy < std::min(h, y + 2); ++yy)
      for (int xx = std::max(0, x - 1); xx < std::min(w, x + 2); ++xx) sum += src.at(i, yy, xx, ch), ++count;
    const float v = sum / static_cast<float>(count);
    return v > 0.0f ? v : 0.0f;
  };
  const float inv_scale = 255.0f / 1.5f;  // saturates the largest means
  for (const auto& cuts : kSplits) {
    PkBuffer<std::uint8_t> q(n, h, w, c, c + 80, 64, 0x5a);
    pk_split(n * h, cuts, [&](int a, int b) { pk::avg3x3_relu(src.t, pk::Type::u8, inv_scale, q.t, a, b); });
    ASSERT_TRUE(q.untouched_outside(64, 0x5a)) << "written outside the slice";
    std::size_t saturated = 0;
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < c; ++ch) {
            ASSERT_EQ(q.at(i, y, x, ch), pk_u8(mean(i, y, x, ch) * inv_scale))
                << i << "," << y << "," << x << "," << ch;
            saturated += q.at(i, y, x, ch) == 255;
          }
    EXPECT_GT(saturated, 0u);
    EXPECT_EQ(q.at(1, 3, 4, 5), 0) << "a NaN in the window gives 0";
    if (!pk::available(pk::Type::bf16)) continue;
    PkBuffer<std::uint16_t> b(n, h, w, c, c + 16, 16, 0x5a5a);
    pk_split(n * h, cuts, [&](int a, int e) { pk::avg3x3_relu(src.t, pk::Type::bf16, 1.0f, b.t, a, e); });
    ASSERT_TRUE(b.untouched_outside(16, 0x5a5a)) << "bf16 written outside the slice";
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < c; ++ch)
            ASSERT_EQ(b.at(i, y, x, ch), pk_bf16(mean(i, y, x, ch))) << i << "," << y << "," << x << "," << ch;
  }
}

TEST(PoolKernels, GlobalAverageSumsU8ExactlyAndBf16InOrder) {
  if (!pk::available(pk::Type::u8)) GTEST_SKIP() << "no AVX-512 here: the kernels are not built to run";
  std::mt19937 rng(9);
  const int n = 3, h = 8, w = 8, c = 64;
  PkBuffer<std::uint8_t> u(n, h, w, c, c, 0, 0);
  PkBuffer<std::uint16_t> b(n, h, w, c, c, 0, 0);
  std::uniform_int_distribution<int> ud(0, 255);
  std::exponential_distribution<float> ed(1.0f);
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int ch = 0; ch < c; ++ch)
          u.at(i, y, x, ch) = static_cast<std::uint8_t>(ud(rng)), b.at(i, y, x, ch) = pk_bf16(ed(rng));
  const float scale = 0.0123f;
  for (const auto& cuts : std::vector<std::vector<int>>{{}, {1}, {1, 2}}) {
    std::vector<float> fu(static_cast<std::size_t>(n) * c, -1.0f), fb(fu);
    pk_split(n, cuts, [&](int a, int e) { pk::global_avg(pk::Type::u8, u.t, scale, fu.data(), a, e); });
    if (pk::available(pk::Type::bf16))
      pk_split(n, cuts, [&](int a, int e) { pk::global_avg(pk::Type::bf16, b.t, 1.0f, fb.data(), a, e); });
    for (int i = 0; i < n; ++i)
      for (int ch = 0; ch < c; ++ch) {
        long sum = 0;
        float bsum = 0.0f;
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) sum += u.at(i, y, x, ch), bsum += pk_bf16_value(b.at(i, y, x, ch));
        const std::size_t at = static_cast<std::size_t>(i) * c + ch;
        EXPECT_EQ(fu[at], static_cast<float>(sum) * (scale / 64.0f)) << i << "," << ch;
        if (pk::available(pk::Type::bf16)) {
          EXPECT_EQ(fb[at], bsum * (1.0f / 64.0f)) << i << "," << ch;
        }
      }
  }
}

TEST(PoolKernels, RefusedWhereTheShapesDoNotFit) {
  std::vector<std::uint8_t> a(4096), b(4096);
  const auto t = [](void* p, int h, int w, int c, int stride) {
    pk::Tensor x;
    x.data = p, x.n = 1, x.h = h, x.w = w, x.c = c, x.pixel_stride = stride;
    return x;
  };
  if (!pk::available(pk::Type::u8)) {
    EXPECT_THROW(pk::max_pool(pk::Type::u8, t(a.data(), 5, 5, 16, 16), t(b.data(), 2, 2, 16, 16), 3, 2, 0, 1, 0, 2),
                 std::invalid_argument);
    GTEST_SKIP() << "no AVX-512 here: refused everywhere";
  }
  EXPECT_TRUE(pk::fits(pk::Type::u8, t(a.data(), 5, 5, 16, 16), t(b.data(), 2, 2, 16, 16), 3, 2, 0));
  EXPECT_FALSE(pk::fits(pk::Type::u8, t(a.data(), 5, 5, 24, 24), t(b.data(), 2, 2, 24, 24), 3, 2, 0)) << "c % 16";
  EXPECT_FALSE(pk::fits(pk::Type::u8, t(a.data(), 5, 5, 16, 8), t(b.data(), 2, 2, 16, 16), 3, 2, 0)) << "stride < c";
  EXPECT_FALSE(pk::fits(pk::Type::u8, t(a.data(), 5, 5, 16, 16), t(b.data(), 3, 2, 16, 16), 3, 2, 0)) << "dst size";
  EXPECT_FALSE(pk::fits(pk::Type::u8, t(a.data(), 5, 5, 16, 16), t(b.data(), 9, 9, 16, 16), 3, 1, 3)) << "pad >= k";
  EXPECT_THROW(pk::max_pool(pk::Type::u8, t(a.data(), 5, 5, 16, 16), t(b.data(), 2, 2, 16, 16), 3, 2, 0, 1, 0, 3),
               std::invalid_argument)
      << "rows past the output";
  EXPECT_THROW(pk::max_pool(pk::Type::u8, t(nullptr, 5, 5, 16, 16), t(b.data(), 2, 2, 16, 16), 3, 2, 0, 1, 0, 2),
               std::invalid_argument);
  EXPECT_THROW(pk::global_avg(pk::Type::u8, t(a.data(), 2, 2, 24, 24), 1.0f, reinterpret_cast<float*>(b.data()), 0, 1),
               std::invalid_argument);
}

#ifdef VECBENCH_CORE_TESTS_ONEDNN
TEST(PoolKernels, MaxPoolIsOneDnnsPoolingAndReorderBitForBit) {
  // What the kernels replace in the int8 and bf16 routes: oneDNN's channels-last max pool into a
  // dense buffer, then a reorder into the concatenation's slice (u8: with the destination's step).
  if (!pk::available(pk::Type::u8)) GTEST_SKIP() << "no AVX-512 here: the kernels are not built to run";
  using dnnl::memory;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::mt19937 rng(3);
  const int n = 2, c = 288, h = 35, w = 35, oh = pk::out_dim(h, 3, 2, 0);  // Mixed_6a's max pool branch
  const float rescale = 1.7f;                                              // maxima above 150 saturate at 255
  for (const bool bf16 : {false, true}) {
    if (bf16 && !pk::available(pk::Type::bf16)) continue;
    const dt type = bf16 ? dt::bf16 : dt::u8;
    memory src({{n, c, h, w}, type, tag::nhwc}, eng), pooled({{n, c, oh, oh}, type, tag::nhwc}, eng),
        q({{n, c, oh, oh}, type, tag::nhwc}, eng);
    const std::size_t count = static_cast<std::size_t>(n) * c * h * w;
    if (bf16) {
      std::normal_distribution<float> nd(0.0f, 1.0f);  // negatives too
      auto* p = static_cast<std::uint16_t*>(src.get_data_handle());
      for (std::size_t e = 0; e < count; ++e) p[e] = pk_bf16(nd(rng));
    } else {
      std::uniform_int_distribution<int> ud(0, 255);
      auto* p = static_cast<std::uint8_t*>(src.get_data_handle());
      for (std::size_t e = 0; e < count; ++e) p[e] = static_cast<std::uint8_t>(ud(rng));
    }
    dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src.get_desc(),
                                    pooled.get_desc(), {2, 2}, {3, 3}, {0, 0}, {0, 0}),
        eng);
    dnnl::pooling_forward(pd).execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, pooled}});
    dnnl::primitive_attr scale;
    if (!bf16) scale.set_output_scales(0, {rescale});
    dnnl::reorder(dnnl::reorder::primitive_desc(pooled, q, scale)).execute(s, pooled, q);
    s.wait();
    pk::Tensor ts, td;
    ts.data = src.get_data_handle(), ts.n = n, ts.h = h, ts.w = w, ts.c = c, ts.pixel_stride = c;
    const std::size_t size = bf16 ? 2 : 1, out_count = static_cast<std::size_t>(n) * c * oh * oh;
    std::vector<unsigned char> mine(out_count * size);
    td = ts, td.data = mine.data(), td.h = oh, td.w = oh;
    pk::max_pool(bf16 ? pk::Type::bf16 : pk::Type::u8, ts, td, 3, 2, 0, bf16 ? 1.0f : rescale, 0, n * oh);
    EXPECT_EQ(std::memcmp(mine.data(), q.get_data_handle(), out_count * size), 0) << (bf16 ? "bf16" : "u8");
  }
}
#endif
