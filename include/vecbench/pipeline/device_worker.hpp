// A long-lived worker thread per device that owns its model replica (faiss's WorkerThread shape):
// the replica is made in that thread on first use and every job submitted to the worker runs in
// that same thread, because LibTorch's inference mode, JIT executor and intra-op thread count are
// per thread. Jobs return futures; a job's exception reaches whoever waits on its future.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench {

/// What a job on a DeviceWorker gets: its device and its replica. Only the worker's thread
/// touches it, so nothing here is locked.
class Replica {
 public:
  Replica(VirtualDevice device, std::shared_ptr<const ModelFactory> factory)
      : device_(std::move(device)), factory_(std::move(factory)) {}

  const VirtualDevice& device() const { return device_; }
  /// The replica has been made (and not dropped).
  bool loaded() const { return model_ != nullptr; }
  /// Times the factory made a replica for this worker.
  int times_made() const { return times_made_; }

  /// The replica; made by the factory on first use, in the calling (worker) thread. A failed
  /// make throws ReplicaError naming the device and is tried again by the next call.
  Model& model() {
    if (model_) return *model_;
    try {
      auto m = (*factory_)(device_);
      if (!m) throw ReplicaError("model factory returned no model");
      model_ = std::move(m);
    } catch (const std::exception& e) {
      throw ReplicaError(device_.name() + ": " + e.what());
    }
    ++times_made_;
    return *model_;
  }

  /// Destroys the replica (the worker does so in its own thread when it shuts down).
  void drop() { model_.reset(); }

 private:
  VirtualDevice device_;                         ///< the device the replica runs on
  std::shared_ptr<const ModelFactory> factory_;  ///< makes the replica (shared by the pool)
  std::unique_ptr<Model> model_;                 ///< the replica; null until first use
  int times_made_ = 0;                           ///< successful factory calls
};

/// One thread for the life of the object that runs submitted jobs in order, each on the
/// thread's Replica. shutdown() (also the destructor) refuses new jobs, runs the queued ones,
/// destroys the replica in the worker thread, and joins it.
class DeviceWorker {
 public:
  DeviceWorker(VirtualDevice device, std::shared_ptr<const ModelFactory> factory)
      : replica_(std::move(device), std::move(factory)), thread_([this] { loop(); }), id_(thread_.get_id()) {}
  ~DeviceWorker() { shutdown(); }
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  const VirtualDevice& device() const { return replica_.device(); }
  /// The worker thread's id (where the replica is made and every job runs).
  std::thread::id thread_id() const { return id_; }

  /// Queues `job(Replica&)` and returns the future of its result (or of its exception).
  /// Throws ReplicaError if the worker is shut down.
  template <class F>
  auto submit(F job) -> std::future<std::invoke_result_t<F&, Replica&>> {
    using R = std::invoke_result_t<F&, Replica&>;
    auto task = std::make_shared<std::packaged_task<R(Replica&)>>(std::move(job));
    auto future = task->get_future();
    {
      std::lock_guard<std::mutex> lk(m_);
      if (stopping_) throw ReplicaError(device().name() + ": device worker is shut down");
      jobs_.emplace_back([task](Replica& r) { (*task)(r); });
    }
    cv_.notify_one();
    return future;
  }

  /// Refuses new jobs, runs the queued ones, drops the replica and joins. Idempotent.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    cv_.notify_one();
    std::lock_guard<std::mutex> lk(join_m_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void(Replica&)> job;
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) break;  // stopping, and every queued job has run
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(replica_);  // a packaged_task: the job's exception goes to its future
    }
    replica_.drop();
  }

  Replica replica_;                                 ///< touched only by the worker thread
  std::mutex m_;                                    ///< guards jobs_ and stopping_
  std::condition_variable cv_;                      ///< a job arrived or shutdown began
  std::deque<std::function<void(Replica&)>> jobs_;  ///< queued jobs, oldest first
  bool stopping_ = false;                           ///< shutdown() was called
  std::mutex join_m_;                               ///< one joiner at a time
  std::thread thread_;                              ///< started last, after every field above
  std::thread::id id_;                              ///< thread_'s id, fixed at construction
};

/// Futures of jobs that refer to the caller's locals: wait() waits for every one and then
/// rethrows the first failure; the destructor waits too, so no job outlives what it refers to.
class JobGroup {
 public:
  JobGroup() = default;
  JobGroup(const JobGroup&) = delete;
  JobGroup& operator=(const JobGroup&) = delete;
  ~JobGroup() {
    for (auto& f : futures_)
      if (f.valid()) f.wait();
  }

  void add(std::future<void> f) { futures_.push_back(std::move(f)); }

  /// Waits for every job (never leaves one running), then rethrows the first exception.
  void wait() {
    std::exception_ptr first;
    for (auto& f : futures_) {
      if (!f.valid()) continue;
      try {
        f.get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    futures_.clear();
    if (first) std::rethrow_exception(first);
  }

 private:
  std::vector<std::future<void>> futures_;  ///< one per submitted job, in submission order
};

}  // namespace vecbench
