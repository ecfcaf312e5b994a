// Merging the figures of several processes: per-rank samples of one repetition into one sample
// with per-rank and total figures (throughput = total images / slowest rank's wall time), and
// per-shard result files into one result.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/results/run_json.hpp"

namespace vecbench {

/// The per-rank record (the result schema's ranks.per_rank[] entry) of a rank's `sample`.
/// `host` "" and `chunks` < 0 are left out.
nlohmann::json rank_record(const nlohmann::json& sample, std::int64_t rank, const std::string& host = "",
                           long chunks = -1);

/// One rank's sample of a run: its figures as a result sample (run_stats_json), its devices
/// named "r<rank>/<device>" when there are several ranks, and "ranks" holding this rank alone.
/// `chunks`: inputs requests served by rank 0 (dynamic mode; < 0: none).
nlohmann::json rank_sample_json(const RunStats& st, int rep, int rank, const std::string& host, int count,
                                const std::string& distribution, long chunks = -1);

/// Combines samples of one repetition from several ranks or shards (each with "ranks"; a sample
/// without is taken as rank <its position>) into one: images and failures summed, wall time the
/// slowest rank's, throughput = images / that wall time, stage times summed, devices listed,
/// latency percentiles over every rank's batches when `latencies` (per part, ms) are given (else
/// the largest of each part's), and "ranks" with every rank's figures and the scaling efficiency
/// (throughput / sum of the ranks' own throughputs: 1 when no rank waited on another).
nlohmann::json combine_samples(const std::vector<nlohmann::json>& parts,
                               const std::vector<std::vector<double>>* latencies = nullptr);

/// Combines verification records of several ranks (null ones are skipped; null if all are).
nlohmann::json combine_verifications(const std::vector<nlohmann::json>& vs);

/// Merges the result files of the shards of one job (`vecbench run --shard-index I --num-shards
/// N`, one file per shard) into one result: per run, each repetition present in every file
/// becomes one sample combined as combine_samples does. A run is "error" when it is in error in
/// any file, else "failed" when it failed verification in any, else "skipped" when skipped in any
/// or missing from one. `names` name the files in reasons and in meta.merged_from. The result is
/// checked against the result schema.
nlohmann::json merge_result_files(const std::vector<nlohmann::json>& files, const std::vector<std::string>& names,
                                  std::ostream* log = nullptr);

}  // namespace vecbench
