// The result model (schema_version 1): what one experiment measured, as C++ types. Every
// producer fills and every consumer reads these; results/result.hpp reads and writes them as
// JSON (schema/result.schema.json; a test keeps the reader and the schema in sync).
// The records below each list their JSON fields once, in a field table (results/field_table.hpp)
// right after the struct: adding a metric is its member plus its line there.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/run/stats.hpp"
#include "vecbench/core/run/trace_figures.hpp"
#include "vecbench/results/field_table.hpp"
#include "vecbench/results/result_params.hpp"
#include "vecbench/results/run_status.hpp"

namespace vecbench {

using json = nlohmann::json;

/// The result format version this code reads and writes.
constexpr int kResultSchemaVersion = 1;

/// A malformed result file: `file` is where it came from, `key` the JSON path ("runs[2].id").
struct ResultFormatError : Error {
  ResultFormatError(const std::string& file, const std::string& key, const std::string& cause)
      : Error(file + ": key '" + key + "': " + cause) {}
};

/// One GPU of the host.
struct GpuInfo {
  std::string name;               ///< device name as reported by the driver
  std::int64_t memory_bytes = 0;  ///< total device memory, bytes
};
constexpr auto field_table(const GpuInfo&) {
  return std::make_tuple(field("name", &GpuInfo::name), field("memory_bytes", &GpuInfo::memory_bytes));
}

/// How the binary was built and what state the machine was in (google/benchmark's context,
/// LoadGen's log): meta.environment, written by `vecbench run` (absent in older files).
struct Environment {
  std::string build_type;               ///< CMAKE_BUILD_TYPE the binary was built with, e.g. "Release"
  std::string compiler_flags;           ///< the C++ flags of that build type
  std::string binary_git_sha;           ///< the commit the binary was built from (compiled in)
  bool binary_git_dirty = false;        ///< its work tree had uncommitted changes at build time
  std::vector<std::string> cpu_isa;     ///< avx2, avx512f, avx512_bf16, avx512_vnni, amx_tile ... present
  std::vector<double> load_avg_before;  ///< 1/5/15-minute load averages before the runs (empty: unknown)
  std::vector<double> load_avg_after;   ///< the same after them
  /// The ISA each engine's kernels chose on this machine: "torchscript" (ATen's CPU capability),
  /// "onednn" (oneDNN's), "onednn_winograd" (whose Winograd: "onednn", "vecbench-avx2", "none");
  /// empty in files written before it was recorded.
  std::map<std::string, std::string> engine_isa;
};
constexpr auto field_table(const Environment&) {
  using E = Environment;
  return std::make_tuple(field("build_type", &E::build_type), field("compiler_flags", &E::compiler_flags),
                         field("binary_git_sha", &E::binary_git_sha), field("binary_git_dirty", &E::binary_git_dirty),
                         field("cpu_isa", &E::cpu_isa), field("load_avg_before", &E::load_avg_before),
                         field("load_avg_after", &E::load_avg_after),
                         field("engine_isa", &E::engine_isa, Need::optional, Emit::when_set));
}

/// Where and how the experiment ran. Keys not listed here are kept verbatim in `extra`.
struct Meta {
  std::vector<std::string> argv;                          ///< command line of the run (optional in the file)
  std::string vecbench_version;                           ///< e.g. "0.1.0"
  std::string git_sha;                                    ///< source revision, or "unknown"
  bool git_dirty = false;                                 ///< the work tree had uncommitted changes (optional)
  std::string date_utc;                                   ///< start time, ISO 8601 UTC ("2026-11-30T07:00:00Z")
  std::string host;                                       ///< host name
  std::string cpu_model;                                  ///< CPU model string
  std::int64_t cpu_cores = 0;                             ///< logical CPU cores available to the process
  std::vector<GpuInfo> gpus;                              ///< GPUs seen (optional, empty when none)
  json versions = json::object();                         ///< library name -> version string or null (optional)
  json model = nullptr;                                   ///< {"path","arch","weight_source","weight_sha256"} or null
  std::optional<Environment> environment = std::nullopt;  ///< build and machine state (optional)
  json extra = json::object();                            ///< any other meta keys, kept as given
};

/// The experiment configuration: as given, and as resolved by the runner.
struct ResultConfig {
  json requested = json::object();  ///< the experiment JSON as given
  json effective = json::object();  ///< free-form: what the runner actually used
};

/// One device's share of one repetition.
struct DeviceSample {
  std::string name;                    ///< replica label, e.g. "cpu/2#0"
  std::int64_t images = 0;             ///< images this device processed
  double busy_fraction = 0.0;          ///< fraction of wall time spent in forward calls, 0..1
  std::int64_t batches = 0;            ///< forward calls on this device (optional)
  double busy_s = 0.0;                 ///< seconds inside forward calls, copies included (optional)
  std::int64_t peak_memory_bytes = 0;  ///< device memory peak, bytes (0 on CPU / unknown)
};
constexpr auto field_table(const DeviceSample&) {
  using D = DeviceSample;
  return std::make_tuple(field("name", &D::name), field("images", &D::images),
                         field("busy_fraction", &D::busy_fraction, Need::required, Emit::always, Unit::fraction),
                         field("peak_memory_bytes", &D::peak_memory_bytes, Need::required, Emit::always, Unit::bytes),
                         field("batches", &D::batches, Need::optional),
                         field("busy_s", &D::busy_s, Need::optional, Emit::always, Unit::seconds));
}

/// One rank's (process's) share of one repetition of a multi-process run.
struct RankSample {
  std::int64_t rank = 0;      ///< MPI rank or shard index
  std::string host;           ///< host name (optional)
  std::int64_t images = 0;    ///< images this rank vectorized
  std::int64_t failed = 0;    ///< images that failed on this rank (optional)
  double wall_s = 0.0;        ///< this rank's wall time, seconds
  double images_per_s = 0.0;  ///< images / wall_s
  double setup_s = 0.0;       ///< model loading and warm-up on this rank (optional)
  std::int64_t chunks = -1;   ///< dynamic mode: chunks of inputs this rank got (optional; -1: absent)
};
constexpr auto field_table(const RankSample&) {
  using R = RankSample;
  return std::make_tuple(
      field("rank", &R::rank), field("host", &R::host, Need::optional), field("images", &R::images),
      field("failed", &R::failed, Need::optional),
      field("wall_s", &R::wall_s, Need::required, Emit::always, Unit::seconds),
      field("images_per_s", &R::images_per_s, Need::required, Emit::always, Unit::images_per_s, Better::higher),
      field("setup_s", &R::setup_s, Need::optional, Emit::always, Unit::seconds, Better::lower),
      field("chunks", &R::chunks, Need::optional, Emit::when_set));
}

/// How the ranks of a multi-process run (MPI ranks or shards) shared one repetition.
struct RanksInfo {
  std::int64_t count = 0;                    ///< ranks (or shards) of the job
  std::string distribution;                  ///< "static", "dynamic" or "shards" (optional)
  std::optional<double> scaling_efficiency;  ///< images_per_s / sum of per_rank images_per_s (optional)
  std::vector<RankSample> per_rank;          ///< one per rank whose figures are in the sample
};
constexpr auto field_table(const RanksInfo&) {
  using R = RanksInfo;
  return std::make_tuple(field("count", &R::count), field("distribution", &R::distribution, Need::optional),
                         field("scaling_efficiency", &R::scaling_efficiency, Need::optional, Emit::when_set,
                               Unit::fraction, Better::higher),
                         field("per_rank", &R::per_rank));
}

/// One timed repetition of a run.
struct Sample {
  std::int64_t rep = 0;                                ///< repetition index, 0-based (pairs reps across runs)
  std::int64_t images = 0;                             ///< images vectorized successfully
  std::int64_t failed = 0;                             ///< images that failed (optional, default 0)
  double wall_s = 0.0;                                 ///< wall-clock time of the repetition, seconds
  double images_per_s = 0.0;                           ///< images / wall_s
  std::map<std::string, double> stage_s;               ///< seconds per stage, summed over threads (optional)
  std::map<std::string, double> latency_ms;            ///< "p50"/"p90"/"p99" latency, ms (optional)
  std::vector<DeviceSample> devices;                   ///< per-device counters (optional)
  std::vector<std::pair<double, double>> queue_depth;  ///< (t_s since start, depth) (optional)
  std::int64_t peak_rss_bytes = 0;                     ///< process peak resident memory, bytes (0 = unknown)
  double setup_s = 0.0;  ///< model loading and warm-up before the clock started, s (optional)
  /// `--decode gpu`: JPEGs decoded on the devices, and those the host decoded instead (rejected by
  /// nvJPEG, or a host replica) (optional; -1 = absent: host decoding only).
  std::int64_t device_decoded = -1;
  std::int64_t device_decode_fallbacks = -1;
  /// Multi-process runs: every rank's figures; the sample's own are totals, with wall_s the
  /// slowest rank's (optional; absent for one process).
  std::optional<RanksInfo> ranks = std::nullopt;
  // ---- trace (issue #14): figures derived from the repetition's trace spans --------------------
  /// Per device busy / starved / blocked shares and the forward overlap (core/run/trace_figures.hpp);
  /// `file` is the trace written for this repetition, relative to the result file's folder
  /// (optional; absent when the run was not traced).
  std::optional<TraceFigures> trace = std::nullopt;
  // ---- the machine during the repetition (core/system/machine_load.hpp; optional, Linux) -------------
  /// CPU time other processes took while it ran, as a share of the machine's capacity (all cores).
  std::optional<double> foreign_cpu_share = std::nullopt;
  /// Time the hypervisor stole, as a share of the machine's capacity.
  std::optional<double> steal_share = std::nullopt;
};
/// The trace figures (core/run/trace_figures.hpp) as written in a sample's `trace`.
constexpr auto field_table(const DeviceShare&) {
  using D = DeviceShare;
  return std::make_tuple(field("name", &D::name), field("busy", &D::busy, Need::required, Emit::always, Unit::fraction),
                         field("starved", &D::starved, Need::required, Emit::always, Unit::fraction),
                         field("blocked", &D::blocked, Need::required, Emit::always, Unit::fraction));
}
constexpr auto field_table(const TraceFigures&) {
  using T = TraceFigures;
  return std::make_tuple(field("wall_s", &T::wall_s, Need::required, Emit::always, Unit::seconds),
                         field("forward_overlap", &T::forward_overlap), field("spans", &T::spans, Need::optional),
                         field("devices", &T::devices), field("file", &T::file, Need::optional, Emit::when_set));
}
/// The Sample fields; those with a direction are the metrics `vecbench compare --metric` takes.
constexpr auto field_table(const Sample&) {
  using S = Sample;
  constexpr auto opt = Need::optional;
  return std::make_tuple(
      field("rep", &S::rep), field("images", &S::images), field("failed", &S::failed, opt),
      field("wall_s", &S::wall_s, Need::required, Emit::always, Unit::seconds, Better::lower),
      field("images_per_s", &S::images_per_s, Need::required, Emit::always, Unit::images_per_s, Better::higher),
      field("stage_s", &S::stage_s, opt, Emit::when_set, Unit::seconds),
      field("latency_ms", &S::latency_ms, opt, Emit::when_set, Unit::milliseconds), field("devices", &S::devices, opt),
      field("queue_depth", &S::queue_depth, opt),
      field("peak_rss_bytes", &S::peak_rss_bytes, opt, Emit::always, Unit::bytes, Better::lower),
      field("setup_s", &S::setup_s, opt, Emit::always, Unit::seconds, Better::lower),
      field("device_decoded", &S::device_decoded, opt, Emit::when_set, Unit::images),
      field("device_decode_fallbacks", &S::device_decode_fallbacks, opt, Emit::when_set, Unit::images),
      field("ranks", &S::ranks, opt, Emit::when_set), field("trace", &S::trace, opt, Emit::when_set),
      field("foreign_cpu_share", &S::foreign_cpu_share, opt, Emit::when_set, Unit::fraction),
      field("steal_share", &S::steal_share, opt, Emit::when_set, Unit::fraction));
}

/// Medians and spreads over a run's samples (filled by summarize_run).
struct RunSummary {
  stats::Summary images_per_s;                       ///< of Sample::images_per_s
  stats::Summary wall_s;                             ///< of Sample::wall_s, seconds
  std::map<std::string, stats::Summary> latency_ms;  ///< per percentile key, ms (optional)
  std::map<std::string, double> stage_s_per_image;   ///< per stage: median of stage_s/images, s
  /// The 95 % (or, under 6 samples, the whole-range) confidence interval of images_per_s's
  /// median (stats::median_ci); absent with fewer than 2 samples and in older files.
  std::optional<stats::MedianCi> images_per_s_median_ci;
};
constexpr auto field_table(const stats::MedianCi&) {
  using C = stats::MedianCi;
  return std::make_tuple(field("low", &C::low, Need::required, Emit::always, Unit::images_per_s),
                         field("high", &C::high, Need::required, Emit::always, Unit::images_per_s),
                         field("level", &C::level, Need::required, Emit::always, Unit::fraction),
                         field("rel_half", &C::rel_half, Need::required, Emit::always, Unit::fraction));
}

/// Why a run with adaptive repetitions (experiment `max_repetitions` above `repetitions`) stopped
/// adding them, nvbench's stdrel criterion on the median: `target` (the median's confidence
/// interval, half its width over the median, reached the target), `max_repetitions`,
/// `time_budget` or `interrupted`.
struct Stopping {
  std::string rule;
  std::int64_t min_repetitions = 0;
  std::int64_t max_repetitions = 0;
  double target_rel_half = 0.0;  ///< the target, a fraction of the median (0.03: +-3 %)
};
constexpr auto field_table(const Stopping&) {
  using S = Stopping;
  return std::make_tuple(field("rule", &S::rule), field("min_repetitions", &S::min_repetitions),
                         field("max_repetitions", &S::max_repetitions),
                         field("target_rel_half", &S::target_rel_half, Need::required, Emit::always, Unit::fraction));
}

/// Output check of a run against a reference strategy.
struct Verification {
  std::string reference;             ///< the reference strategy, e.g. "sequential"
  std::int64_t compared_images = 0;  ///< images whose vectors were compared
  double max_abs_diff = 0.0;         ///< largest |out - ref| over every element of every compared vector
  double max_rel_diff = 0.0;         ///< largest per-image relative L2 difference |out - ref| / |ref|
  /// The largest max_rel_diff the run's engine and precision may show (experiment/verify.hpp);
  /// a run over it is `failed` (optional; absent in files written before it was checked).
  std::optional<double> rel_tolerance = std::nullopt;
  /// What the reference ran (always TorchScript, fp32, batch 1: experiment_runner.cpp); absent in
  /// files written before it was recorded.
  std::optional<std::string> reference_engine = std::nullopt;
  std::optional<std::string> reference_precision = std::nullopt;
  std::optional<std::int64_t> reference_batch = std::nullopt;
};
constexpr auto field_table(const Verification&) {
  using V = Verification;
  return std::make_tuple(field("reference", &V::reference), field("compared_images", &V::compared_images),
                         field("max_abs_diff", &V::max_abs_diff), field("max_rel_diff", &V::max_rel_diff),
                         field("rel_tolerance", &V::rel_tolerance, Need::optional, Emit::when_set),
                         field("reference_engine", &V::reference_engine, Need::optional, Emit::when_set),
                         field("reference_precision", &V::reference_precision, Need::optional, Emit::when_set),
                         field("reference_batch", &V::reference_batch, Need::optional, Emit::when_set));
}

/// Whether a run's figures can be taken at face value (experiment/validity.hpp decides).
struct Validity {
  ValidityVerdict verdict = ValidityVerdict::valid;
  std::string reason;              ///< noisy: what was over its threshold, with the figures; valid: the figures
  std::vector<NoiseCause> causes;  ///< noisy: those over their thresholds
};
constexpr auto field_table(const Validity&) {
  return std::make_tuple(field("verdict", &Validity::verdict), field("reason", &Validity::reason),
                         field("causes", &Validity::causes));
}

/// One device of a run as it ran: its name and its replica's threads.
struct EffectiveDevice {
  std::string name;
  std::int64_t threads = -1;  ///< OpenMP/intra-op threads of its replica; -1: not recorded
};
constexpr auto field_table(const EffectiveDevice&) {
  return std::make_tuple(field("name", &EffectiveDevice::name),
                         field("threads", &EffectiveDevice::threads, Need::optional, Emit::when_set));
}

/// What a run actually used, as the experiment runner resolved it (a run's `effective`): the
/// devices with their threads, the input pipeline's settings, and for an external command its own
/// account. Typed: written and read by results/result.hpp only, never looked up by key.
struct EffectiveSettings {
  std::vector<EffectiveDevice> devices;  ///< in order (empty: an external command)
  std::int64_t decode_threads = -1;      ///< -1 (every count): not recorded
  std::int64_t prefetch_batches = -1;
  std::int64_t warmup_batches = -1;
  std::int64_t batch = -1;   ///< images per forward call, per device
  std::string batch_memory;  ///< CUDA: the batches' host memory (pinned, pageable); "" elsewhere
  std::string output;        ///< an external command's own account of what it ran (its last line)
};
constexpr auto field_table(const EffectiveSettings&) {
  return std::make_tuple(
      field("devices", &EffectiveSettings::devices, Need::optional, Emit::when_set),
      field("decode_threads", &EffectiveSettings::decode_threads, Need::optional, Emit::when_set),
      field("prefetch_batches", &EffectiveSettings::prefetch_batches, Need::optional, Emit::when_set),
      field("warmup_batches", &EffectiveSettings::warmup_batches, Need::optional, Emit::when_set),
      field("batch", &EffectiveSettings::batch, Need::optional, Emit::when_set),
      field("batch_memory", &EffectiveSettings::batch_memory, Need::optional, Emit::when_set),
      field("output", &EffectiveSettings::output, Need::optional, Emit::when_set));
}

/// One point of the experiment's parameter grid.
struct RunResult {
  std::string id;                            ///< "key=value ..." of params; unique within a file
  ResultParams params;                       ///< the run's settings (the file's "params")
  RunStatus status = RunStatus::ok;          ///< ok, skipped, error or failed
  std::string reason;                        ///< why skipped/error; non-empty unless ok
  EffectiveSettings effective;               ///< devices, threads ... as actually used
  std::vector<Sample> samples;               ///< one per repetition (empty when skipped)
  RunSummary summary;                        ///< see summarize_run
  std::optional<Verification> verification;  ///< null when not verified
  std::optional<Validity> validity;          ///< ok runs of files since it was judged; absent before
  std::optional<Stopping> stopping;          ///< runs with adaptive repetitions; absent otherwise
};

/// Whether `run` was judged noisy (a run without a verdict, as in older files, is not); with
/// `busy_only`, only for a busy machine (other processes or steal), not for its spread alone.
inline bool is_noisy(const RunResult& run, bool busy_only = false) {
  if (!run.validity || run.validity->verdict != ValidityVerdict::noisy) return false;
  if (!busy_only) return true;
  const auto& c = run.validity->causes;
  return std::find(c.begin(), c.end(), NoiseCause::foreign_cpu) != c.end() ||
         std::find(c.begin(), c.end(), NoiseCause::steal) != c.end();
}

/// A run's status as tables show it: "ok", "failed: why", "ok (NOISY: why)" for a noisy run.
inline std::string status_text(const RunResult& r) {
  std::string s = to_string(r.status);
  if (!r.reason.empty()) s += ": " + r.reason;
  if (is_noisy(r)) s += " (NOISY: " + r.validity->reason + ")";
  return s;
}

/// A whole result file.
struct ResultFile {
  int schema_version = kResultSchemaVersion;  ///< always kResultSchemaVersion when loaded
  std::string name;                           ///< experiment name
  Meta meta;                                  ///< host, versions, model
  ResultConfig config;                        ///< requested and effective configuration
  std::vector<RunResult> runs;                ///< in execution order
};

/// Fills run.summary from run.samples (stats::summarize of each quantity).
inline void summarize_run(RunResult& run) {
  std::vector<double> ips, wall;
  std::map<std::string, std::vector<double>> lat, stage;
  for (const Sample& s : run.samples) {
    ips.push_back(s.images_per_s);
    wall.push_back(s.wall_s);
    for (const auto& [k, v] : s.latency_ms) lat[k].push_back(v);
    if (s.images > 0)
      for (const auto& [k, v] : s.stage_s) stage[k].push_back(v / static_cast<double>(s.images));
  }
  run.summary = RunSummary{};
  run.summary.images_per_s = stats::summarize(ips);
  run.summary.wall_s = stats::summarize(wall);
  if (ips.size() >= 2) run.summary.images_per_s_median_ci = stats::median_ci(ips);
  for (const auto& [k, v] : lat) run.summary.latency_ms[k] = stats::summarize(v);
  for (const auto& [k, v] : stage) run.summary.stage_s_per_image[k] = stats::median(v);
}

}  // namespace vecbench
