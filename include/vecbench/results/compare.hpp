// Comparing two result files run by run, noise-aware (as google/benchmark's compare.py): a run
// is FASTER or SLOWER only when the change is both significant (two-sided Mann-Whitney U test
// on the per-rep values, p < alpha) and large (median changed by more than `threshold`).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/stats.hpp"
#include "vecbench/results/markdown_table.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// Settings of a comparison (CLI: vecbench compare BASE NEW --threshold --alpha --min-reps
/// --normalize-by).
struct CompareOptions {
  double threshold = 0.1;    ///< smallest relative change of the median that counts (0.1 = 10%)
  double alpha = 0.05;       ///< significance level of the two-sided Mann-Whitney U test
  int min_reps = 3;          ///< fewer reps than this on either side -> UNKNOWN
  std::string normalize_by;  ///< params filter "key=value[,key=value]"; empty: raw values
  /// The Sample metric compared: a field of its table with a direction (sample_metric_names()).
  std::string metric = "images_per_s";
};

/// A comparable Sample field: its key, unit, direction and how to read it.
struct SampleMetric {
  std::string key;                           ///< e.g. "images_per_s"
  Unit unit = Unit::none;                    ///< e.g. images/s, s, bytes
  Better better = Better::higher;            ///< which way is an improvement
  std::function<double(const Sample&)> get;  ///< the value of one sample

  /// Time metrics say FASTER/SLOWER; others (memory) BETTER/WORSE.
  bool is_speed() const { return unit == Unit::images_per_s || unit == Unit::seconds; }
};

/// The Sample fields `compare` can take: those of its field table with a direction.
std::vector<SampleMetric> sample_metrics();

/// The metric named `key`; ConfigError("metric", ...) listing the metrics otherwise.
SampleMetric sample_metric(const std::string& key);

/// Outcome for one run.
enum class Verdict { faster, slower, same, unknown };

template <>
struct EnumNames<Verdict> {
  static constexpr const char* what = "verdict";
  static constexpr std::array<std::pair<Verdict, const char*>, 4> names = {{{Verdict::faster, "FASTER"},
                                                                            {Verdict::slower, "SLOWER"},
                                                                            {Verdict::same, "SAME"},
                                                                            {Verdict::unknown, "UNKNOWN"}}};
};

inline const char* to_string(Verdict v) { return enum_name(v); }

/// One run present in both files.
struct RunComparison {
  std::string id;                      ///< run id (the same in both files)
  std::string base_reference;          ///< id of the base file's normalize_by reference run, or ""
  std::string new_reference;           ///< id of the new file's normalize_by reference run, or ""
  std::vector<double> base_values;     ///< per-rep values compared: images/s, or ratios to reference
  std::vector<double> new_values;      ///< same for the new file
  stats::Summary base;                 ///< summary of base_values
  stats::Summary neu;                  ///< summary of new_values
  double change = std::nan("");        ///< new median / base median - 1 (+0.1 = 10% higher = faster)
  double spread = std::nan("");        ///< max of the two rel_spreads ((max - min) / median)
  double p_value = std::nan("");       ///< two-sided Mann-Whitney U p; NaN when not tested
  Verdict verdict = Verdict::unknown;  ///< see CompareOptions
  std::string note;                    ///< why UNKNOWN; empty otherwise
  bool noisy = false;                  ///< UNKNOWN because a run (or its reference) was judged noisy
};

/// All of a comparison.
struct CompareReport {
  CompareOptions options;                   ///< settings used
  std::string base_name, new_name;          ///< experiment names
  std::string base_host, new_host;          ///< meta.host of each file
  std::string metric;                       ///< what the values are, e.g. "images_per_s (images/s)"
  std::string metric_key = "images_per_s";  ///< the Sample field compared
  Better metric_better = Better::higher;    ///< its direction
  bool metric_is_speed = true;              ///< FASTER/SLOWER (time) or BETTER/WORSE (e.g. memory)
  std::vector<RunComparison> runs;          ///< runs in both files, in base order
  std::vector<std::string> only_in_base;    ///< ids of runs missing from the new file
  std::vector<std::string> only_in_new;     ///< ids of runs missing from the base file
  std::vector<std::string> reference_runs;  ///< normalize_by reference runs (not compared)
  double geomean_ratio = std::nan("");      ///< geometric mean of new/base medians (valid runs)
  std::size_t geomean_count = 0;            ///< runs in geomean_ratio
};

/// "key=value[,key=value...]" -> pairs; ConfigError("normalize_by", ...) when malformed.
std::vector<std::pair<std::string, std::string>> parse_params_filter(const std::string& spec);

/// Whether `params` has every key=value of `filter` (a non-empty filter).
bool matches_filter(const ResultParams& params, const std::vector<std::pair<std::string, std::string>>& filter);

/// The normalize_by reference of `run` within `file`, or nullptr with `problem` set.
/// Rule: candidates are the other runs whose params match every key=value of the filter. The
/// distance of a candidate is the number of params, other than the filter's keys, whose values
/// differ (a key present on one side only counts as different). The reference is the candidate
/// at distance 0 (exact match; the first if several) or else the unique candidate at the smallest
/// distance; a tie is an error ("ambiguous"), and so is a reference that is not status ok.
const RunResult* find_reference_run(const ResultFile& file, const RunResult& run,
                                    const std::vector<std::pair<std::string, std::string>>& filter,
                                    std::string* problem);

/// Per-rep values of `run` (finite values of `metric`, images/s by default); with `ref`, each
/// divided by the value of the ref sample with the same rep (reps missing from `ref` or with a
/// value of 0 are dropped).
std::vector<double> compared_values(const RunResult& run, const RunResult* ref,
                                    const SampleMetric& metric = sample_metric("images_per_s"));

/// Compares `neu` against `base` run by run (matched by id). With options.normalize_by, each
/// file's runs are first divided, rep by rep, by their reference run in the same file (see
/// find_reference_run) and the reference runs themselves are left out.
CompareReport compare_results(const ResultFile& base, const ResultFile& neu, const CompareOptions& options);

/// The verdict's word: FASTER/SLOWER for time metrics, BETTER/WORSE for others.
inline const char* verdict_word(Verdict v, bool speed) {
  if (speed || v == Verdict::same || v == Verdict::unknown) return to_string(v);
  return v == Verdict::faster ? "BETTER" : "WORSE";
}

/// Exit status of `vecbench compare`: 1 when any run is SLOWER (significant and beyond the
/// threshold), 2 when nothing could be compared (no run is in both files), 3 when none is SLOWER
/// but some run is UNKNOWN because it was measured noisy (the machine was busy: measure again
/// on a quiet one), else 0. A file that cannot be read also exits 2 (the CLI's error path), so
/// scripts can tell a regression from a broken comparison and from an unanswerable one.
constexpr int kCompareRegression = 1;
constexpr int kCompareUnusable = 2;
constexpr int kCompareNoisy = 3;
inline int compare_exit_code(const CompareReport& r) {
  if (r.runs.empty()) return kCompareUnusable;
  auto any = [&](auto pred) { return std::any_of(r.runs.begin(), r.runs.end(), pred); };
  if (any([](const RunComparison& c) { return c.verdict == Verdict::slower; })) return kCompareRegression;
  return any([](const RunComparison& c) { return c.noisy; }) ? kCompareNoisy : 0;
}

/// The comparison as markdown: a table (run, base, new, change, spread, p, verdict), a geomean
/// row, then notes, unmatched runs and warnings.
std::string compare_markdown(const CompareReport& r);

}  // namespace vecbench
