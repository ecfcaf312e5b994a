// The base that every strategy shares (like faiss's ThreadedIndex under IndexShards /
// IndexReplicas): each device's work runs as a job on that device's long-lived worker in the
// run's ReplicaPool, on the replica the worker owns.
#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "vecbench/pipeline/strategy.hpp"

namespace vecbench {

/// Collects the first exception of many threads; later ones are dropped.
class ErrorCollector {
 public:
  /// Records the current exception; returns true if it is the first.
  bool capture() {
    std::lock_guard<std::mutex> lk(m_);
    if (first_) return false;
    first_ = std::current_exception();
    failed_ = true;
    return true;
  }
  bool failed() const { return failed_.load(); }
  /// Rethrows the first recorded exception, if any.
  void rethrow_if_any() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex m_;                     ///< guards first_
  std::exception_ptr first_;         ///< the first exception captured
  std::atomic<bool> failed_{false};  ///< first_ is set (readable without the lock)
};

/// A one-shot gate: threads wait until it opens or is aborted.
class Gate {
 public:
  void open() { set(1); }
  void abort() { set(2); }
  /// Blocks until opened (true) or aborted (false).
  bool wait() {
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] { return state_ != 0; });
    return state_ == 1;
  }

 private:
  void set(int s) {
    std::lock_guard<std::mutex> lk(m_);
    if (state_ == 0) state_ = s;
    cv_.notify_all();
  }
  std::mutex m_;                ///< guards state_
  std::condition_variable cv_;  ///< state_ left 0
  int state_ = 0;               ///< 0 closed, 1 open, 2 aborted
};

/// Hooks of one threaded run.
struct ReplicaRun {
  /// Body of worker `i` (device ctx.devices[i]) once every replica is ready.
  std::function<void(std::size_t, Model&)> worker;
  /// Runs in the calling thread once every replica is ready (may be empty).
  std::function<void()> coordinator;
  /// With RunSettings::overlap_setup: runs in the calling thread as soon as the replicas' jobs
  /// are submitted, while they build (may be empty; data-parallel starts its decoders here).
  std::function<void()> prelude;
  /// Called once on the first error anywhere: wake every blocked thread (abort queues).
  std::function<void()> on_abort;
  /// The coordinator's trace lane ("writer" where it delivers the results).
  std::string coordinator_lane = "coordinator";
};

/// Runs one job per device on the run's workers (worker i for ctx.devices[i]): each job gets its
/// replica (made once for the life of the pool) and warms it up, then all wait until every
/// replica is ready; then the clock starts and the workers (and the coordinator in this thread)
/// run. The first exception aborts the others through `on_abort`; every job has finished
/// before it is rethrown.
inline void run_replicas(RunContext& ctx, const ReplicaRun& r) {
  const std::size_t n = ctx.devices.size();
  ErrorCollector errors;
  Gate start;
  std::mutex ready_m;
  std::condition_variable ready_cv;
  std::size_t ready = 0;
  auto fail = [&] {
    if (errors.capture()) {
      start.abort();
      if (r.on_abort) r.on_abort();
    }
    std::lock_guard<std::mutex> lk(ready_m);
    ready_cv.notify_all();
  };
  {
    JobGroup jobs;  // declared after what the jobs refer to: waits for them on every way out
    try {
      for (std::size_t i = 0; i < n; ++i)
        jobs.add(ctx.pool.worker(i).submit([&, i](Replica& rep) {
          try {
            TraceThread lane(ctx.settings.trace, ctx.device_lane(i), static_cast<int>(i));
            Model& model = prepare_replica(rep, ctx.settings);
            {
              std::lock_guard<std::mutex> lk(ready_m);
              ++ready;
              ready_cv.notify_all();
            }
            if (!start.wait()) return;
            r.worker(i, model);
            ctx.metrics.set_peak_memory(i, model.peak_memory_bytes());
          } catch (...) {
            fail();
          }
        }));
    } catch (...) {
      fail();  // a worker refused the job (shut down): the jobs already queued are aborted
    }
    if (r.prelude && ctx.settings.overlap_setup && !errors.failed()) {
      try {
        r.prelude();
      } catch (...) {
        fail();
      }
    }
    {
      std::unique_lock<std::mutex> lk(ready_m);
      ready_cv.wait(lk, [&] { return ready == n || errors.failed(); });
    }
    if (!errors.failed()) {
      ctx.metrics.mark_start();
      start.open();
      if (r.coordinator) {
        try {
          TraceThread lane(ctx.settings.trace, r.coordinator_lane);
          r.coordinator();
        } catch (...) {
          fail();
        }
      }
    }
    jobs.wait();  // the jobs catch their own errors: this only waits
  }
  errors.rethrow_if_any();
}

/// Makes (where not made yet) and warms up the replicas of `pool`'s first `n` workers in
/// parallel, outside any run: the clock of a later run on the pool then starts at once. Returns
/// figures with only setup_s, the device names and their peak memory filled. Throws the first
/// failure after every job has finished.
inline RunStats prepare_replicas(ReplicaPool& pool, std::size_t n, const RunSettings& s) {
  auto lease = pool.lease();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back(pool.devices().at(i).name());
  reset_peak_rss();
  Metrics metrics(names);
  {
    JobGroup jobs;
    for (std::size_t i = 0; i < n; ++i)
      jobs.add(pool.worker(i).submit([&, i](Replica& rep) {
        TraceThread lane(s.trace, "device " + std::to_string(i) + " (" + rep.device().name() + ")",
                         static_cast<int>(i));
        Model& m = prepare_replica(rep, s);
        metrics.set_peak_memory(i, m.peak_memory_bytes());
      }));
    jobs.wait();
  }
  metrics.mark_start();
  RunStats st = metrics.finish();
  st.wall_s = 0;
  return st;
}

}  // namespace vecbench
