// Rank gathering: at the end of a repetition (experiments) or of a job (vectorize) every rank
// sends rank 0 its figures, its error if any and its verification, and rank 0 combines them.
// One routine for both, so the two cannot drift apart.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/run/metrics.hpp"
#include "vecbench/dist/distributed.hpp"
#include "vecbench/dist/merge_results.hpp"
#include "vecbench/results/run_json.hpp"

namespace vecbench {

/// Who a rank is, as named in the combined sample.
struct RankIdentity {
  int rank = 0;       ///< MPI rank or shard index
  int size = 1;       ///< ranks (or shards) of the job
  std::string host;   ///< host name
  std::string mode;   ///< "static", "dynamic" or "shards"
  std::string label;  ///< "rank R on HOST": names the rank in errors
};

/// What one rank reports.
struct RankReport {
  const RunStats* stats = nullptr;        ///< this rank's figures (required)
  int rep = 0;                            ///< repetition index
  long chunks = -1;                       ///< dynamic mode: chunks this rank got (< 0: none)
  std::string error;                      ///< this rank's error ("" when none)
  bool interrupted = false;               ///< this rank was asked to stop
  nlohmann::json verification = nullptr;  ///< this rank's verification record, or null
};

/// What rank 0 has once every rank reported.
struct GatheredRanks {
  nlohmann::json sample;        ///< combined sample (result schema, "ranks" included)
  std::string errors;           ///< "label: error; ..." of the ranks that failed ("" when none)
  bool interrupted = false;     ///< some rank was asked to stop
  nlohmann::json verification;  ///< combined verification (null when none)
};

/// Collective: every rank of a connected group calls it; rank 0 (or a disconnected process,
/// which gathers only itself) gets the combination, the other ranks nullopt.
inline std::optional<GatheredRanks> gather_ranks(Comm& comm, const RankIdentity& who, const RankReport& mine) {
  const nlohmann::json msg = {
      {"sample", rank_sample_json(*mine.stats, mine.rep, who.rank, who.host, who.size, who.mode, mine.chunks)},
      {"latencies", mine.stats->batch_latency_ms},
      {"error", mine.error},
      {"label", who.label},
      {"interrupted", mine.interrupted},
      {"verification", mine.verification}};
  const auto all = comm.gather(msg.dump());
  if (!comm.leader()) return std::nullopt;
  GatheredRanks g;
  std::vector<nlohmann::json> parts, vers;
  std::vector<std::vector<double>> lats;
  for (const auto& text : all) {
    const auto j = nlohmann::json::parse(text);
    const std::string err = j["error"].get<std::string>();
    if (!err.empty()) g.errors += (g.errors.empty() ? "" : "; ") + j["label"].get<std::string>() + ": " + err;
    g.interrupted = g.interrupted || j["interrupted"].get<bool>();
    parts.push_back(j["sample"]);
    lats.push_back(j["latencies"].get<std::vector<double>>());
    vers.push_back(j["verification"]);
  }
  g.sample = combine_samples(parts, &lats);
  g.verification = combine_verifications(vers);
  return g;
}

}  // namespace vecbench
