// The oneDNN engine's network builder and layer builders (src/engine/onednn_network.hpp,
// onednn_conv.hpp, onednn_pool.hpp) on their own, without Inception: a toy second network of two
// layers built through them equals a direct computation, at every batch size and thread count
// bit for bit; the arena reuses dead buffers' bytes; replicas of one cache share packed weights;
// a quantization point without a range is an error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "onednn_conv.hpp"
#include "onednn_network.hpp"
#include "onednn_pool.hpp"
#include "packed_weight_cache.hpp"
#include "vecbench/engine/onednn_inception.hpp"

namespace {

using namespace vecbench;                 // NOLINT
using namespace vecbench::onednn_detail;  // NOLINT

const dnnl::engine& cpu() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

std::vector<float> random_floats(std::size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

FoldedConv random_layer(int oc, int ic, int k, unsigned seed) {
  FoldedConv l;
  l.shape = {oc, ic, k, k};
  l.weight =
      random_floats(static_cast<std::size_t>(oc) * ic * k * k, seed, 1.0f / std::sqrt(static_cast<float>(ic * k * k)));
  l.bias = random_floats(static_cast<std::size_t>(oc), seed + 1, 0.1f);
  return l;
}

/// The toy network's shapes: NCHW input of `c` channels, h x w.
struct Shape {
  int n = 3, c = 16, h = 13, w = 11;
};
int pooled(int in) { return (in - 3) / 2 + 1; }

/// A second network through the same builder as Inception: a 3x3 "same" conv+bias+ReLU, then a
/// 3x3 stride-2 max pool, between reorders from and to the caller's NCHW floats.
class ToyNetwork {
 public:
  ToyNetwork(const FoldedConv& l, PackedWeightCache& packed, const Shape& s, int threads, bool winograd)
      : route_(cpu_route(Precision::fp32, true, true, winograd)),
        net_(cpu(), s.n, threads, ActType{dt::f32, format_of(route_.f32_layout)}),
        convs_(net_, packed, route_, "toy"),
        pools_(net_, route_, "toy") {
    const int oc = static_cast<int>(l.shape[0]);
    const memory in = net_.input(memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::nchw));
    const Act x = net_.new_act(s.c, s.h, s.w);
    net_.add_reorder(in, x.mem);
    const Act y = net_.new_act(oc, s.h, s.w);
    convs_.conv_into("toy.conv", l, x.mem, y.mem, ConvGeometry{1, 1, 1});
    const Act z = pools_.pool(algorithm::pooling_max, y, PoolWindow{3, 2, 0});
    net_.add_reorder(z.mem, net_.output(memory::desc({s.n, oc, z.h, z.w}, dt::f32, tag::nchw)));
    net_.finish();
  }
  std::vector<float> run(const std::vector<float>& in, std::size_t out_floats) {
    std::vector<float> out(out_floats);
    dnnl::stream s(cpu());
    net_.run(s, in.data(), out.data());
    return out;
  }
  std::size_t arena_bytes() const { return net_.arena_bytes(); }

 private:
  CpuRoute route_;
  NetworkBuilder net_;
  ConvBuilder convs_;
  PoolBuilder pools_;
};

/// A 3x3 "same" conv+bias+ReLU of NCHW `in` computed directly (double sums).
std::vector<float> conv3x3_relu(const FoldedConv& l, const std::vector<float>& in, const Shape& s) {
  const int oc = static_cast<int>(l.shape[0]);
  std::vector<float> y(static_cast<std::size_t>(s.n) * oc * s.h * s.w);
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < oc; ++o)
      for (int r = 0; r < s.h; ++r)
        for (int q = 0; q < s.w; ++q) {
          double sum = l.bias[static_cast<std::size_t>(o)];
          for (int c = 0; c < s.c; ++c)
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j) {
                const int rr = r + i - 1, qq = q + j - 1;
                if (rr < 0 || rr >= s.h || qq < 0 || qq >= s.w) continue;
                sum += static_cast<double>(l.weight[((static_cast<std::size_t>(o) * s.c + c) * 3 + i) * 3 + j]) *
                       in[((static_cast<std::size_t>(n) * s.c + c) * s.h + rr) * s.w + qq];
              }
          y[((static_cast<std::size_t>(n) * oc + o) * s.h + r) * s.w + q] = static_cast<float>(std::max(0.0, sum));
        }
  return y;
}

/// The toy network's two layers computed directly, NCHW.
std::vector<float> direct(const FoldedConv& l, const std::vector<float>& in, const Shape& s) {
  const int oc = static_cast<int>(l.shape[0]);
  const std::vector<float> y = conv3x3_relu(l, in, s);
  const int ph = pooled(s.h), pw = pooled(s.w);
  std::vector<float> z(static_cast<std::size_t>(s.n) * oc * ph * pw);
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < oc; ++o)
      for (int r = 0; r < ph; ++r)
        for (int q = 0; q < pw; ++q) {
          float m = -INFINITY;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
              m = std::max(m, y[((static_cast<std::size_t>(n) * oc + o) * s.h + 2 * r + i) * s.w + 2 * q + j]);
          z[((static_cast<std::size_t>(n) * oc + o) * ph + r) * pw + q] = m;
        }
  return z;
}

std::size_t out_floats(const Shape& s, int oc) {
  return static_cast<std::size_t>(s.n) * oc * pooled(s.h) * pooled(s.w);
}

TEST(OneDnnBuilder, AToySecondNetworkOfTwoLayersEqualsADirectComputation) {
  const Shape s;
  const FoldedConv l = random_layer(32, s.c, 3, 7);
  const auto in = random_floats(static_cast<std::size_t>(s.n) * s.c * s.h * s.w, 3, 1.0f);
  const auto want = direct(l, in, s);
  std::vector<std::vector<float>> outs;
  for (const bool winograd : {true, false}) {
    PackedWeightCache packed;
    ToyNetwork net(l, packed, s, 2, winograd);
    const auto got = outs.emplace_back(net.run(in, out_floats(s, 32)));
    double worst = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
    EXPECT_LT(worst, 1e-4) << "winograd " << winograd;
    EXPECT_GT(*std::max_element(got.begin(), got.end()), 0.1f);  // not all zeros: the ReLU let values through
  }
  // where the route has the Winograd kernels, they ran: their sums round apart from direct ones
  EXPECT_EQ(outs[0] != outs[1], cpu_route(Precision::fp32).winograd);
}

TEST(OneDnnBuilder, TheToyNetworksVectorsAreTheSameBitsAtEveryBatchSizeAndThreadCount) {
  const Shape s{5, 16, 13, 11};
  const FoldedConv l = random_layer(16, s.c, 3, 11);
  const auto in = random_floats(static_cast<std::size_t>(s.n) * s.c * s.h * s.w, 5, 1.0f);
  PackedWeightCache packed;
  const auto whole = ToyNetwork(l, packed, s, 1, true).run(in, out_floats(s, 16));
  const std::size_t per_in = in.size() / s.n, per_out = whole.size() / s.n;
  for (const int threads : {1, 2, 3})
    for (const int batch : {1, 2, 5}) {
      const Shape b{batch, s.c, s.h, s.w};
      ToyNetwork net(l, packed, b, threads, true);
      for (int first = 0; first + batch <= s.n; first += batch) {
        const std::vector<float> part(in.begin() + static_cast<std::ptrdiff_t>(first * per_in),
                                      in.begin() + static_cast<std::ptrdiff_t>((first + batch) * per_in));
        const auto got = net.run(part, per_out * static_cast<std::size_t>(batch));
        EXPECT_TRUE(std::equal(got.begin(), got.end(), whole.begin() + static_cast<std::ptrdiff_t>(first * per_out)))
            << "batch " << batch << ", threads " << threads << ", first image " << first;
      }
    }
}

TEST(OneDnnBuilder, TheArenaGivesTheBytesOfADeadActivationToTheNextOne) {
  // a chain of four layers: each activation is live from the op that writes it to the one that
  // reads it, so two buffers' bytes hold all five
  const Shape s{2, 16, 9, 9};
  const FoldedConv l = random_layer(16, s.c, 3, 13);
  PackedWeightCache packed;
  const CpuRoute route = cpu_route(Precision::fp32);
  NetworkBuilder net(cpu(), s.n, 1, ActType{dt::f32, format_of(route.f32_layout)});
  ConvBuilder convs(net, packed, route, "chain");
  const memory in = net.input(memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::nchw));
  Act x = net.new_act(s.c, s.h, s.w);
  net.add_reorder(in, x.mem);
  for (int i = 0; i < 4; ++i) {
    const Act y = net.new_act(s.c, s.h, s.w);
    convs.conv_into("chain.conv", l, x.mem, y.mem, ConvGeometry{1, 1, 1});
    x = y;
  }
  net.add_reorder(x.mem, net.output(memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::nchw)));
  net.finish();
  const std::size_t one = (net.act_desc(s.c, s.h, s.w).get_size() + kAlign - 1) / kAlign * kAlign;
  EXPECT_EQ(net.arena_bytes(), 2 * one);
  // and the chain computes what it says: four layers of the same weights
  std::vector<float> a = random_floats(static_cast<std::size_t>(s.n) * s.c * s.h * s.w, 17, 1.0f), out(a.size());
  dnnl::stream st(cpu());
  net.run(st, a.data(), out.data());
  std::vector<float> want = a;
  for (int i = 0; i < 4; ++i) want = conv3x3_relu(l, want, s);
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << i;
}

TEST(OneDnnBuilder, NetworksOfOneCacheShareTheirPackedWeights) {
  const Shape s;
  const FoldedConv l = random_layer(16, s.c, 3, 19);
  PackedWeightCache packed;
  const auto before = onednn_counters().weight_packs;
  ToyNetwork a(l, packed, s, 1, true);
  const auto after_one = onednn_counters().weight_packs;
  ToyNetwork b(l, packed, s, 2, true);
  EXPECT_EQ(after_one - before, 1u);                     // the first network packs its layer
  EXPECT_EQ(onednn_counters().weight_packs, after_one);  // the second takes that copy
  PackedWeightCache other;
  ToyNetwork c(l, other, s, 1, true);
  EXPECT_EQ(onednn_counters().weight_packs, after_one + 1);  // another cache packs its own
}

TEST(OneDnnBuilder, AQuantizationPointWithoutARangeIsAnErrorNamingItAndTheFile) {
  OneDnnOptions opt;
  opt.int8_ranges = std::make_shared<const std::map<std::string, float>>(std::map<std::string, float>{{"a", 51.0f}});
  const QuantPoints points(opt, "model.pt");
  EXPECT_FLOAT_EQ(points.step("a"), 51.0f / 255.0f);
  try {
    points.step("toy.conv");
    FAIL() << "no error";
  } catch (const ReplicaError& e) {
    EXPECT_NE(std::string(e.what()).find("model.pt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("toy.conv"), std::string::npos) << e.what();
  }
  EXPECT_THROW(QuantPoints(OneDnnOptions{}, "m.pt").step("a"), ReplicaError);  // no calibration at all
}

}  // namespace
