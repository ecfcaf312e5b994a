// Output sanity: a vector is checked before it is stored. Inception-v3's pool_3 features are the
// averages of ReLU outputs: finite and non-negative, and far below 1e4 for any weights vecbench
// runs (trained ones give 0..~30, the synthetic ones less); NaN, infinities, negative or huge
// values come from a broken model or weights file (a corrupted weights cache gave ~1e19).
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

namespace vecbench {

constexpr double kMaxPlausibleFeature = 1e4;    ///< larger pool_3 values mean broken weights
constexpr double kMinPlausibleFeature = -1e-3;  ///< pool_3 is >= 0 (ReLU, then an average); rounding room

/// "" when `f` (dim floats) is a plausible pool_3 vector; else what is wrong with it, e.g.
/// "NaN at element 17" or "value 3.1e+19 at element 5 (plausible: 0 to 1e+04)". `non_negative`
/// false: an encoder whose features may be negative (DINOv2's CLS token after a layer norm): only
/// NaN, infinities and magnitudes over 1e4 are implausible.
inline std::string implausible_features(const float* f, int dim, bool non_negative = true) {
  const double lo = non_negative ? kMinPlausibleFeature : -kMaxPlausibleFeature;
  char b[160];
  for (int i = 0; i < dim; ++i) {
    const double x = f[i];
    if (std::isnan(x)) {
      std::snprintf(b, sizeof b, "NaN at element %d", i);
      return b;
    }
    if (!std::isfinite(x) || x > kMaxPlausibleFeature || x < lo) {
      std::snprintf(b, sizeof b, "value %.3g at element %d (plausible: %s to %.0e)", x, i,
                    non_negative ? "0" : "-1e+04", kMaxPlausibleFeature);
      return b;
    }
  }
  return "";
}

}  // namespace vecbench
