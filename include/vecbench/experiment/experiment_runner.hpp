// Runs an experiment: the planner (experiment/plan.hpp) turns its matrices into runs, the
// scheduler (experiment/schedule.hpp) decides each step, the executor (here, in
// src/experiment/experiment_runner.cpp) runs a repetition on this process or on every rank, and
// the verifier (experiment/verify.hpp) checks its features against the sequential reference.
// Backend-agnostic: the caller supplies model factories and image sources.
#pragma once
#include <atomic>
#include <functional>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/system/host_memory.hpp"
#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/experiment/experiment.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/results/printers.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// What the runner needs from the outside world.
struct ExperimentEnv {
  /// Makes a replica factory for the experiment's model.
  std::function<ModelFactory()> make_factory;
  /// Factory for the fp32 CPU reference pass (defaults to make_factory).
  std::function<ModelFactory()> make_reference_factory;
  /// Makes the image source for a resize mode.
  std::function<std::unique_ptr<ImageSource>(ResizeMode)> make_source;
  /// Where a run on these devices keeps its batch buffers (RunSettings::host_memory; `vecbench run`
  /// gives engines.hpp's host_memory_for: pinned on CUDA). Unset or null: ordinary memory.
  std::function<HostMemory*(const std::vector<VirtualDevice>&)> host_memory;
  ResizeMode model_resize = ResizeMode::tf_legacy;  ///< the model's default resize mode
  int input_size = 299;                             ///< the model's image side, pixels
  int cuda_devices = 0;                             ///< CUDA devices of this host
  Meta meta;                                        ///< the result's "meta" (argv, versions, model...)
  fs::path work_dir = "results/.tmp";               ///< scratch space for written outputs
  const std::atomic<bool>* stop = nullptr;          ///< set (Ctrl-C): the remaining runs are skipped
  std::ostream* log = &std::cerr;                   ///< progress lines
  /// Several processes (MPI ranks or shards) share every run's inputs; null or one process: this
  /// process does all. Connected ranks must all call run_experiment; only rank 0's result is whole.
  const Distribution* dist = nullptr;
  int cpu_cores = 0;  ///< cores the CPU replicas split (0: the machine's)
  /// Seconds since the experiment began (null: the steady clock); tests give a fake one.
  std::function<double()> elapsed_s;
  /// Trace every repetition (core/run/trace.hpp): each sample gets the derived figures (busy,
  /// starved, blocked, forward overlap), and the first repetition of each run is written as
  /// Chrome trace-event JSON to `trace_dir`/run<I>.json (run<I>-rank<R>.json on rank R > 0 of a
  /// multi-process run); the sample records it as `trace_dir.filename()/run<I>.json`, i.e.
  /// relative to the result file when `trace_dir` is a sibling of it. Empty: tracing off.
  fs::path trace_dir;
  /// Called after every step with the result as it stands (the runs done so far with their
  /// samples; the others `skipped`, reason kNotYetRun), so that the caller can save it: a run
  /// killed mid-experiment keeps what it measured. Null: no calls. Connected ranks: rank 0 only.
  std::function<void(const ResultFile&)> on_progress;
};

/// The reason a partial result (ExperimentEnv::on_progress) gives the runs it has not reached.
inline constexpr const char* kNotYetRun = "not run yet: this file was saved while the experiment ran";

/// Runs the experiment; returns its result (schema_version 1). A verified run whose features are
/// further from the reference than its engine and precision allow is `failed`.
ResultFile run_experiment(const Experiment& e, const ExperimentEnv& env);

/// `results/<name>/<UTC timestamp>.json`
fs::path result_path(const fs::path& results_dir, const std::string& name);

}  // namespace vecbench
