// The planner: an experiment's matrices and external commands as the runs to make, each with a
// unique id, and the order their repetitions run in. Pure: no model, no files.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/experiment/experiment.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/results/result.hpp"
#include "vecbench/strategies/strategies.hpp"

namespace vecbench {

/// A matrix run's settings, typed from the experiment file to the executor: RunResult::params
/// is what the result file records of them (recorded()), made once by the planner.
struct RunParams {
  const StrategyEntry* strategy = nullptr;  ///< the registry's entry (parse_matrix checked the name)
  DevicesSpec devices_spec;                 ///< the devices as the experiment file wrote them
  std::vector<VirtualDevice> devices;       ///< expanded on this machine, with `threads`
  int batch = 1;
  int threads = 0;  ///< intra-op threads per replica; 0: the cores split between the replicas
  ResizeMode resize = ResizeMode::tf_legacy;
  SourceKind input = SourceKind::files;  ///< the kind of input its source gives

  ResultParams recorded() const {
    ResultParams p;
    p.strategy = strategy->name;
    p.devices = devices_spec;
    p.batch = batch;
    p.threads = threads;
    p.resize = resize;
    p.input = input;
    return p;
  }
};

/// One run of the plan: the result it fills as its repetitions run.
struct PlannedRun {
  RunResult result;                     ///< id and params set by the planner; the rest as it runs
  std::optional<RunParams> matrix;      ///< a matrix run's settings (none for a peer command)
  std::optional<std::size_t> external;  ///< index into Experiment::external for a peer command
};

/// What the planner needs to know of the image sources.
struct PlanInputs {
  /// A matrix's resize entry (nullopt: "default") -> the mode it runs with.
  std::function<ResizeMode(std::optional<ResizeMode>)> resolve_resize;
  /// The kind of input the source of a resize mode gives.
  std::function<SourceKind(ResizeMode)> input_kind;
  /// A devices spec expanded on this machine for `threads` per replica (0: cores split); a spec
  /// it cannot run throws. Unset: expand_devices with its defaults (no CUDA device).
  std::function<std::vector<VirtualDevice>(const DevicesSpec& spec, int threads)> expand;
};

/// "strategy=... devices=... batch=..." over the settings a run has (a peer's command not among
/// them: "strategy=external:NAME").
inline std::string run_id(const ResultParams& p) {
  std::string s;
  for (const auto& [k, v] : p.entries())
    if (k != "command" && p.other.count(k) == 0) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

/// Every combination of each matrix's lists (in file order, a run that two matrices share once),
/// then one run per external command. Every run's devices are expanded here, so that a spec the
/// machine cannot run (a CUDA index it lacks) fails before any run, naming the matrix run.
inline std::vector<PlannedRun> plan_runs(const Experiment& e, const PlanInputs& in) {
  const auto expand = [&](const DevicesSpec& spec, int threads) {
    if (in.expand) return in.expand(spec, threads);
    DeviceOptions o;
    o.threads_per_replica = threads;
    return spec.expand(o);
  };
  std::vector<PlannedRun> runs;
  std::set<std::string> ids;
  for (const auto& mx : e.matrices)
    for (const auto& s : mx.strategies)
      for (const auto& d : mx.devices)
        for (int b : mx.batch_sizes)
          for (int t : mx.threads)
            for (const auto& r : mx.resize) {
              RunParams rp;
              rp.strategy = &find_strategy(s);
              rp.devices_spec = d;
              rp.batch = b;
              rp.threads = t;
              rp.resize = in.resolve_resize(r);
              rp.input = in.input_kind(rp.resize);
              PlannedRun p;
              p.result.params = rp.recorded();
              p.result.id = run_id(p.result.params);
              if (!ids.insert(p.result.id).second) continue;
              try {
                rp.devices = expand(d, t);
              } catch (const Error& err) {
                throw ConfigError("matrix run '" + p.result.id + "'", err.what());
              }
              p.matrix = std::move(rp);
              runs.push_back(std::move(p));
            }
  for (std::size_t i = 0; i < e.external.size(); ++i) {
    PlannedRun p;
    p.external = i;
    p.result.params.external = e.external[i].name;
    p.result.params.command = e.external[i].command;
    p.result.id = run_id(p.result.params);
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
