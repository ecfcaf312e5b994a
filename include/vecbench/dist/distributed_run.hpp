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

namespace detail {

/// Rank 0's side of the dynamic mode: hands out chunks of `todo` to the other ranks (serve(),
/// in a thread of its own) and to rank 0 itself (take_local()).
class ChunkServer {
 public:
  ChunkServer(Comm& comm, const std::vector<std::size_t>& todo, std::size_t chunk, double timeout_s,
              const std::atomic<bool>* stop, std::vector<std::string> hosts)
      : comm_(comm),
        todo_(todo),
        chunk_(std::max<std::size_t>(1, chunk)),
        timeout_s_(timeout_s),
        stop_(stop),
        hosts_(std::move(hosts)) {}

  /// The next chunk for rank 0 itself; empty when none is left.
  std::vector<std::size_t> take_local() { return next(); }

  /// Answers requests until every other rank was told that nothing is left, or left.
  void serve() {
    const int n = comm_.size();
    int active = n - 1;
    std::vector<bool> holding(static_cast<std::size_t>(n), false);
    std::vector<Clock::time_point> since(static_cast<std::size_t>(n), Clock::now());
    std::vector<std::size_t> held_first(static_cast<std::size_t>(n), 0), held_size(static_cast<std::size_t>(n), 0);
    while (active > 0) {
      int src = -1;
      std::string msg;
      bool got;
      {
        TraceSpan wait(SpanKind::wait_input);  // the chunk server waits for a rank's request
        got = comm_.recv(src, kTagRequest, msg, 0.2);
      }
      if (got) {
        const auto r = static_cast<std::size_t>(src);
        holding[r] = false;
        if (msg == "leave") {
          --active;
          continue;
        }
        const auto c = next();
        comm_.send(src, kTagWork, encode_indices(c));
        if (c.empty()) {
          --active;
        } else {
          holding[r] = true;
          since[r] = Clock::now();
          held_first[r] = c.front();
          held_size[r] = c.size();
        }
      }
      if (timeout_s_ <= 0) continue;
      for (int r = 1; r < n; ++r) {
        const auto k = static_cast<std::size_t>(r);
        if (holding[k] && seconds_since(since[k]) > timeout_s_) {
          std::ostringstream m;
          m << "vecbench: error: rank 0: rank " << r << " (" << (k < hosts_.size() ? hosts_[k] : "?")
            << ") has held a chunk of " << held_size[k] << " inputs (from input " << held_first[k] << ") for more than "
            << timeout_s_ << " s without asking for more: it died or hung; aborting the job "
            << "(a rerun resumes; raise --rank-timeout for slow ranks)";
          comm_.abort(m.str(), 1);
        }
      }
    }
  }

 private:
  std::vector<std::size_t> next() {
    std::lock_guard<std::mutex> lk(m_);
    if (stop_ && stop_->load()) return {};
    const std::size_t end = std::min(todo_.size(), pos_ + chunk_);
    std::vector<std::size_t> c(todo_.begin() + static_cast<std::ptrdiff_t>(pos_),
                               todo_.begin() + static_cast<std::ptrdiff_t>(end));
    pos_ = end;
    return c;
  }

  Comm& comm_;
  const std::vector<std::size_t>& todo_;
  std::size_t chunk_;
  double timeout_s_;
  const std::atomic<bool>* stop_;
  std::vector<std::string> hosts_;
  std::mutex m_;
  std::size_t pos_ = 0;
};

}  // namespace detail

/// The processes of one command and how they share the work. With one process every call
/// reduces to what a single process does.
class Distribution {
 public:
  /// Collective on a connected group (every rank must construct it).
  Distribution(Comm& comm, DistributionOptions opt) : comm_(comm), opt_(std::move(opt)) {
    if (opt_.mode == DistributionMode::dynamic_chunks && comm_.size() > 1 && !comm_.connected())
      throw ConfigError("--distribution",
                        "dynamic needs MPI (start vecbench with mpirun or srun --mpi=pmix in an MPI "
                        "build); shards without MPI can only be static");
    host_ = host_name();
    hosts_ = comm_.gather(host_);
  }

  Comm& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  /// Several processes share the job.
  bool active() const { return comm_.size() > 1; }
  /// "static", "dynamic", or "shards" (independent processes).
  std::string mode() const { return comm_.connected() ? to_string(opt_.mode) : "shards"; }
  const std::string& host() const { return host_; }
  /// "rank 1 (node07)" or "shard 1 (node07)".
  std::string label() const {
    return std::string(comm_.connected() ? "rank " : "shard ") + std::to_string(rank()) + " (" + host_ + ")";
  }
  /// Cores this rank's CPU replicas split (see rank_cpu_cores).
  int cpu_cores() const { return rank_cpu_cores(comm_); }

  /// For result files: {"kind", "ranks", "mode", "chunk", "hosts"}.
  nlohmann::json describe() const {
    nlohmann::json j = {{"kind", comm_.kind()}, {"ranks", size()}, {"mode", mode()}};
    if (comm_.connected() && opt_.mode == DistributionMode::dynamic_chunks)
      j["chunk"] = opt_.chunk > 0 ? nlohmann::json(opt_.chunk) : nlohmann::json("auto");
    if (comm_.connected())
      j["hosts"] = hosts_;
    else
      j["shard_index"] = rank();
    return j;
  }

  /// Inputs per dynamic request: opt.chunk, else N / (16 ranks), between 2 x batch x devices
  /// and max(256, 2 x batch x devices).
  std::size_t chunk_for(std::size_t n, int batch, std::size_t devices) const {
    if (opt_.chunk > 0) return opt_.chunk;
    const std::size_t lo = 2 * static_cast<std::size_t>(std::max(1, batch)) * std::max<std::size_t>(1, devices);
    const std::size_t want = (n + 16 * static_cast<std::size_t>(size()) - 1) / (16 * static_cast<std::size_t>(size()));
    return std::max(lo, std::min(want, std::max<std::size_t>(256, lo)));
  }

  /// What this process does of `all` (every input not yet done, as rank 0 sees it when
  /// connected: that list is sent to every rank): connected and single: `pending` (rank 0's,
  /// broadcast); shards: this shard's strided share of all `n` inputs, less those done.
  /// `share_size` gets the size of this process's whole share (done or not).
  std::vector<std::size_t> todo(const std::vector<std::size_t>& pending, std::size_t n, std::size_t* share_size) const {
    if (comm_.connected() && active()) {
      auto v = decode_indices(comm_.broadcast(rank() == 0 ? encode_indices(pending) : std::string()));
      if (share_size) *share_size = n;
      return v;
    }
    if (!active()) {
      if (share_size) *share_size = n;
      return pending;
    }
    const auto mine = strided_share(all_indices(n), rank(), size());
    if (share_size) *share_size = mine.size();
    std::vector<bool> open(n, false);
    for (auto i : pending) open[i] = true;
    std::vector<std::size_t> v;
    for (auto i : mine)
      if (open[i]) v.push_back(i);
    return v;
  }

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
                       ReplicaPool& pool, ResultSink& sink, const RunSettings& s, int input_size, long* chunks) const {
    std::exception_ptr error;
    RunStats total;
    Clock::time_point t0 = Clock::now();
    long n_chunks = 0;
    RunSettings later = s;
    later.warmup_batches = 0;
    bool loaded = false;
    const std::size_t n_devices = strategy_devices(strategy, pool.devices()).size();
    auto load = [&] {  // every replica loaded and warm before the first request
      total = prepare_replicas(pool, n_devices, s);
      loaded = true;
      t0 = Clock::now();
    };
    auto run_chunk = [&](const std::vector<std::size_t>& c) {
      const double at = seconds_since(t0);
      const RunStats part = run_strategy(strategy, src, c, pool, sink, later, input_size);
      accumulate_stats(total, part, at + part.setup_s);
      ++n_chunks;
    };
    const std::size_t chunk = chunk_for(todo.size(), s.batch_size, n_devices);
    if (rank() == 0) {
      detail::ChunkServer server(comm_, todo, chunk, opt_.timeout_s, s.stop, hosts_);
      if (comm_.threads_ok()) {
        std::thread t([&] {
          TraceThread lane(s.trace, "chunk server");
          server.serve();
        });
        try {
          load();
          for (auto c = server.take_local(); !c.empty(); c = server.take_local()) run_chunk(c);
        } catch (...) {
          error = std::current_exception();
        }
        t.join();
      } else {
        TraceThread lane(s.trace, "chunk server");
        server.serve();  // MPI without thread support: rank 0 only serves
      }
    } else {
      bool told_done = false;
      try {
        load();
        while (!(s.stop && s.stop->load())) {
          comm_.send(0, kTagRequest, "more");
          std::string reply;
          int src0 = 0;
          if (!comm_.recv(src0, kTagWork, reply, opt_.timeout_s > 0 ? opt_.timeout_s : -1)) {
            std::ostringstream m;
            m << "vecbench: error: " << label() << ": no answer from rank 0 for " << opt_.timeout_s
              << " s: it died or hung; aborting the job";
            comm_.abort(m.str(), 1);
          }
          const auto c = decode_indices(reply);
          if (c.empty()) {
            told_done = true;
            break;
          }
          run_chunk(c);
        }
      } catch (...) {
        error = std::current_exception();
      }
      if (!told_done) comm_.send(0, kTagRequest, "leave");
    }
    if (error) std::rethrow_exception(error);
    if (loaded) total.wall_s = seconds_since(t0);
    for (auto& d : total.devices) d.busy_fraction = total.wall_s > 0 ? d.busy_s / total.wall_s : 0.0;
    if (chunks) *chunks = n_chunks;
    return total;
  }

  Comm& comm_;
  DistributionOptions opt_;
  std::string host_;
  std::vector<std::string> hosts_;
};

}  // namespace vecbench
