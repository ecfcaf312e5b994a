// The baseline a run's speed is measured against: the best sequential run of the same batch,
// resize and input. One rule for the end-of-run table, the report and tune.
#pragma once
#include "vecbench/results/result.hpp"

namespace vecbench {

/// The sequential reference of `run` for speedups: the ok run with strategy "sequential" and
/// the highest median images/s among those with the same batch, resize and input settings as
/// `run` (a setting `run` lacks is not constrained). nullptr when there is none.
inline const RunResult* best_sequential_run(const ResultFile& f, const RunResult& run) {
  const RunResult* best = nullptr;
  for (const RunResult& s : f.runs) {
    if (s.status != RunStatus::ok || !s.params.is_sequential() || !(s.summary.images_per_s.median > 0)) continue;
    const ResultParams &a = run.params, &b = s.params;
    const bool same =
        (!a.batch || a.batch == b.batch) && (!a.resize || a.resize == b.resize) && (!a.input || a.input == b.input);
    if (same && (!best || s.summary.images_per_s.median > best->summary.images_per_s.median)) best = &s;
  }
  return best;
}

}  // namespace vecbench
