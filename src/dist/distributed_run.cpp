// How the processes of a job share the inputs (dist/distributed_run.hpp), compiled once: the
// chunk server of dynamic mode and the Distribution's runs.
#include "vecbench/dist/distributed_run.hpp"

#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace vecbench {

namespace {

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

}  // namespace

Distribution::Distribution(Comm& comm, DistributionOptions opt) : comm_(comm), opt_(std::move(opt)) {
  if (opt_.mode == DistributionMode::dynamic_chunks && comm_.size() > 1 && !comm_.connected())
    throw ConfigError("--distribution",
                      "dynamic needs MPI (start vecbench with mpirun or srun --mpi=pmix in an MPI "
                      "build); shards without MPI can only be static");
  host_ = host_name();
  hosts_ = comm_.gather(host_);
}

std::string Distribution::label() const {
  return std::string(comm_.connected() ? "rank " : "shard ") + std::to_string(rank()) + " (" + host_ + ")";
}

nlohmann::json Distribution::describe() const {
  nlohmann::json j = {{"kind", comm_.kind()}, {"ranks", size()}, {"mode", mode()}};
  if (comm_.connected() && opt_.mode == DistributionMode::dynamic_chunks)
    j["chunk"] = opt_.chunk > 0 ? nlohmann::json(opt_.chunk) : nlohmann::json("auto");
  if (comm_.connected())
    j["hosts"] = hosts_;
  else
    j["shard_index"] = rank();
  return j;
}

std::size_t Distribution::chunk_for(std::size_t n, int batch, std::size_t devices) const {
  if (opt_.chunk > 0) return opt_.chunk;
  const std::size_t lo = 2 * static_cast<std::size_t>(std::max(1, batch)) * std::max<std::size_t>(1, devices);
  const std::size_t want = (n + 16 * static_cast<std::size_t>(size()) - 1) / (16 * static_cast<std::size_t>(size()));
  return std::max(lo, std::min(want, std::max<std::size_t>(256, lo)));
}

std::vector<std::size_t> Distribution::todo(const std::vector<std::size_t>& pending, std::size_t n,
                                            std::size_t* share_size) const {
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

RunStats Distribution::run_dynamic(const StrategyEntry& strategy, const ImageSource& src,
                                   const std::vector<std::size_t>& todo, ReplicaPool& pool, ResultSink& sink,
                                   const RunSettings& s, int input_size, long* chunks) const {
  std::exception_ptr error;
  RunStats total;
  Clock::time_point t0 = Clock::now();
  long n_chunks = 0;
  RunSettings later = s;
  later.warmup_batches = 0;
  bool loaded = false;
  const std::size_t n_devices = strategy_devices(strategy, pool.devices()).size();
  auto load = [&] {  // every replica loaded and warm (its device decoder too) before the first request
    RunSettings first = s;
    add_decode_warmup(first, src, todo, input_size);
    total = prepare_replicas(pool, n_devices, first);
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
    ChunkServer server(comm_, todo, chunk, opt_.timeout_s, s.stop, hosts_);
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

}  // namespace vecbench
