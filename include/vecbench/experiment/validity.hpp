// The validity verdict of a run (MLPerf LoadGen's VALID/INVALID, for a shared machine): `noisy`
// when its repetitions disagree by more than a speed comparison can resolve, or when other
// processes or the hypervisor took a share of the machine while it ran; else `valid`. `report`
// marks noisy runs and `compare` says UNKNOWN for them (results/compare.hpp).
#pragma once
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "vecbench/results/result_types.hpp"

namespace vecbench {

/// The thresholds (docs/experiments.md "Validity"). Machines here are shared: a 10 % spread of the repetitions
/// cannot resolve the 10-15 % changes that `compare` calls FASTER or SLOWER, and another process
/// on 10 % of a 2-core machine's capacity is a fifth of a core taken from the run.
struct ValidityLimits {
  /// The width of the median's confidence interval over the median, of images_per_s
  /// (stats::median_ci: the whole range, (max - min) / median, up to 8 repetitions; from 9 on
  /// the 95 % interval, which an outlying repetition or two do not widen).
  double max_rel_spread = 0.10;
  double max_foreign_cpu = 0.10;  ///< largest Sample::foreign_cpu_share
  double max_steal = 0.05;        ///< largest Sample::steal_share
};

/// The verdict of an ok run with samples (nullopt otherwise: nothing to judge).
inline std::optional<Validity> judge_validity(const RunResult& run, const ValidityLimits& lim = {}) {
  if (run.status != RunStatus::ok || run.samples.empty()) return std::nullopt;
  double foreign = -1, steal = -1;
  for (const Sample& s : run.samples) {
    if (s.foreign_cpu_share) foreign = std::max(foreign, *s.foreign_cpu_share);
    if (s.steal_share) steal = std::max(steal, *s.steal_share);
  }
  const auto& ci = run.summary.images_per_s_median_ci;
  const double spread = run.samples.size() < 2 ? 0.0 : ci ? 2.0 * ci->rel_half : run.summary.images_per_s.rel_spread;
  auto pct = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f %%", 100.0 * x);
    return std::string(b);
  };
  std::vector<NoiseCause> causes;
  std::string over, figures = "spread " + (run.samples.size() > 1 ? pct(spread) : std::string("n/a (1 rep)"));
  if (foreign >= 0) figures += ", other processes up to " + pct(foreign) + " of the CPU";
  if (steal >= 0) figures += ", steal up to " + pct(steal);
  auto add = [&](NoiseCause cause, const std::string& s) {
    causes.push_back(cause);
    over += (over.empty() ? "" : "; ") + s;
  };
  if (run.samples.size() > 1 && !(spread <= lim.max_rel_spread))
    add(NoiseCause::spread, "repetitions spread " + pct(spread) + " > " + pct(lim.max_rel_spread));
  if (foreign > lim.max_foreign_cpu)
    add(NoiseCause::foreign_cpu, "other processes took " + pct(foreign) + " of the CPU > " + pct(lim.max_foreign_cpu));
  if (steal > lim.max_steal) add(NoiseCause::steal, "steal " + pct(steal) + " > " + pct(lim.max_steal));
  return over.empty() ? Validity{ValidityVerdict::valid, figures, {}} : Validity{ValidityVerdict::noisy, over, causes};
}

}  // namespace vecbench
