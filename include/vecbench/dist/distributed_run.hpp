// Running one job on several processes: how the ranks share the inputs (static strided shares,
// or dynamic chunks handed out by rank 0 on request, all run on one replica pool). Rank 0
// gathers the figures with dist/rank_gather.hpp; the end of `vecbench vectorize` is in
// src/app/vectorize.cpp.
//
// Static: every rank takes every R-th input of the list to do (rank r: inputs r, r+R, r+2R ...),
// strided so that a sorted list (by folder, by size) spreads evenly. Under MPI the list is rank
// 0's view of what is left to do, sent to all; shards without MPI (--shard-index/--num-shards,
// Slurm) cannot talk, so shard i takes every N-th of *all* inputs and skips the done ones.
// Dynamic (MPI only): rank 0 hands out chunks of K inputs to whichever rank asks; a server thread
// on rank 0 answers while rank 0 works on chunks of its own. A rank that holds a chunk for longer
// than the timeout is taken as dead or hung and the job is aborted with a message naming it.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/dist/distributed.hpp"
#include "vecbench/dist/distribution_mode.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/results/meta.hpp"
#include "vecbench/strategies/runner.hpp"

namespace vecbench {

/// How the ranks share the inputs.
struct DistributionOptions {
  DistributionMode mode = DistributionMode::static_share;  ///< static | dynamic
  std::size_t chunk = 0;                                   ///< dynamic: inputs per request; 0 = automatic
  double timeout_s = 600;  ///< dynamic: a rank silent this long while holding a chunk is dead
};

/// Every `size`-th element of `v`, from position `rank` on.
inline std::vector<std::size_t> strided_share(const std::vector<std::size_t>& v, int rank, int size) {
  std::vector<std::size_t> out;
  if (size <= 0 || rank < 0) return out;
  out.reserve(v.size() / static_cast<std::size_t>(size) + 1);
  for (std::size_t i = static_cast<std::size_t>(rank); i < v.size(); i += static_cast<std::size_t>(size))
    out.push_back(v[i]);
  return out;
}

/// Index lists on the wire: 8 bytes each, little-endian.
inline std::string encode_indices(const std::vector<std::size_t>& v) {
  std::string s(v.size() * 8, '\0');
  for (std::size_t i = 0; i < v.size(); ++i)
    for (int b = 0; b < 8; ++b)
      s[i * 8 + static_cast<std::size_t>(b)] = static_cast<char>((static_cast<std::uint64_t>(v[i]) >> (8 * b)) & 0xff);
  return s;
}
inline std::vector<std::size_t> decode_indices(const std::string& s) {
  std::vector<std::size_t> v(s.size() / 8);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t x = 0;
    for (int b = 0; b < 8; ++b)
      x |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i * 8 + static_cast<std::size_t>(b)])) << (8 * b);
    v[i] = static_cast<std::size_t>(x);
  }
  return v;
}

/// Adds the figures of one chunk's run to a rank's total (`offset_s`: when the chunk's clock
/// started, on the total's clock).
inline void accumulate_stats(RunStats& t, const RunStats& p, double offset_s) {
  t.images_ok += p.images_ok;
  t.images_failed += p.images_failed;
  t.stages.add(p.stages);
  t.batch_latency_ms.insert(t.batch_latency_ms.end(), p.batch_latency_ms.begin(), p.batch_latency_ms.end());
  if (t.devices.size() < p.devices.size()) t.devices.resize(p.devices.size());
  for (std::size_t i = 0; i < p.devices.size(); ++i) {
    auto& d = t.devices[i];
    d.name = p.devices[i].name;
    d.images += p.devices[i].images;
    d.batches += p.devices[i].batches;
    d.busy_s += p.devices[i].busy_s;
    d.peak_memory_bytes = std::max(d.peak_memory_bytes, p.devices[i].peak_memory_bytes);
  }
  for (const auto& [ts, depth] : p.queue_depth)
    if (t.queue_depth.size() < 100000) t.queue_depth.emplace_back(ts + offset_s, depth);
  t.peak_rss_bytes = std::max(t.peak_rss_bytes, p.peak_rss_bytes);
  t.device_decoded += p.device_decoded;
  t.device_decode_fallbacks += p.device_decode_fallbacks;
  t.decode_threads = std::max(t.decode_threads, p.decode_threads);
}

/// The processes of one command and how they share the work. With one process every call
/// reduces to what a single process does.
class Distribution {
 public:
  /// Collective on a connected group (every rank must construct it).
  Distribution(Comm& comm, DistributionOptions opt);

  Comm& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  /// Several processes share the job.
  bool active() const { return comm_.size() > 1; }
  /// "static", "dynamic", or "shards" (independent processes).
  std::string mode() const { return comm_.connected() ? to_string(opt_.mode) : "shards"; }
  const std::string& host() const { return host_; }
  /// "rank 1 (node07)" or "shard 1 (node07)".
  std::string label() const;
  /// Cores this rank's CPU replicas split (see rank_cpu_cores).
  int cpu_cores() const { return rank_cpu_cores(comm_); }

  /// For result files: {"kind", "ranks", "mode", "chunk", "hosts"}.
  nlohmann::json describe() const;

  /// Inputs per dynamic request: opt.chunk, else N / (16 ranks), between 2 x batch x devices
  /// and max(256, 2 x batch x devices).
  std::size_t chunk_for(std::size_t n, int batch, std::size_t devices) const;

  /// What this process does of `all` (every input not yet done, as rank 0 sees it when
  /// connected: that list is sent to every rank): connected and single: `pending` (rank 0's,
  /// broadcast); shards: this shard's strided share of all `n` inputs, less those done.
  /// `share_size` gets the size of this process's whole share (done or not).
  std::vector<std::size_t> todo(const std::vector<std::size_t>& pending, std::size_t n, std::size_t* share_size) const;

  /// Runs this rank's part of `todo`: connected, `todo` is the same list on every rank and this
  /// rank takes its strided share (static) or the chunks rank 0 hands it (dynamic); otherwise
  /// `todo` is all this process's. Returns this rank's figures (wall time from its first image
  /// to its last; setup not included). `chunks` gets the number of chunks it ran (dynamic).
  RunStats run(const StrategyEntry& strategy, const ImageSource& src, const std::vector<std::size_t>& todo,
               const std::vector<VirtualDevice>& devs, const ModelFactory& factory, ResultSink& sink,
               const RunSettings& s, int input_size, long* chunks = nullptr) const {
    ReplicaPool pool(strategy_devices(strategy, devs), factory);
    return run(strategy, src, todo, pool, sink, s, input_size, chunks);
  }

  /// The same on the replicas of `pool` (kept there for later runs; see run_strategy).
  RunStats run(const StrategyEntry& strategy, const ImageSource& src, const std::vector<std::size_t>& todo,
               ReplicaPool& pool, ResultSink& sink, const RunSettings& s, int input_size,
               long* chunks = nullptr) const {
    if (chunks) *chunks = -1;
    if (!comm_.connected() || !active()) return run_strategy(strategy, src, todo, pool, sink, s, input_size);
    if (opt_.mode == DistributionMode::static_share) {
      const auto share = strided_share(todo, rank(), size());
      if (share.empty()) return RunStats{};
      return run_strategy(strategy, src, share, pool, sink, s, input_size);
    }
    return run_dynamic(strategy, src, todo, pool, sink, s, input_size, chunks);
  }

 private:
  /// Dynamic: every replica of the pool is made and warm before the first request; then each
  /// chunk is one run on the same pool (no warm-up: the replicas are warm).
  RunStats run_dynamic(const StrategyEntry& strategy, const ImageSource& src, const std::vector<std::size_t>& todo,
                       ReplicaPool& pool, ResultSink& sink, const RunSettings& s, int input_size, long* chunks) const;

  Comm& comm_;
  DistributionOptions opt_;
  std::string host_;
  std::vector<std::string> hosts_;
};

}  // namespace vecbench
