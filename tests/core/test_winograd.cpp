// Winograd F(4x4, 3x3) kernels (include/vecbench/engine/winograd.hpp) against a direct convolution
// in double precision: the shapes of Inception-v3's 3x3 stride-1 layers (and small odd ones),
// "valid" and "same" padding, output sizes that are not a multiple of the tile, a destination
// that is a slice of a wider tensor (nothing outside the slice written), a source at an offset,
// and the work units (blocks of tiles in channel groups) run in any order or split between
// threads, each with its own scratch; with 8-channel blocks (AVX2) and 16-channel blocks (AVX-512)
// wherever the CPU runs them. The tolerance (largest error / largest output) is float
// rounding: F(4x4, 3x3) rounds about 10x more than a direct sum (here 3e-6 to 1e-5 on 72 to 4032
// products per output), and a wrong transform or index is off by O(1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "vecbench/core/base/aligned.hpp"
#include "vecbench/engine/winograd.hpp"

using namespace vecbench;
using winograd::BlockedTensor;
using winograd::ConvShape;
using K = winograd::Kernel;

namespace {

/// A dense tensor of c channels in blocks of `block` (nChw8c or nChw16c; c a multiple of block).
BlockedTensor dense(float* data, int c, int h, int w, int block) {
  BlockedTensor t;
  t.data = data;
  t.stride_x = block;
  t.stride_y = static_cast<std::int64_t>(block) * w;
  t.stride_cb = static_cast<std::int64_t>(block) * w * h;
  t.stride_n = static_cast<std::int64_t>(c) * h * w;
  return t;
}

float at(const BlockedTensor& t, int block, int n, int c, int y, int x) {
  return t.data[t.offset + n * t.stride_n + (c / block) * t.stride_cb + y * t.stride_y + x * t.stride_x + c % block];
}

/// The channel blocks this CPU has kernels for (the cases run once for each).
std::vector<int> blocks_here() {
  std::vector<int> b;
  for (const int block : {8, 16})
    if (winograd::available(block)) b.push_back(block);
  return b;
}

ConvShape with_block(ConvShape s, int block) {
  s.block = block;
  return s;
}

struct Case {
  ConvShape s;
  /// The destination is channels [slice_at, slice_at + out_c) of a tensor with out_total channels.
  int out_total = 0, slice_at = 0;
};

/// How run_case runs the units: all in order on this thread, one at a time in reverse, or split
/// between `threads` threads (channel groups as the engine chooses them for that many).
enum class Order { forward, reverse, threads };

/// Runs the kernels on random inputs and weights of O(1) size (the source 40 floats into its
/// buffer); returns the largest error relative to the largest output, and checks that nothing
/// outside the destination slice changed.
double run_case(const Case& k, unsigned seed, Order order, int threads = 1) {
  const ConvShape& s = k.s;
  const int oh = s.out_h(), ow = s.out_w(), total = k.out_total ? k.out_total : s.out_c;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::size_t src_at = 40, in_n = static_cast<std::size_t>(s.batch) * s.in_c * s.in_h * s.in_w + src_at;
  const std::size_t out_n = static_cast<std::size_t>(s.batch) * total * oh * ow;
  const AlignedFloats in = aligned_floats(in_n), out = aligned_floats(out_n);
  for (std::size_t i = 0; i < in_n; ++i) in.get()[i] = std::abs(nd(rng));  // post-ReLU activations
  for (std::size_t i = 0; i < out_n; ++i) out.get()[i] = -7.0f;            // a sentinel
  const int kh = s.kh(), kw = s.kw();
  std::vector<float> w(static_cast<std::size_t>(s.out_c) * s.in_c * kh * kw), b(static_cast<std::size_t>(s.out_c));
  const float scale = 1.0f / std::sqrt(static_cast<float>(kh * kw * s.in_c));
  for (auto& x : w) x = nd(rng) * scale;
  for (auto& x : b) x = nd(rng) * 0.5f;
  const int bl = s.block;
  BlockedTensor src = dense(in.get(), s.in_c, s.in_h, s.in_w, bl);
  src.offset = static_cast<std::int64_t>(src_at);
  BlockedTensor dst = dense(out.get(), total, oh, ow, bl);
  dst.offset = static_cast<std::int64_t>(k.slice_at / bl) * dst.stride_cb;

  const auto f = winograd::make_filter(w.data(), b.data(), s.out_c, s.in_c, bl, s.kernel);
  const std::size_t positions = s.kh() > 1 && s.kw() > 1 ? 36u : s.kh() * s.kw() == 7 ? 10u : 6u;
  EXPECT_EQ(f->bytes(), (positions * s.in_c * s.out_c + s.out_c) * sizeof(float));
  const int groups = winograd::channel_groups(s, threads), units = winograd::block_count(s) * groups;
  std::vector<AlignedFloats> scratch;
  for (int t = 0; t < threads; ++t) scratch.push_back(aligned_floats(winograd::scratch_floats(s)));
  if (order == Order::reverse) {
    for (int u = units - 1; u >= 0; --u) winograd::run_units(*f, s, src, dst, groups, u, u + 1, scratch[0].get());
  } else if (order == Order::threads) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        winograd::run_units(*f, s, src, dst, groups, units * t / threads, units * (t + 1) / threads,
                            scratch[static_cast<std::size_t>(t)].get());
      });
    for (auto& th : pool) th.join();
  } else {
    winograd::run_units(*f, s, src, dst, groups, 0, units, scratch[0].get());
  }

  double max_err = 0, max_ref = 0;
  for (int n = 0; n < s.batch; ++n)
    for (int o = 0; o < s.out_c; ++o)
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x) {
          double acc = b[static_cast<std::size_t>(o)];
          for (int c = 0; c < s.in_c; ++c)
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                const int iy = y - s.pad_y() + i, ix = x - s.pad_x() + j;
                if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;
                acc += static_cast<double>(w[((static_cast<std::size_t>(o) * s.in_c + c) * kh + i) * kw + j]) *
                       at(src, bl, n, c, iy, ix);
              }
          const double ref = std::max(acc, 0.0);
          max_ref = std::max(max_ref, ref);
          max_err = std::max(max_err, std::abs(ref - at(dst, bl, n, o, y, x)));
        }
  // nothing outside the slice
  const BlockedTensor whole = dense(out.get(), total, oh, ow, bl);
  std::size_t touched = 0;
  for (int n = 0; n < s.batch; ++n)
    for (int c = 0; c < total; ++c)
      if (c < k.slice_at || c >= k.slice_at + s.out_c)
        for (int y = 0; y < oh; ++y)
          for (int x = 0; x < ow; ++x) touched += at(whole, bl, n, c, y, x) != -7.0f;
  EXPECT_EQ(touched, 0u) << "wrote outside its slice";
  return max_err / max_ref;
}

}  // namespace

TEST(Winograd, EqualsADirectConvolutionOnInceptionShapesAndOddSizes) {
  if (blocks_here().empty()) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  const std::vector<Case> cases = {
      {{1, 16, 32, 6, 6, 0}},     // one tile, valid
      {{2, 16, 32, 10, 9, 1}},    // same padding, ragged tiles
      {{1, 32, 32, 37, 37, 0}},   // Conv2d_2a's channels (147 -> 35 here), valid
      {{1, 32, 64, 23, 23, 1}},   // Conv2d_2b's channels
      {{2, 80, 192, 19, 19, 0}},  // Conv2d_4a's channels
      {{3, 64, 96, 35, 35, 1}},   // Mixed_5b's 3x3dbl_2, real size, batch 3
      {{2, 448, 384, 8, 8, 1}},   // Mixed_7b's 3x3dbl_2, real size
      // F(4, 7): Mixed_6b..6e's 1x7 and 7x1 layers at their real size ("same": pad 3), ragged
      // tiles (17 = 4 x 4 + 1), a map narrower than a tile's inputs, and "valid"
      {{1, 128, 192, 17, 17, 3, 8, K::k1x7}},
      {{2, 160, 160, 17, 17, 3, 8, K::k7x1}},
      {{1, 16, 32, 5, 3, 3, 8, K::k7x1}},
      {{1, 16, 32, 3, 5, 3, 8, K::k1x7}},
      {{2, 16, 32, 9, 13, 0, 8, K::k1x7}},
      {{2, 16, 32, 13, 9, 0, 8, K::k7x1}},
      // F(4, 3): Mixed_7b/c's 1x3 and 3x1 layers at their real size, and ragged
      {{2, 384, 384, 8, 8, 1, 8, K::k1x3}},
      {{1, 448, 384, 8, 8, 1, 8, K::k3x1}},
      {{1, 16, 32, 7, 5, 1, 8, K::k3x1}},
      {{1, 16, 32, 5, 7, 0, 8, K::k1x3}},
      // F(2x2, 5x5): Mixed_5b..5d's 5x5 layers at their real size ("same": pad 2), ragged, valid
      {{2, 48, 64, 35, 35, 2, 8, K::k5x5}},
      {{1, 16, 32, 7, 6, 2, 8, K::k5x5}},
      {{1, 16, 32, 9, 8, 0, 8, K::k5x5}},
  };
  for (const int block : blocks_here())
    for (const auto& c : cases) {
      const double e = run_case({with_block(c.s, block)}, 1, Order::forward);
      EXPECT_LT(e, 3e-5) << c.s.in_c << "->" << c.s.out_c << " " << c.s.in_h << "x" << c.s.in_w << " kernel "
                         << c.s.kh() << "x" << c.s.kw() << " pad " << c.s.pad << " block " << block;
    }
}

TEST(Winograd, WritesIntoASliceOfAWiderTensorAndUnitsRunInAnyOrderOnAnyThread) {
  if (blocks_here().empty()) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  for (const int block : blocks_here()) {
    SCOPED_TRACE("block " + std::to_string(block));
    Case c{with_block({2, 16, 32, 45, 43, 1}, block), 96, 48};  // channels 48..79 of 96, as a concatenation's branch
    ASSERT_GT(winograd::block_count(c.s), 2) << "the case should span several blocks";
    EXPECT_LT(run_case(c, 2, Order::forward), 3e-5);
    EXPECT_LT(run_case(c, 2, Order::reverse), 3e-5);
    EXPECT_LT(run_case(c, 2, Order::threads, 3), 3e-5);
    Case c7{{4, 32, 64, 17, 17, 3, block, K::k7x1}, 128, 32};  // a 7x1 branch into channels 32..95 of 128
    ASSERT_GT(winograd::block_count(c7.s), 2);
    EXPECT_LT(run_case(c7, 4, Order::reverse), 3e-5);
    EXPECT_LT(run_case(c7, 4, Order::threads, 3), 3e-5);
    // Mixed_7b's 8x8 maps at batch 1: one block, so 4 threads split its 384 output channels
    Case small{with_block({1, 448, 384, 8, 8, 1}, block), 768, 384};
    ASSERT_EQ(winograd::block_count(small.s), 1);
    EXPECT_EQ(winograd::channel_groups(small.s, 4), 4);
    EXPECT_EQ(winograd::channel_groups(small.s, 1), 1);
    EXPECT_LT(run_case(small, 3, Order::threads, 4), 3e-5);
    EXPECT_LT(run_case(small, 3, Order::reverse, 4), 3e-5);  // 4 groups, one thread, last first
  }
}

TEST(Winograd, EachImageGetsTheSameBitsAtAnyBatchSize) {
  // Features must not depend on the batch (FID): image i of a batch of 3 equals image i alone
  for (const int block : blocks_here())
    for (const K kernel : {K::k3x3, K::k1x7, K::k7x1, K::k1x3, K::k3x1, K::k5x5}) {
      ConvShape s3{3, 64, 96, 35, 35, 0, block, kernel};
      s3.pad = (std::max(s3.kh(), s3.kw()) - 1) / 2;  // "same"
      ConvShape s1 = s3;
      s1.batch = 1;
      SCOPED_TRACE("block " + std::to_string(block) + ", kernel " + std::to_string(s3.kh()) + "x" +
                   std::to_string(s3.kw()));
      std::mt19937 rng(7);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      const std::size_t img_in = 64u * 35 * 35, img_out = 96u * 35 * 35;
      const AlignedFloats in = aligned_floats(3 * img_in), out3 = aligned_floats(3 * img_out),
                          out1 = aligned_floats(img_out);
      for (std::size_t i = 0; i < 3 * img_in; ++i) in.get()[i] = std::abs(nd(rng));
      std::vector<float> w(96u * 64 * static_cast<std::size_t>(s3.kh() * s3.kw())), b(96);
      for (auto& x : w) x = nd(rng) * 0.04f;
      for (auto& x : b) x = nd(rng) * 0.5f;
      const auto f = winograd::make_filter(w.data(), b.data(), 96, 64, block, kernel);
      const auto run = [&](const ConvShape& s, const float* src, float* dst) {
        const AlignedFloats scratch = aligned_floats(winograd::scratch_floats(s));
        winograd::run_units(*f, s, dense(const_cast<float*>(src), 64, 35, 35, block), dense(dst, 96, 35, 35, block), 1,
                            0, winograd::block_count(s), scratch.get());
      };
      run(s3, in.get(), out3.get());
      for (std::size_t i = 0; i < 3; ++i) {
        run(s1, in.get() + i * img_in, out1.get());
        EXPECT_EQ(0, std::memcmp(out1.get(), out3.get() + i * img_out, img_out * sizeof(float))) << "image " << i;
      }
    }
}

TEST(Winograd, RefusesAFilterOfAnotherBlockAndBlocksOtherThan8Or16) {
  EXPECT_THROW(winograd::make_filter(nullptr, nullptr, 32, 16, 4), std::invalid_argument);
  if (!winograd::available(8)) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  std::vector<float> w(32u * 16 * 9, 0.0f), b(32, 0.0f);
  const auto f8 = winograd::make_filter(w.data(), b.data(), 32, 16, 8);
  const ConvShape s16 = with_block({1, 16, 32, 6, 6, 0}, 16);
  std::vector<float> buf(16u * 6 * 6 + 32u * 4 * 4, 0.0f);
  const AlignedFloats scratch = aligned_floats(winograd::scratch_floats(s16));
  EXPECT_THROW(winograd::run_units(*f8, s16, dense(buf.data(), 16, 6, 6, 16), dense(buf.data() + 576, 32, 4, 4, 16), 1,
                                   0, 1, scratch.get()),
               std::logic_error);
  ConvShape s8x7 = with_block({1, 16, 32, 6, 6, 0}, 8);
  s8x7.kernel = K::k1x7;  // the filter is 3x3's
  EXPECT_THROW(winograd::run_units(*f8, s8x7, dense(buf.data(), 16, 6, 6, 8), dense(buf.data() + 576, 32, 6, 0, 8), 1,
                                   0, 1, scratch.get()),
               std::logic_error);
}

TEST(Winograd, TakesOnlyChannelCountsItsRegistersFit) {
  EXPECT_TRUE(winograd::supports({1, 8, 16, 3, 3, 0}));
  EXPECT_FALSE(winograd::supports({1, 3, 32, 299, 299, 0})) << "in channels not a multiple of 8";
  EXPECT_FALSE(winograd::supports({1, 8, 24, 9, 9, 1})) << "out channels not a multiple of 16";
  EXPECT_FALSE(winograd::supports({1, 8, 16, 2, 2, 0})) << "no output";
  EXPECT_TRUE(winograd::supports({1, 16, 32, 3, 3, 0, 16}));
  EXPECT_FALSE(winograd::supports({1, 8, 32, 3, 3, 0, 16})) << "in channels not a multiple of 16";
  EXPECT_FALSE(winograd::supports({1, 16, 16, 3, 3, 0, 16})) << "out channels not a multiple of 32";
  EXPECT_FALSE(winograd::supports({1, 16, 32, 3, 3, 0, 4})) << "blocks of 4";
}

// A view (the packed-weights file's filters, mapped) of make_filter's floats is the same filter;
// floats off a 64-byte boundary or channels that don't fit the block are refused.
TEST(Winograd, AFilterViewOfMadeFiltersIsTheSameFilterAndRefusesWhatDoesNotFit) {
  std::vector<float> w(32u * 16 * 7), b(32);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 11) - 5.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
  const auto f = winograd::make_filter(w.data(), b.data(), 32, 16, 8, K::k1x7);
  const auto v = winograd::filter_view(32, 16, 8, K::k1x7, f->u, f->bias, f->storage);
  EXPECT_EQ(v->positions, 10);
  EXPECT_EQ(v->u_floats(), f->u_floats());
  EXPECT_EQ(v->bytes(), f->bytes());
  EXPECT_EQ(v->u, f->u);
  EXPECT_TRUE(std::equal(v->bias, v->bias + 32, b.begin()));
  EXPECT_EQ(f->storage.use_count(), 2) << "the view does not hold the floats";
  EXPECT_THROW(winograd::filter_view(32, 16, 8, K::k1x7, f->u + 1, f->bias, f->storage), std::invalid_argument);
  EXPECT_THROW(winograd::filter_view(32, 16, 8, K::k1x7, f->u, nullptr, f->storage), std::invalid_argument);
  EXPECT_THROW(winograd::filter_view(24, 16, 8, K::k1x7, f->u, f->bias, f->storage), std::invalid_argument);
  EXPECT_THROW(winograd::filter_view(32, 12, 8, K::k1x7, f->u, f->bias, f->storage), std::invalid_argument);
  EXPECT_THROW(winograd::filter_view(32, 16, 4, K::k1x7, f->u, f->bias, f->storage), std::invalid_argument);
}
