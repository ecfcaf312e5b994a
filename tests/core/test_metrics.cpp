// The Inception Score and the k-NN metrics (include/vecbench/fid/metrics.hpp) against their
// definitions written out directly (every pair's distance, every row's softmax); the Python test
// tests/py/metrics_tools.py checks them against torch-fidelity and prdc themselves.
#ifdef VECBENCH_TEST_FID
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include "vecbench/core/base/error.hpp"
#include "vecbench/fid/metrics.hpp"
#include "vecbench/fid/torch_cdist.hpp"

namespace vecbench {
namespace {

FeatureSet random_set(std::size_t n, int dim, std::uint32_t seed, double shift = 0.0, double spread = 1.0) {
  FeatureSet f;
  f.n = n;
  f.dim = dim;
  f.origin = "set" + std::to_string(seed);
  std::mt19937 g(seed);
  std::normal_distribution<float> z(0.0f, 1.0f);
  for (std::size_t i = 0; i < n * static_cast<std::size_t>(dim); ++i)
    f.x.push_back(static_cast<float>(shift + spread * z(g)));
  return f;
}

FeatureSet from_rows(const std::vector<std::vector<float>>& rows) {
  FeatureSet f;
  f.n = rows.size();
  f.dim = static_cast<int>(rows[0].size());
  for (const auto& r : rows) f.x.insert(f.x.end(), r.begin(), r.end());
  return f;
}

double dist(const FeatureSet& a, std::size_t i, const FeatureSet& b, std::size_t j) {
  double s = 0;
  for (int k = 0; k < a.dim; ++k) {
    const double d = static_cast<double>(a.x[i * a.dim + k]) - b.x[j * b.dim + k];
    s += d * d;
  }
  return std::sqrt(s);
}

std::vector<double> brute_radii(const FeatureSet& x, int k) {
  std::vector<double> r;
  for (std::size_t i = 0; i < x.n; ++i) {
    std::vector<double> d;
    for (std::size_t j = 0; j < x.n; ++j) d.push_back(i == j ? 0.0 : dist(x, i, x, j));
    std::sort(d.begin(), d.end());
    r.push_back(d[static_cast<std::size_t>(k)]);
  }
  return r;
}

/// share of rows of `pts` within (<=, or < when strict) the ball of some row of `centres`
double brute_share(const FeatureSet& pts, const FeatureSet& centres, const std::vector<double>& radii, bool strict) {
  std::size_t in = 0;
  for (std::size_t j = 0; j < pts.n; ++j) {
    bool any = false;
    for (std::size_t i = 0; i < centres.n && !any; ++i) {
      const double d = dist(centres, i, pts, j);
      any = strict ? d < radii[i] : d <= radii[i];
    }
    in += any;
  }
  return static_cast<double>(in) / static_cast<double>(pts.n);
}

TEST(Metrics, KnnRadiiAreTheKthNeighbourDistanceForEveryBlockSize) {
  const FeatureSet x = random_set(150, 7, 1);
  const std::vector<double> want = brute_radii(x, 3);
  for (const KnnOptions o : {KnnOptions{1, 1}, KnnOptions{7, 13}, KnnOptions{64, 150}, KnnOptions{1024, 4096}}) {
    const std::vector<double> got = knn_radii(x, 3, o);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9 * want[i]) << i;
  }
}

TEST(Metrics, DuplicateRowsAreNeighboursAtDistanceZero) {
  FeatureSet x = random_set(20, 5, 2);
  for (int c = 0; c < 3; ++c)  // rows 1, 2 and 3 are copies of row 0
    std::copy_n(x.x.begin(), 5, x.x.begin() + 5 * (c + 1));
  const std::vector<double> r = knn_radii(x, 3);
  EXPECT_EQ(r[0], 0.0);
  EXPECT_EQ(r[3], 0.0);
  EXPECT_GT(r[4], 0.0);
}

TEST(Metrics, PrecisionRecallDensityCoverageFollowTheirDefinitions) {
  const FeatureSet real = random_set(120, 6, 3), gen = random_set(90, 6, 4, 0.6, 1.3);
  const NeighbourMetrics m = neighbour_metrics(gen, real, 3, 5, KnnOptions{16, 32});
  ASSERT_TRUE(m.prc && m.prdc);
  const auto r3r = brute_radii(real, 3), r3g = brute_radii(gen, 3), r5r = brute_radii(real, 5),
             r5g = brute_radii(gen, 5);
  EXPECT_DOUBLE_EQ(m.prc->precision, brute_share(gen, real, r3r, false));
  EXPECT_DOUBLE_EQ(m.prc->recall, brute_share(real, gen, r3g, false));
  EXPECT_DOUBLE_EQ(m.prdc->precision, brute_share(gen, real, r5r, true));
  EXPECT_DOUBLE_EQ(m.prdc->recall, brute_share(real, gen, r5g, true));
  double density = 0;
  std::size_t covered = 0;
  for (std::size_t j = 0; j < gen.n; ++j)
    for (std::size_t i = 0; i < real.n; ++i) density += dist(real, i, gen, j) < r5r[i];
  for (std::size_t i = 0; i < real.n; ++i) {
    double nearest = 1e300;
    for (std::size_t j = 0; j < gen.n; ++j) nearest = std::min(nearest, dist(real, i, gen, j));
    covered += nearest < r5r[i];
  }
  EXPECT_NEAR(m.prdc->density, density / 5.0 / static_cast<double>(gen.n), 1e-12);
  EXPECT_DOUBLE_EQ(m.prdc->coverage, static_cast<double>(covered) / static_cast<double>(real.n));
  // the sets overlap in part: none of these is trivially 0 or 1
  for (const double v : {m.prc->precision, m.prc->recall, m.prdc->coverage}) {
    EXPECT_GT(v, 0.05);
    EXPECT_LT(v, 0.999);
  }
  EXPECT_NEAR(m.prc->f_score, 2 * m.prc->precision * m.prc->recall / (m.prc->precision + m.prc->recall), 1e-15);
}

TEST(Metrics, APointOnTheBallsEdgeCountsForPrcButNotForPrdc) {
  // real at 0, 1, 2 (k = 1: every radius 1); the generated point 3 lies exactly on 2's ball's edge
  const FeatureSet real = from_rows({{0.f}, {1.f}, {2.f}}), gen = from_rows({{3.f}, {10.f}});
  const NeighbourMetrics m = neighbour_metrics(gen, real, 1, 1);
  EXPECT_DOUBLE_EQ(m.prc->precision, 0.5);   // torch-fidelity: dist <= radius
  EXPECT_DOUBLE_EQ(m.prdc->precision, 0.0);  // prdc: dist < radius
  EXPECT_DOUBLE_EQ(m.prdc->density, 0.0);
}

TEST(Metrics, TheSameSetOnBothSidesIsStillTwoSets) {
  // A set against itself (the same object) gives what it gives against a copy: the distances of
  // two sets, every block, whatever the block sizes (not the one set's half of its own).
  const FeatureSet x = random_set(60, 5, 7);
  FeatureSet copy = x;
  copy.origin = "copy";
  for (const KnnOptions o : {KnnOptions{8, 8}, KnnOptions{1024, 4096}}) {
    const NeighbourMetrics same = neighbour_metrics(x, x, 3, 5, o), two = neighbour_metrics(x, copy, 3, 5, o);
    ASSERT_TRUE(same.prc && same.prdc);
    EXPECT_EQ(same.prc->precision, two.prc->precision);
    EXPECT_EQ(same.prc->recall, two.prc->recall);
    EXPECT_EQ(same.prdc->density, two.prdc->density);
    EXPECT_EQ(same.prdc->coverage, two.prdc->coverage);
    EXPECT_DOUBLE_EQ(same.prdc->density, 1.0);  // each ball holds its centre and k - 1 neighbours
  }
}

namespace {
float bits_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
/// Rows whose float32 sums round differently in every order (tests/py/metrics_tools.py's values).
std::vector<float> odd_row(std::size_t d, int s, float scale = 1.0f) {
  std::vector<float> v(d);
  for (std::size_t k = 0; k < d; ++k)
    v[k] =
        static_cast<float>(static_cast<int>((k * 37 + static_cast<std::size_t>(s) * 11) % 101) - 50) * 0.0137f * scale;
  return v;
}
}  // namespace

TEST(Metrics, TorchsFloat32NormsAndDirectDistancesAreTorchsBits) {
  // x.pow(2).sum(-1) and torch.cdist of two small sets as torch 1.13 printed them: each differs
  // from the float64 sum rounded once and from a plain float32 loop.
  for (const auto& [d, seed, want] : {std::tuple<std::size_t, int, std::uint32_t>{6, 5, 0x3f724f2du},
                                      {100, 0, 0x41809c78u},
                                      {2048, 1, 0x43a3742au}}) {
    const std::vector<float> x = odd_row(d, seed);
    EXPECT_EQ(torch_cpu::row_sq_norm(x.data(), d), bits_float(want)) << d;
  }
  for (const auto& [d, seed, want] :
       {std::tuple<std::size_t, int, std::uint32_t>{7, 33, 0x3fe6e3f2u}, {10, 16, 0x3ff85af4u}}) {
    const std::vector<float> a = odd_row(d, seed), b = odd_row(d, seed + 1000, 1.7f);
    const float na = torch_cpu::row_sq_norm(a.data(), d), nb = torch_cpu::row_sq_norm(b.data(), d);
    std::vector<float> out;
    torch_cpu::cdist(a.data(), &na, 1, b.data(), &nb, 1, d, out);
    EXPECT_EQ(out[0], bits_float(want)) << d;
  }
}

TEST(Metrics, TorchFidelitysArithmeticPutsAPointOnABallsEdgeInFloat32) {
  // Two real points 4 apart (k = 1: both radii 4); the generated point g = (4097, -4) is sqrt(17)
  // from the first, outside its ball. In torch.cdist's float32 |x|^2 + |y|^2 - 2 x.y (30 generated
  // rows: its matmul form) 4097^2 rounds to 16785408 and every other term and sum is exact, so the
  // distance comes out sqrt(16) = 4: on the edge, inside (<=). 29 generated points far away.
  FeatureSet real = from_rows({{4096.f, 0.f}, {4096.f, 4.f}});
  std::vector<std::vector<float>> g = {{4097.f, -4.f}};
  for (int i = 0; i < 29; ++i) g.push_back({4096.f + 200.f + 20.f * static_cast<float>(i), 0.f});
  FeatureSet gen = from_rows(g);
  real.origin = "real";
  gen.origin = "gen";
  const NeighbourMetrics exact = neighbour_metrics(gen, real, 1, 0);
  EXPECT_EQ(exact.prc->precision, 0.0);
  EXPECT_EQ(exact.prc->recall, 1.0);
  KnnOptions tf;
  tf.prc = KnnArithmetic::torch_fidelity;
  const NeighbourMetrics t = neighbour_metrics(gen, real, 1, 1, tf);
  ASSERT_TRUE(t.prc && t.prdc);
  EXPECT_EQ(t.prc->arithmetic, KnnArithmetic::torch_fidelity);
  EXPECT_EQ(t.prc->precision, static_cast<double>(1.0f / 30.0f));  // torch's float32 mean
  EXPECT_EQ(t.prc->recall, 1.0);
  EXPECT_EQ(t.prc->boundary_generated, 1u);  // g, and said so
  EXPECT_EQ(t.prc->boundary_real, 0u);
  EXPECT_EQ(t.prdc->precision, neighbour_metrics(gen, real, 0, 1).prdc->precision);  // prdc stays exact
  // In batches of 7 both sides of every cdist call have at most 25 rows: its direct kernel, exact here.
  tf.torch_batch = 7;
  EXPECT_EQ(neighbour_metrics(gen, real, 1, 0, tf).prc->precision, 0.0);
}

TEST(Metrics, TooFewRowsForKAreRefusedNamingTheSet) {
  const FeatureSet few = random_set(3, 4, 5), many = random_set(30, 4, 6);
  try {
    neighbour_metrics(many, few, 3, 0);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set5 holds 3 vectors"), std::string::npos) << e.what();
  }
}

TEST(Metrics, NumpyPermutationIsNumpysLegacyShuffle) {
  // numpy.random.RandomState(2020).permutation(10) and RandomState(7).permutation(5), NumPy 1.24
  EXPECT_EQ(numpy_permutation(10, 2020), (std::vector<std::size_t>{2, 4, 9, 1, 5, 7, 6, 3, 8, 0}));
  EXPECT_EQ(numpy_permutation(5, 7), (std::vector<std::size_t>{0, 3, 2, 1, 4}));
  const auto p = numpy_permutation(100000, 1);
  EXPECT_EQ(std::set<std::size_t>(p.begin(), p.end()).size(), 100000u);
}

Classifier scaled_identity(int k, float scale) {
  Classifier c;
  c.classes = c.dim = k;
  c.origin = "identity";
  c.weight.assign(static_cast<std::size_t>(k) * k, 0.0f);
  for (int i = 0; i < k; ++i) c.weight[static_cast<std::size_t>(i) * k + i] = scale;
  c.bias.assign(k, 5.0f);  // the Inception Score uses the unbiased logits: the bias must not matter
  return c;
}

TEST(Metrics, InceptionScoreCountsConfidentDistinctClasses) {
  // rows one-hot over 4 classes, logits 40 x: each row sure of its class, the classes even
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 40; ++i) {
    std::vector<float> r(4, 0.0f);
    r[i % 4] = 1.0f;
    rows.push_back(r);
  }
  const FeatureSet f = from_rows(rows);
  const InceptionScore confident = inception_score(f, scaled_identity(4, 40.0f), 1, false);
  EXPECT_NEAR(confident.mean, 4.0, 1e-9);
  EXPECT_EQ(confident.std, 0.0);
  const InceptionScore unsure = inception_score(f, scaled_identity(4, 0.0f), 4, true);
  EXPECT_NEAR(unsure.mean, 1.0, 1e-12);  // uniform p: KL 0 in every split
}

TEST(Metrics, InceptionScoreEqualsItsDefinitionPerSplit) {
  const FeatureSet f = random_set(23, 6, 8);
  Classifier c;
  c.classes = 5;
  c.dim = 6;
  std::mt19937 g(9);
  std::normal_distribution<float> z(0.f, 0.7f);
  for (int i = 0; i < 30; ++i) c.weight.push_back(z(g));
  c.bias.assign(5, 0.f);
  const int splits = 3;
  const InceptionScore got = inception_score(f, c, splits, true, 2020);
  const std::vector<std::size_t> order = numpy_permutation(f.n, 2020);
  std::vector<double> scores;
  for (int s = 0; s < splits; ++s) {
    const std::size_t b = s * f.n / splits, e = (s + 1) * f.n / splits;
    std::vector<std::vector<double>> p;
    std::vector<double> q(5, 0.0);
    for (std::size_t r = b; r < e; ++r) {
      std::vector<double> l(5, 0.0);
      double z_sum = 0;
      for (int k = 0; k < 5; ++k) {
        for (int d = 0; d < 6; ++d) l[k] += static_cast<double>(c.weight[k * 6 + d]) * f.x[order[r] * 6 + d];
        z_sum += std::exp(l[k]);
      }
      for (int k = 0; k < 5; ++k) l[k] = std::exp(l[k]) / z_sum, q[k] += l[k] / static_cast<double>(e - b);
      p.push_back(l);
    }
    double kl = 0;
    for (const auto& row : p)
      for (int k = 0; k < 5; ++k) kl += row[k] * (std::log(row[k]) - std::log(q[k]));
    scores.push_back(std::exp(kl / static_cast<double>(e - b)));
  }
  double mean = (scores[0] + scores[1] + scores[2]) / 3, var = 0;
  for (const double v : scores) var += (v - mean) * (v - mean) / 3;
  EXPECT_NEAR(got.mean, mean, 1e-12 * mean);
  EXPECT_NEAR(got.std, std::sqrt(var), 1e-12);
  EXPECT_GT(got.mean, 1.01);
}

TEST(Metrics, InceptionScoreRefusesAClassifierOfAnotherWidth) {
  EXPECT_THROW(inception_score(random_set(20, 6, 1), scaled_identity(4, 1.0f), 2), ConfigError);
  EXPECT_THROW(inception_score(random_set(3, 4, 1), scaled_identity(4, 1.0f), 10), ConfigError);
}

}  // namespace
}  // namespace vecbench
#endif
