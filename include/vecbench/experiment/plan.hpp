// The planner: an experiment's matrices and external commands as the runs to make, each with a
// unique id, and the order their repetitions run in. Pure: no model, no files.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vecbench/experiment/experiment.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// One run of the plan: the result it fills as its repetitions run.
struct PlannedRun {
  RunResult result;                     ///< id and params set by the planner; the rest as it runs
  std::optional<std::size_t> external;  ///< index into Experiment::external for a peer command
};

/// What the planner needs to know of the image sources.
struct PlanInputs {
  /// A matrix's resize entry ("default" or a mode name) -> the mode it runs with.
  std::function<ResizeMode(const std::string&)> resolve_resize;
  /// The kind of input the source of a resize mode gives ("photos", "synthetic", ...).
  std::function<std::string(ResizeMode)> input_kind;
};

/// "strategy=... devices=... batch=..." over the params a matrix run has.
inline std::string run_id(const nlohmann::json& p) {
  std::string s;
  for (const char* k : {"strategy", "devices", "batch", "threads", "resize", "input"}) {
    if (!p.contains(k)) continue;
    s += (s.empty() ? "" : " ") + std::string(k) + "=" + (p[k].is_string() ? p[k].get<std::string>() : p[k].dump());
  }
  return s;
}

/// Every combination of each matrix's lists (in file order, a run that two matrices share once),
/// then one run per external command.
inline std::vector<PlannedRun> plan_runs(const Experiment& e, const PlanInputs& in) {
  std::vector<PlannedRun> runs;
  std::set<std::string> ids;
  for (const auto& mx : e.matrices)
    for (const auto& s : mx.strategies)
      for (const auto& d : mx.devices)
        for (int b : mx.batch_sizes)
          for (int t : mx.threads)
            for (const auto& r : mx.resize) {
              const ResizeMode mode = in.resolve_resize(r);
              PlannedRun p;
              p.result.params = {{"strategy", s},
                                 {"devices", d},
                                 {"batch", b},
                                 {"threads", t},
                                 {"resize", to_string(mode)},
                                 {"input", in.input_kind(mode)}};
              p.result.id = run_id(p.result.params);
              if (ids.insert(p.result.id).second) runs.push_back(std::move(p));
            }
  for (std::size_t i = 0; i < e.external.size(); ++i) {
    PlannedRun p;
    p.external = i;
    p.result.params = {{"strategy", "external:" + e.external[i].name}, {"command", e.external[i].command}};
    p.result.id = "strategy=external:" + e.external[i].name;
    runs.push_back(std::move(p));
  }
  return runs;
}

/// One step of the schedule: repetition `rep` of run `run`.
struct Step {
  std::size_t run = 0;
  int rep = 0;
};

/// Interleaved: A1 B1 C1 A2 B2 C2 ... (drift hits every run alike); otherwise A1 A2 B1 B2 ...
inline std::vector<Step> run_order(std::size_t runs, int repetitions, bool interleave) {
  std::vector<Step> order;
  if (interleave) {
    for (int rep = 0; rep < repetitions; ++rep)
      for (std::size_t i = 0; i < runs; ++i) order.push_back({i, rep});
  } else {
    for (std::size_t i = 0; i < runs; ++i)
      for (int rep = 0; rep < repetitions; ++rep) order.push_back({i, rep});
  }
  return order;
}

}  // namespace vecbench
