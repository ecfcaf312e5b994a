// Blocks of float64 squared Euclidean distances between stored float32 rows, for the metrics that
// never hold an N x N matrix (CMMD's kernel sums in cmmd.cpp, the k-NN radii in metrics.cpp): the
// rows widened to float64 (exact), their squared norms, and |x|^2 + |y|^2 - 2 x.y by one dgemm.
// Internal to src/fid.
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "vecbench/fid/fid.hpp"

namespace vecbench::detail {

/// The squared L2 norm of the d floats at `x`, summed in float64 in index order.
inline double squared_norm(const float* x, std::size_t d) {
  double s = 0.0;
  for (std::size_t k = 0; k < d; ++k) s += static_cast<double>(x[k]) * x[k];
  return s;
}

/// The squared norm of each of `f`'s rows, or of the rows `order` lists, in that order.
inline std::vector<double> squared_norms(const FeatureSet& f, const std::vector<std::size_t>* order = nullptr) {
  const std::size_t n = order ? order->size() : f.n, d = f.dim;
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = squared_norm(f.x.data() + (order ? (*order)[i] : i) * d, d);
  return out;
}

/// Rows [r0, r1) of `f` (positions in `order` where it is given) as float64, row-major, into `out`.
inline void rows_f64(const FeatureSet& f, std::size_t r0, std::size_t r1, std::vector<double>& out,
                     const std::vector<std::size_t>* order = nullptr) {
  const std::size_t d = f.dim;
  out.resize((r1 - r0) * d);
  for (std::size_t i = r0; i < r1; ++i) {
    const float* x = f.x.data() + (order ? (*order)[i] : i) * d;
    std::copy(x, x + d, out.begin() + static_cast<std::ptrdiff_t>((i - r0) * d));
  }
}

/// g[i * cols + j] = max(0, (-2 x_i.y_j + nx[i]) + ny[j]) for the float64 rows `x` (rows x d) and
/// `y` (cols x d) and their squared norms: one dgemm, then the norms added in that order.
inline void squared_distances(const std::vector<double>& x, const double* nx, std::size_t rows,
                              const std::vector<double>& y, const double* ny, std::size_t cols, int d,
                              std::vector<double>& g) {
  g.resize(rows * cols);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(cols), d, -2.0,
              x.data(), d, y.data(), d, 0.0, g.data(), static_cast<int>(cols));
  for (std::size_t i = 0; i < rows; ++i) {
    double* gi = g.data() + i * cols;
    for (std::size_t j = 0; j < cols; ++j) gi[j] = std::max(0.0, gi[j] + nx[i] + ny[j]);
  }
}

}  // namespace vecbench::detail
