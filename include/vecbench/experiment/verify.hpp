// The verifier: how far a run's features are from the sequential fp32 reference, and whether
// that is within what its engine and precision may show (else the run is `failed`).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/core/run/sink.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// Max absolute and relative (L2 per image) differences of `got` from `ref` over the inputs both
/// have.
inline Verification verify_features(const MemorySink& got, const MemorySink& ref) {
  Verification v;
  v.reference = kSequentialStrategy;
  for (std::size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    const auto& a = got.features(i);
    const auto& b = ref.features(i);
    if (a.empty() || b.empty() || a.size() != b.size()) continue;
    double d2 = 0, b2 = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = static_cast<double>(a[k]) - b[k];
      v.max_abs_diff = std::max(v.max_abs_diff, std::fabs(d));
      d2 += d * d;
      b2 += static_cast<double>(b[k]) * b[k];
    }
    v.max_rel_diff = std::max(v.max_rel_diff, b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2));
    ++v.compared_images;
  }
  return v;
}

/// int8's bound on the relative L2 difference from fp32: the largest measured on real photos is
/// 0.31 on a Zen 5 and 0.29 on a Xeon with VNNI and AMX (4,200 crops each; median 0.08:
/// results/int8/README.md, results/int8/deviation-20261206.md), on the synthetic-weights network;
/// 0.4 keeps 1.3x headroom over both (it was 0.5 until 2026-12-06).
constexpr double kInt8RelTolerance = 0.4;

/// The largest per-image relative L2 difference from the TorchScript fp32 reference that a run
/// with `engine` and `precision` may show (docs/engines.md):
/// - fp32, any engine: 1e-4 (the oneDNN engine, the fused export and channels_last agree with
///   TorchScript within it; the same engine agrees with itself to ~1e-6);
/// - fp16 (CUDA): 2e-2; bf16 (CUDA, or oneDNN on AVX-512 BF16; measured 2-6%): 1e-1.
/// - int8 (oneDNN on CPUs with VNNI, calibrated scales): kInt8RelTolerance.
/// Engine "none" computes no features: nothing to check (infinite).
inline double rel_tolerance(EngineKind engine, Precision precision) {
  if (engine == EngineKind::none) return INFINITY;
  switch (precision) {
    case Precision::bf16:
      return 1e-1;
    case Precision::fp16:
      return 2e-2;
    case Precision::int8:
      return kInt8RelTolerance;
    case Precision::fp32:
      return 1e-4;
  }
  return 1e-4;
}

/// Records `tolerance` in the run's verification and marks an ok run `failed` when its
/// max_rel_diff is over it. Returns whether the run is within it (true when not verified).
inline bool judge_verification(RunResult& run, double tolerance) {
  if (!run.verification) return true;
  if (std::isfinite(tolerance)) run.verification->rel_tolerance = tolerance;
  const bool within = !(run.verification->max_rel_diff > tolerance);
  if (!within && run.status == RunStatus::ok) {
    run.status = RunStatus::failed;
    char buf[160];
    std::snprintf(buf, sizeof buf, "features off the reference: max relative L2 difference %.3g > tolerance %.3g",
                  run.verification->max_rel_diff, tolerance);
    run.reason = buf;
  }
  return within;
}

}  // namespace vecbench
