// torch.cdist as torch 1.13 computes it on the CPU (include/vecbench/fid/torch_cdist.hpp). Built
// with -ffp-contract=off (vecbench_core): every float operation rounds where ATen's does, and the
// one fused multiply-add is std::fmaf.
#include "vecbench/fid/torch_cdist.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace vecbench::torch_cpu {
namespace {

constexpr std::size_t kLanes = 8;  // Vectorized<float> under AVX2, the capability ATen 1.13 picks

/// W float lanes added lane by lane (one Vectorized<float> when W = kLanes, a scalar when 1).
template <std::size_t W>
using Acc = std::array<float, W>;

template <std::size_t W>
void add(Acc<W>& a, const float* v) {
  for (std::size_t l = 0; l < W; ++l) a[l] = a[l] + v[l];
}
template <std::size_t W>
void add(Acc<W>& a, const Acc<W>& b) {
  add<W>(a, b.data());
}

/// c10's CeilLog2.
int ceil_log2(std::uint64_t x) {
  if (x <= 2) return 1;
  int bits = 0;
  for (std::uint64_t v = x - 1; v; v >>= 1) ++bits;
  return bits;
}

/// ATen's multi_row_sum with 4 rows: `size` steps of 4 W-lane loads (step i, row k at
/// s + (4 i + k) W), into accumulators of 4 levels that carry up every 2^level_power steps.
template <std::size_t W>
std::array<Acc<W>, 4> multi_row_sum(const float* s, std::uint64_t size) {
  constexpr int kLevels = 4;
  const int level_power = std::max(4, ceil_log2(size) / kLevels);
  const std::uint64_t step = std::uint64_t{1} << level_power, mask = step - 1;
  std::array<std::array<Acc<W>, 4>, kLevels> acc{};
  std::uint64_t i = 0;
  while (i + step <= size) {
    for (std::uint64_t j = 0; j < step; ++j, ++i)
      for (std::size_t k = 0; k < 4; ++k) add<W>(acc[0][k], s + (4 * i + k) * W);
    for (int j = 1; j < kLevels; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        add<W>(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Acc<W>{};
      }
      if ((i & (mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (std::size_t k = 0; k < 4; ++k) add<W>(acc[0][k], s + (4 * i + k) * W);
  for (int j = 1; j < kLevels; ++j)
    for (std::size_t k = 0; k < 4; ++k) add<W>(acc[0][k], acc[j][k]);
  return acc[0];
}

/// ATen's row_sum: `n` W-lane loads, four at a time, the rest into the first, then the four summed.
template <std::size_t W>
Acc<W> row_sum(const float* s, std::uint64_t n) {
  const std::uint64_t ilp = n / 4;
  std::array<Acc<W>, 4> p = multi_row_sum<W>(s, ilp);
  for (std::uint64_t i = ilp * 4; i < n; ++i) add<W>(p[0], s + i * W);
  for (std::size_t k = 1; k < 4; ++k) add<W>(p[0], p[k]);
  return p[0];
}

/// The direct kernel's distance of two rows (both sets of at most 25 rows).
float direct_distance(const float* a, const float* b, std::size_t d) {
  const std::size_t cut = d - d % 4;
  float agg = 0.0f;
  for (std::size_t k = 0; k < cut; ++k) {
    const float t = std::fabs(a[k] - b[k]);
    const float sq = t * t;
    agg = agg + sq;
  }
  for (std::size_t k = cut; k < d; ++k) {
    const float t = std::fabs(a[k] - b[k]);
    agg = std::fmaf(t, t, agg);
  }
  return std::sqrt(agg);
}

}  // namespace

float row_sq_norm(const float* x, std::size_t d) {
  std::vector<float> s(d);
  for (std::size_t k = 0; k < d; ++k) s[k] = x[k] * x[k];
  if (d < kLanes) return row_sum<1>(s.data(), d)[0];
  const std::size_t vectors = d / kLanes;
  const Acc<kLanes> v = row_sum<kLanes>(s.data(), vectors);
  float sum = 0.0f;
  for (std::size_t k = vectors * kLanes; k < d; ++k) sum = sum + s[k];
  for (std::size_t l = 0; l < kLanes; ++l) sum = sum + v[l];
  return sum;
}

void cdist(const float* x1, const float* n1, std::size_t r1, const float* x2, const float* n2, std::size_t r2,
           std::size_t d, std::vector<float>& out) {
  out.resize(r1 * r2);
  if (r1 <= 25 && r2 <= 25) {
    for (std::size_t i = 0; i < r1; ++i)
      for (std::size_t j = 0; j < r2; ++j) out[i * r2 + j] = direct_distance(x1 + i * d, x2 + j * d, d);
    return;
  }
  const std::size_t w = d + 2;
  std::vector<float> a(r1 * w), b(r2 * w);
  for (std::size_t i = 0; i < r1; ++i) {
    float* row = a.data() + i * w;
    for (std::size_t k = 0; k < d; ++k) row[k] = -2.0f * x1[i * d + k];
    row[d] = n1[i];
    row[d + 1] = 1.0f;
  }
  for (std::size_t j = 0; j < r2; ++j) {
    float* row = b.data() + j * w;
    std::copy_n(x2 + j * d, d, row);
    row[d] = 1.0f;
    row[d + 1] = n2[j];
  }
  // torch's mm of [r1, w] by the transposed view of [r2, w]: sgemm('t', 'n', r2, r1, w) column-major
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r1), static_cast<int>(r2), static_cast<int>(w),
              1.0f, a.data(), static_cast<int>(w), b.data(), static_cast<int>(w), 0.0f, out.data(),
              static_cast<int>(r2));
  for (float& v : out) v = std::sqrt(std::max(v, 1e-30f));
}

}  // namespace vecbench::torch_cpu
