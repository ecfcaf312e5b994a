// The base that sharded, data-parallel and mirrored share (like faiss's ThreadedIndex under
// IndexShards / IndexReplicas): one worker thread per device, each owning its replica.
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
  void rethrow_if_any() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex m_;
  std::exception_ptr first_;
  std::atomic<bool> failed_{false};
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
  std::mutex m_;
  std::condition_variable cv_;
  int state_ = 0;
};

/// Hooks of one threaded run.
struct ReplicaRun {
  /// Body of worker `i` (device ctx.devices[i]) once every replica is ready.
  std::function<void(std::size_t, Model&)> worker;
  /// Runs in the calling thread once every replica is ready (may be empty).
  std::function<void()> coordinator;
  /// Called once on the first error anywhere: wake every blocked thread (abort queues).
  std::function<void()> on_abort;
};

/// Starts one thread per device; each makes and warms its replica, then all wait until every
/// replica is ready; then the clock starts and the workers (and the coordinator in this thread)
/// run. The first exception aborts the others through `on_abort`; every thread is joined
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
  };
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        auto model = make_replica(ctx, ctx.devices[i]);
        {
          std::lock_guard<std::mutex> lk(ready_m);
          ++ready;
          ready_cv.notify_all();
        }
        if (!start.wait()) return;
        r.worker(i, *model);
        ctx.metrics.set_peak_memory(i, model->peak_memory_bytes());
      } catch (...) {
        fail();
        std::lock_guard<std::mutex> lk(ready_m);
        ready_cv.notify_all();
      }
    });
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
        r.coordinator();
      } catch (...) {
        fail();
      }
    }
  }
  for (auto& t : threads) t.join();
  errors.rethrow_if_any();
}

}  // namespace vecbench
