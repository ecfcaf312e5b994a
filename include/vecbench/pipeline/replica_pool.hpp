// The replica pool: one long-lived DeviceWorker per device, each owning its replica for the life
// of the pool. Strategies hand their per-device work to the workers; several runs (the chunks of
// a dynamic MPI job, the runs of an experiment) reuse the same replicas.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "vecbench/pipeline/device_worker.hpp"

namespace vecbench {

class ReplicaPool {
 public:
  /// Starts one worker per device; no replica is made until a job asks for it.
  ReplicaPool(const std::vector<VirtualDevice>& devices, ModelFactory factory)
      : devices_(devices), factory_(std::make_shared<const ModelFactory>(std::move(factory))) {
    workers_.reserve(devices_.size());
    for (const auto& d : devices_) workers_.push_back(std::make_unique<DeviceWorker>(d, factory_));
  }
  ~ReplicaPool() { shutdown(); }
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  std::size_t size() const { return workers_.size(); }
  const std::vector<VirtualDevice>& devices() const { return devices_; }
  DeviceWorker& worker(std::size_t i) { return *workers_.at(i); }

  /// Held for the whole of one run: the jobs of a run wait for each other (every replica ready
  /// before the clock starts), so two runs interleaved on the workers could deadlock.
  std::unique_lock<std::mutex> lease() { return std::unique_lock<std::mutex>(run_m_); }

  /// Shuts every worker down (each runs its queued jobs first) after the current run. Idempotent.
  void shutdown() {
    std::lock_guard<std::mutex> lk(run_m_);
    for (auto& w : workers_) w->shutdown();
  }

 private:
  std::vector<VirtualDevice> devices_;                  ///< device of worker i, in order
  std::shared_ptr<const ModelFactory> factory_;         ///< one factory for every worker
  std::vector<std::unique_ptr<DeviceWorker>> workers_;  ///< one per device
  std::mutex run_m_;                                    ///< one run (lease) at a time
};

}  // namespace vecbench
