// Relative L2 distance between two feature vectors, the tolerance measure of the feature tests.
#pragma once
#include <cmath>
#include <cstddef>

namespace vecbench::testing {

/// ||a - b|| / ||b|| over n floats, accumulated in double.
inline double rel_l2(const float* a, const float* b, std::size_t n) {
  double d = 0, r = 0;
  for (std::size_t i = 0; i < n; ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    r += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(d / r);
}

}  // namespace vecbench::testing
