// CMMD (include/vecbench/fid/cmmd.hpp) against its definition written out pair by pair in long
// double; tests/py/cmmd_reference.py checks it against the reference's formula in NumPy and
// cmmd-pytorch's in PyTorch.
#ifdef VECBENCH_TEST_FID
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/fid/cmmd.hpp"
#include "vecbench/testing/temp_dir.hpp"

namespace vecbench {
namespace cmmd_test {

/// n unit vectors of `dim` values around a direction shifted by `shift` (the encoder L2-normalizes).
FeatureSet unit_rows(std::size_t n, int dim, std::uint32_t seed, float shift) {
  FeatureSet f;
  f.n = n;
  f.dim = dim;
  f.origin = "set" + std::to_string(seed);
  std::mt19937 g(seed);
  std::normal_distribution<float> z(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<float> v(static_cast<std::size_t>(dim));
    double s = 0.0;
    for (int k = 0; k < dim; ++k) v[k] = z(g) + (k == 0 ? shift : 0.0f), s += static_cast<double>(v[k]) * v[k];
    for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
    f.x.insert(f.x.end(), v.begin(), v.end());
  }
  return f;
}

/// The definition: scale x (mean k(a, a') + mean k(b, b') - 2 mean k(a, b)) over every pair,
/// diagonals included, of the rows `ra` of a and `rb` of b.
double direct(const FeatureSet& a, const std::vector<std::size_t>& ra, const FeatureSet& b,
              const std::vector<std::size_t>& rb, double sigma = 10.0, double scale = 1000.0) {
  const auto mean_k = [&](const FeatureSet& x, const std::vector<std::size_t>& rx, const FeatureSet& y,
                          const std::vector<std::size_t>& ry) {
    long double s = 0.0L;
    for (std::size_t i : rx)
      for (std::size_t j : ry) {
        long double d2 = 0.0L;
        for (int k = 0; k < x.dim; ++k) {
          const long double d = static_cast<long double>(x.x[i * x.dim + k]) - y.x[j * y.dim + k];
          d2 += d * d;
        }
        s += std::expm1(-d2 / (2.0L * sigma * sigma));
      }
    return static_cast<double>(s / (static_cast<long double>(rx.size()) * ry.size()));
  };
  return scale * (mean_k(a, ra, a, ra) + mean_k(b, rb, b, rb) - 2.0 * mean_k(a, ra, b, rb));
}

std::vector<std::size_t> first(std::size_t n) {
  std::vector<std::size_t> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = i;
  return r;
}

TEST(Cmmd, EqualsTheDefinitionForAnyBlockAndTheSameBitsForAnyThreadCount) {
  const FeatureSet a = unit_rows(53, 24, 1, 0.0f), b = unit_rows(38, 24, 2, 1.5f);
  const double want = direct(a, first(a.n), b, first(b.n));
  ASSERT_GT(want, 1e-3);  // sets that differ: a difference of means, not rounding
  CmmdOptions o;
  o.block = 1024;
  o.threads = 1;
  const CmmdResult one = cmmd(a, b, o);
  EXPECT_NEAR(one.value, want, 1e-12 * 1000);
  EXPECT_EQ(one.sigma, 10.0);
  EXPECT_EQ(one.scale, 1000.0);
  EXPECT_EQ(one.used_a, a.n);
  EXPECT_EQ(one.used_b, b.n);
  for (std::size_t block : {1, 7, 16, 53}) {  // edges inside and at the sets' ends, a diagonal block of 1
    o.block = block;
    o.threads = 1;
    const double v1 = cmmd(a, b, o).value;
    EXPECT_NEAR(v1, want, 1e-12 * 1000) << "block " << block;
    for (int threads : {2, 3, 8}) {
      o.threads = threads;
      const double vt = cmmd(a, b, o).value;
      EXPECT_EQ(std::memcmp(&vt, &v1, sizeof vt), 0) << "block " << block << ", " << threads << " threads";
    }
  }
  EXPECT_NEAR(cmmd(b, a).value, one.value, 1e-12);  // symmetric
  EXPECT_NEAR(cmmd(a, a).value, 0.0, 1e-12);        // a set against itself
}

TEST(Cmmd, SigmaAndScaleAreTheKernels) {
  const FeatureSet a = unit_rows(20, 8, 3, 0.0f), b = unit_rows(25, 8, 4, 2.0f);
  CmmdOptions o;
  o.sigma = 0.5;
  o.scale = 1.0;
  EXPECT_NEAR(cmmd(a, b, o).value, direct(a, first(a.n), b, first(b.n), 0.5, 1.0), 1e-13);
  o.sigma = 0.0;
  EXPECT_THROW(cmmd(a, b, o), ConfigError);
}

TEST(Cmmd, ABatchLeavesOutTheRowsPastTheLastFullBatchInSortedNameOrder) {
  FeatureSet a = unit_rows(70, 16, 5, 0.0f), b = unit_rows(45, 16, 6, 1.0f);
  // a store's rows: in the order they were written; the reference reads its files sorted
  for (std::size_t i = 0; i < a.n; ++i) a.names.push_back("img" + std::to_string((i * 37) % a.n + 100) + ".png");
  CmmdOptions o;
  o.batch = 32;
  const CmmdResult r = cmmd(a, b, o);
  EXPECT_EQ(r.used_a, 64u);
  EXPECT_EQ(r.used_b, 32u);  // a matrix's rows as they are: the first 32
  EXPECT_EQ(r.batch, 32u);
  std::vector<std::size_t> sorted = first(a.n);
  std::sort(sorted.begin(), sorted.end(), [&](std::size_t i, std::size_t j) { return a.names[i] < a.names[j]; });
  sorted.resize(64);
  EXPECT_NEAR(r.value, direct(a, sorted, b, first(32)), 1e-9);
  EXPECT_GT(std::fabs(r.value - direct(a, first(64), b, first(32))), 1e-6);  // not the first 64 written
  o.batch = 46;                                                              // b has no full batch
  try {
    cmmd(a, b, o);
    FAIL() << "no full batch of b";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set6 holds 45 embeddings, no full batch of 46"), std::string::npos)
        << e.what();
  }
}

TEST(Cmmd, SidesOfOtherWidthsAreRefusedByName) {
  const FeatureSet a = unit_rows(5, 8, 7, 0.0f), b = unit_rows(5, 9, 8, 0.0f);
  try {
    cmmd(a, b);
    FAIL() << "widths differ";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set7 has embeddings of 8 values, set8 of 9"), std::string::npos) << e.what();
  }
}

TEST(Cmmd, EachSidesOwnTermIsKeptByContentAndReadBackAsTheSameBits) {
  const testing::ScopedTempDir dir("cmmd_terms");
  const CmmdTermCache cache(dir.path / "terms");
  const FeatureSet a = unit_rows(70, 12, 31, 0.4f), b = unit_rows(90, 12, 32, 0.0f);
  CmmdOptions o;
  o.block = 16;
  const CmmdResult plain = cmmd(a, b, o);
  const CmmdResult first = cmmd(a, b, o, &cache);
  EXPECT_FALSE(first.aa_from_cache || first.bb_from_cache);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path / "terms"), fs::directory_iterator()), 2);
  const CmmdResult again = cmmd(a, b, o, &cache);
  EXPECT_TRUE(again.aa_from_cache && again.bb_from_cache);
  for (const CmmdResult* r : {&first, &again}) {  // the same bits as without a cache
    EXPECT_EQ(r->value, plain.value);
    EXPECT_EQ(r->mean_bb_minus_1, plain.mean_bb_minus_1);
  }
  // the sides swapped: each term found under its own content
  const CmmdResult swapped = cmmd(b, a, o, &cache);
  EXPECT_TRUE(swapped.aa_from_cache && swapped.bb_from_cache);
  EXPECT_EQ(swapped.mean_aa_minus_1, plain.mean_bb_minus_1);
  // what the term is computed from changes its key: one value, sigma, the block, a batch
  FeatureSet changed = b;
  changed.x[5] = std::nextafter(changed.x[5], 1.0f);
  EXPECT_FALSE(cmmd(a, changed, o, &cache).bb_from_cache);
  CmmdOptions other = o;
  other.sigma = 9.0;
  EXPECT_FALSE(cmmd(a, b, other, &cache).bb_from_cache);
  other = o;
  other.block = 32;
  EXPECT_FALSE(cmmd(a, b, other, &cache).bb_from_cache);
  other = o;
  other.batch = 32;
  EXPECT_FALSE(cmmd(a, b, other, &cache).bb_from_cache);
  other.threads = 1;  // the thread count does not change the bits, nor the key
  EXPECT_TRUE(cmmd(a, b, other, &cache).bb_from_cache);
}

TEST(Cmmd, ADamagedTermFileIsComputedAgainAndAPlantedOneIsWhatIsRead) {
  const testing::ScopedTempDir dir("cmmd_terms_bad");
  const CmmdTermCache cache(dir.path);
  const FeatureSet a = unit_rows(40, 8, 41, 0.3f), b = unit_rows(50, 8, 42, 0.0f);
  const CmmdResult plain = cmmd(a, b);
  cmmd(a, b, {}, &cache);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir.path)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 2u);
  const auto text = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // damage: a digit of the value changed (its check fails), a file cut short (not JSON)
  std::string t = text(files[0]);
  const std::size_t at = t.find("0x1.");
  ASSERT_NE(at, std::string::npos) << t;
  t[at + 4] = t[at + 4] == '1' ? '2' : '1';
  atomic_write(files[0], t);
  atomic_write(files[1], text(files[1]).substr(0, 20));
  const CmmdResult redone = cmmd(a, b, {}, &cache);
  EXPECT_FALSE(redone.aa_from_cache || redone.bb_from_cache);
  EXPECT_EQ(redone.value, plain.value);
  EXPECT_TRUE(cmmd(a, b, {}, &cache).bb_from_cache);  // kept again, sound
  // a file another program made, sound by its own check: read as it is (the cache is trusted
  // as the user's own folder; what it holds is what CMMD uses)
  ASSERT_TRUE(cache.keep("abc", 0.25));
  EXPECT_EQ(cache.find("abc"), 0.25);
  EXPECT_FALSE(cache.find("abd").has_value());
  fs::copy_file(cache.file_of("abc"), cache.file_of("abd"));  // another key's file under this key
  EXPECT_FALSE(cache.find("abd").has_value());
}

}  // namespace cmmd_test
}  // namespace vecbench
#endif
