// Robust summaries of repeated measurements: median, percentiles, spread.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vecbench::stats {

/// Linear-interpolated percentile (q in [0,100]) of `v`; NaN when `v` is empty.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  if (v.size() == 1) return v[0];
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

inline double median(const std::vector<double>& v) { return percentile(v, 50.0); }

/// Median, extremes and relative spread ((max-min)/median) of a sample set.
struct Summary {
  double median = std::nan("");
  double min = std::nan("");
  double max = std::nan("");
  double rel_spread = std::nan("");  ///< (max - min) / median; 0 for one sample
  std::size_t count = 0;
};

inline Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.count = v.size();
  if (v.empty()) return s;
  s.median = median(v);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.rel_spread = s.median != 0.0 ? (s.max - s.min) / std::fabs(s.median) : 0.0;
  return s;
}

/// A distribution-free confidence interval of the median: [x_(j), x_(n+1-j)] of the sorted
/// values, whose coverage is 1 - 2 P(Binomial(n, 1/2) < j). `j` is the largest index whose
/// coverage reaches `level`; with fewer than 6 values no pair reaches 95 % and the interval is
/// the whole range at its own, lower, coverage (`level` says which: 75 % for 3 values).
struct MedianCi {
  double low = std::nan("");
  double high = std::nan("");
  double level = std::nan("");     ///< the coverage actually reached, in (0, 1)
  double rel_half = std::nan("");  ///< (high - low) / 2 / |median|: nvbench's stdrel, for the median
};

inline MedianCi median_ci(std::vector<double> v, double level = 0.95) {
  MedianCi ci;
  const std::size_t n = v.size();
  if (n < 2) return ci;
  std::sort(v.begin(), v.end());
  // cdf[k] = P(Binomial(n, 1/2) <= k), from the pmf by the ratio C(n, k+1) / C(n, k).
  std::vector<double> cdf(n + 1);
  double pmf = std::pow(0.5, static_cast<double>(n)), acc = 0.0;
  for (std::size_t k = 0; k <= n; ++k) {
    acc += pmf;
    cdf[k] = acc;
    pmf *= static_cast<double>(n - k) / static_cast<double>(k + 1);
  }
  std::size_t j = 1;  // 1-based: the interval [x_(j), x_(n+1-j)]
  while (j + 1 <= n / 2 && 1.0 - 2.0 * cdf[j] >= level) ++j;
  ci.low = v[j - 1];
  ci.high = v[n - j];
  ci.level = 1.0 - 2.0 * cdf[j - 1];
  const double med = median(v);
  ci.rel_half = med != 0.0 ? (ci.high - ci.low) / 2.0 / std::fabs(med) : 0.0;
  return ci;
}

/// Result of a two-sided Mann-Whitney U (Wilcoxon rank-sum) test.
struct MannWhitney {
  double u = std::nan("");        ///< U of the first sample: pairs (a_i, b_j) with a_i > b_j, ties 1/2
  double p_value = std::nan("");  ///< two-sided p-value in [0, 1]; NaN when a sample is empty
  bool exact = false;             ///< true: exact null distribution; false: normal approximation
};

namespace detail {
/// Number of orderings of m + n distinct values giving each U = 0..m*n (exact null distribution).
inline std::vector<double> mann_whitney_counts(std::size_t m, std::size_t n) {
  std::vector<std::vector<std::vector<double>>> f(
      m + 1, std::vector<std::vector<double>>(n + 1, std::vector<double>(m * n + 1, 0.0)));
  for (std::size_t i = 0; i <= m; ++i)
    for (std::size_t j = 0; j <= n; ++j) {
      if (i == 0 || j == 0) {
        f[i][j][0] = 1.0;
        continue;
      }
      // The largest value is from `a` (it beats all j values of `b`) or from `b` (beats none).
      for (std::size_t u = 0; u <= i * j; ++u) f[i][j][u] = (u >= j ? f[i - 1][j][u - j] : 0.0) + f[i][j - 1][u];
    }
  return f[m][n];
}
}  // namespace detail

/// Two-sided Mann-Whitney U test of "a and b come from the same distribution" (values must not be
/// NaN). Same method as scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method="auto"):
/// exact null distribution when there are no ties and both samples have <= 8 values; otherwise
/// the normal approximation with tie correction and continuity correction (0.5).
inline MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return r;
  std::vector<std::pair<double, bool>> all;  // (value, belongs to a)
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& rr) { return l.first < rr.first; });
  double rank_sum_a = 0.0, tie_term = 0.0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i), mid_rank = static_cast<double>(i + 1 + j) / 2.0;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += mid_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2), dn = static_cast<double>(n);
  r.u = rank_sum_a - d1 * (d1 + 1.0) / 2.0;
  const double u_big = std::max(r.u, d1 * d2 - r.u);
  if (tie_term == 0.0 && n1 <= 8 && n2 <= 8) {
    const std::vector<double> counts = detail::mann_whitney_counts(n1, n2);
    double total = 0.0, tail = 0.0;
    const auto k0 = static_cast<std::size_t>(std::llround(u_big));
    for (std::size_t k = 0; k < counts.size(); ++k) {
      total += counts[k];
      if (k >= k0) tail += counts[k];
    }
    r.p_value = std::min(1.0, 2.0 * tail / total);
    r.exact = true;
    return r;
  }
  const double var = d1 * d2 / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
  if (var <= 0.0) {
    r.p_value = 1.0;  // every value tied
    return r;
  }
  const double z = (u_big - d1 * d2 / 2.0 - 0.5) / std::sqrt(var);
  r.p_value = std::clamp(std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);  // = 2 * P(Z > z)
  return r;
}

/// Smallest p-value mann_whitney_u can give for samples of sizes n1 and n2 (fully separated
/// samples): when it is >= alpha, no difference can ever be significant at that level.
inline double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  std::vector<double> a, b;
  for (std::size_t i = 0; i < n1; ++i) a.push_back(static_cast<double>(i));
  for (std::size_t i = 0; i < n2; ++i) b.push_back(static_cast<double>(n1 + i));
  return mann_whitney_u(a, b).p_value;
}

}  // namespace vecbench::stats
