// Mann-Whitney U test against values derived by hand (exact null distribution counts, and the
// normal-approximation formula evaluated with Python's math.erfc), plus summaries.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vecbench/core/run/stats.hpp"

namespace stats = vecbench::stats;
using vecbench::stats::mann_whitney_min_p;
using vecbench::stats::mann_whitney_u;

TEST(StatsMannWhitney, ExactNullDistributionCounts) {
  // m = n = 3: the 20 orderings give U = 0..9 with these multiplicities (enumerated by hand).
  const std::vector<double> expected = {1, 1, 2, 3, 3, 3, 3, 2, 1, 1};
  EXPECT_EQ(vecbench::stats::detail::mann_whitney_counts(3, 3), expected);
  // Total over U is C(m+n, m).
  double total = 0;
  for (double c : vecbench::stats::detail::mann_whitney_counts(5, 4)) total += c;
  EXPECT_EQ(total, 126.0);
}

TEST(StatsMannWhitney, ExactSmallSamples) {
  // Fully separated 3 vs 3: P(U >= 9) = 1/20, two-sided 0.1.
  auto r = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);
  // Interleaved: U_a = 3, U_b = 6, P(U >= 6) = (3+2+1+1)/20 = 7/20, two-sided 0.7.
  r = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(r.u, 3.0);
  EXPECT_NEAR(r.p_value, 0.7, 1e-12);
  // Fully separated 4 vs 4 and 5 vs 5: 2 / C(8,4) and 2 / C(10,5).
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4}, {5, 6, 7, 8}).p_value, 2.0 / 70.0, 1e-12);
  EXPECT_NEAR(mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}).p_value, 2.0 / 252.0, 1e-12);
  // Identical-in-distribution samples never go above 1.
  EXPECT_DOUBLE_EQ(mann_whitney_u({1, 4}, {2, 3}).p_value, 1.0);
}

TEST(StatsMannWhitney, NormalApproximationWithTies) {
  // Pooled 1,2,2,2,3,3,4,5: mid-ranks give R_a = 12.5, U_a = 2.5, U = 13.5, mu = 8,
  // tie term = (27-3) + (8-2) = 30, sigma = sqrt(16/12 * (9 - 30/56)) = 3.35942...,
  // z = (13.5 - 8 - 0.5) / sigma = 1.48835..., p = erfc(z / sqrt 2).
  const auto r = mann_whitney_u({1, 2, 2, 3}, {2, 3, 4, 5});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 2.5);
  EXPECT_NEAR(r.p_value, 0.13665824773814753, 1e-12);
}

TEST(StatsMannWhitney, NormalApproximationForLargeSamples) {
  // 10 vs 10 separated, no ties: U = 100, mu = 50, sigma = sqrt(175), z = 49.5 / sigma.
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) a.push_back(i), b.push_back(100 + i);
  const auto r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_NEAR(r.p_value, 0.0001826717911095504, 1e-15);
}

TEST(StatsMannWhitney, SymmetryAndEdgeCases) {
  const std::vector<double> a = {3.1, 2.7, 5.5, 4.0, 3.3}, b = {4.4, 6.1, 5.0, 4.9};
  const auto ab = mann_whitney_u(a, b), ba = mann_whitney_u(b, a);
  EXPECT_DOUBLE_EQ(ab.p_value, ba.p_value);
  EXPECT_DOUBLE_EQ(ab.u + ba.u, 20.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u({1, 1, 1}, {1, 1, 1}).p_value, 1.0);  // all tied
  EXPECT_TRUE(std::isnan(mann_whitney_u({}, {1, 2}).p_value));
}

TEST(StatsMannWhitney, SmallestAttainablePValue) {
  EXPECT_NEAR(mann_whitney_min_p(3, 3), 0.1, 1e-12);  // 3 reps can never reach p < 0.05
  EXPECT_NEAR(mann_whitney_min_p(4, 4), 2.0 / 70.0, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(2, 5), 2.0 / 21.0, 1e-12);
}

TEST(StatsSummary, MedianAndSpread) {
  const auto s = vecbench::stats::summarize({10.0, 10.1, 9.9, 10.2, 9.8});
  EXPECT_DOUBLE_EQ(s.median, 10.0);
  EXPECT_DOUBLE_EQ(s.min, 9.8);
  EXPECT_DOUBLE_EQ(s.max, 10.2);
  EXPECT_NEAR(s.rel_spread, 0.04, 1e-12);
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(vecbench::stats::summarize({}).count, 0u);
  EXPECT_TRUE(std::isnan(vecbench::stats::summarize({}).median));
}

// The median's confidence interval from order statistics, against the binomial coverage worked
// by hand: [x_(j), x_(n+1-j)] covers the median with 1 - 2 P(Bin(n, 1/2) < j).
TEST(StatsMedianCi, OrderStatisticsAndTheirCoverage) {
  EXPECT_TRUE(std::isnan(stats::median_ci({5.0}).rel_half)) << "one value has no interval";
  const auto three = stats::median_ci({12.0, 10.0, 11.0});  // whole range: 1 - 2/8
  EXPECT_DOUBLE_EQ(three.low, 10.0);
  EXPECT_DOUBLE_EQ(three.high, 12.0);
  EXPECT_DOUBLE_EQ(three.level, 0.75);
  EXPECT_DOUBLE_EQ(three.rel_half, 1.0 / 11.0);
  EXPECT_DOUBLE_EQ(stats::median_ci({1, 2, 3, 4, 5}).level, 1.0 - 2.0 / 32.0);
  // 8 values: j = 2 would cover 1 - 2 * 9/256 = 93.0 % < 95 %, so still the whole range.
  const auto eight = stats::median_ci({8, 1, 7, 2, 6, 3, 5, 4});
  EXPECT_DOUBLE_EQ(eight.low, 1.0);
  EXPECT_DOUBLE_EQ(eight.level, 1.0 - 2.0 / 256.0);
  // 9 values: j = 2 covers 1 - 2 * 10/512 = 96.1 %: one outlier on each side is dropped.
  const auto nine = stats::median_ci({100, 2, 3, 4, 5, 6, 7, 8, -50});
  EXPECT_DOUBLE_EQ(nine.low, 2.0);
  EXPECT_DOUBLE_EQ(nine.high, 8.0);
  EXPECT_DOUBLE_EQ(nine.level, 1.0 - 20.0 / 512.0);
  EXPECT_DOUBLE_EQ(nine.rel_half, 3.0 / 5.0);
  // 12 values: j = 3 (1 - 2 * 79/4096 = 96.1 %).
  std::vector<double> twelve;
  for (int i = 1; i <= 12; ++i) twelve.push_back(i);
  EXPECT_DOUBLE_EQ(stats::median_ci(twelve).low, 3.0);
  EXPECT_DOUBLE_EQ(stats::median_ci(twelve).level, 1.0 - 2.0 * 79.0 / 4096.0);
  EXPECT_DOUBLE_EQ(stats::median_ci({1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.99).low, 1.0) << "a higher level widens it";
}
