// An experiment as a JSON file (`experiments/*.json`): what to run, on what, how often.
// Validation names the offending key. No LibTorch, no OpenCV here.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/model_settings.hpp"
#include "vecbench/input/imageset_spec.hpp"
#include "vecbench/input/resize.hpp"
#include "vecbench/output/output_format.hpp"

namespace vecbench {

/// The word an experiment file gives for "the build's own": its synthetic model ("model") and
/// the model's own resize ("resize"). Read only where the file is parsed: past it, the choice is
/// Experiment::default_model and a resize of nullopt.
inline constexpr const char* kDefaultKeyword = "default";

/// One experiment file.
struct Experiment {
  std::string name;  ///< results go to results/<name>/<UTC timestamp>.json
  std::string description;
  /// The model and its replicas' settings (model.path: the file, unless default_model).
  /// Engine none: the input pipeline only (no verify); onednn: CPU; fp16/bf16: CUDA, and bf16
  /// also engine onednn on AVX-512 BF16.
  ModelSettings model{};
  bool default_model = true;   ///< the build's synthetic model (no "model", or "model": "default")
  double memory_cap_gb = 0.0;  ///< CUDA: memory cap per virtual device, GB (0: none; the seed's 1 GB)
  ImageSetSpec images;
  /// One matrix: every combination of its lists is one run. "matrix" in the file is one such
  /// object or an array of them (their runs are concatenated, duplicates dropped).
  struct Matrix {
    std::vector<std::string> strategies = {kSequentialStrategy};
    std::vector<DevicesSpec> devices = {DevicesSpec::parse("cpu")};  ///< parsed as the file is read
    std::vector<int> batch_sizes = {1};
    std::vector<int> threads = {0};  ///< intra-op threads per replica; 0 = split the cores
    /// The resize modes; nullopt: "default", the model's own mode.
    std::vector<std::optional<ResizeMode>> resize = {std::nullopt};
  };
  std::vector<Matrix> matrices = {Matrix{}};
  int warmup_batches = 3;  ///< untimed forwards per replica before each repetition
  int repetitions = 3;     ///< timed repetitions of each run (the minimum when adaptive)
  /// Adaptive repetitions (nvbench's stdrel, on the median): above `repetitions`, a run gets more
  /// repetitions, interleaved, until its median's confidence interval (stats::median_ci, at least
  /// 90 %: 5 repetitions or more) is within +-`target_median_ci_pct` % or it has this many, within
  /// the time budget; 0 = `repetitions` (a fixed count).
  int max_repetitions = 0;
  double target_median_ci_pct = 3.0;                ///< the adaptive target: half the CI's width over the median, %
  bool interleave = true;                           ///< A B C A B C (drift hits all alike) instead of A A B B
  double time_budget_s = 0;                         ///< runs not started within it are "skipped"; 0 = none
  int decode_threads = 1;                           ///< data-parallel decode threads
  int prefetch_batches = 4;                         ///< data-parallel queue depth
  OutputFormat output_format = OutputFormat::none;  ///< written to a temp dir when not none
  bool verify = true;                               ///< compare features with the sequential reference
  bool seed_timing_lines = false;                   ///< also print the seed-style timing line per repetition
  /// Each run's replicas are made once and kept for its later repetitions (each repetition still
  /// warms them up before its clock): building replicas (seconds on a GPU) is paid once per run,
  /// so only the first repetition's setup_s has it. false: every repetition builds its own.
  bool keep_replicas = false;
  /// External commands run interleaved with vecbench's runs ({name, command, regex}); their
  /// img/s is parsed from stdout with `regex` (first group).
  struct External {
    std::string name, command, regex = "img_per_s=([0-9.eE+-]+)";
  };
  std::vector<External> external;
  nlohmann::json raw;  ///< the file as given (recorded as "requested")
};

/// Parses and validates an experiment. `origin` names the file in errors (ConfigError).
Experiment parse_experiment(const nlohmann::json& j, const std::string& origin = "experiment");

/// The most repetitions a run of `e` may get (its fixed count when not adaptive).
inline int max_repetitions(const Experiment& e) { return std::max(e.repetitions, e.max_repetitions); }

/// The experiment file at `path`, parsed; IoError when unreadable, ConfigError when not valid.
Experiment load_experiment(const std::string& path);

}  // namespace vecbench
