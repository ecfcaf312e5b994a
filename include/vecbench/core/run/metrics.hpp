// Run metrics: stage times, per-device work, per-batch latency, queue depth, peak memory.
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/run/stats.hpp"
#include "vecbench/core/run/trace.hpp"

namespace vecbench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Pipeline stages, in data-flow order.
enum class Stage { read, decode, resize, assemble, h2d, forward, d2h, write };
inline constexpr std::size_t kStageCount = 8;
inline constexpr std::array<const char*, kStageCount> kStageNames = {"read", "decode",  "resize", "assemble",
                                                                     "h2d",  "forward", "d2h",    "write"};

/// Seconds per stage, summed over images (and threads: totals can exceed wall time).
struct StageTimes {
  std::array<double, kStageCount> s{};
  double& operator[](Stage st) { return s[static_cast<std::size_t>(st)]; }
  double operator[](Stage st) const { return s[static_cast<std::size_t>(st)]; }
  void add(const StageTimes& o) {
    for (std::size_t i = 0; i < kStageCount; ++i) s[i] += o.s[i];
  }
};

/// Adds the time of a scope to a stage, and records it as a span of the calling thread's trace
/// lane when it has one (core/run/trace.hpp).
class StageTimer {
 public:
  StageTimer(StageTimes& t, Stage st) : t_(t), st_(st), t0_(Clock::now()) {}
  ~StageTimer() {
    const auto t1 = Clock::now();
    t_[st_] += std::chrono::duration<double>(t1 - t0_).count();
    if (TraceLane* l = detail::tls_trace_lane())
      l->add(static_cast<SpanKind>(st_),
             std::chrono::duration_cast<std::chrono::nanoseconds>(t0_.time_since_epoch()).count(),
             std::chrono::duration_cast<std::chrono::nanoseconds>(t1.time_since_epoch()).count());
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  StageTimes& t_;
  Stage st_;
  Clock::time_point t0_;
};

/// Figures of one device over a run.
struct DeviceStats {
  std::string name;
  std::size_t images = 0;
  std::size_t batches = 0;
  double busy_s = 0.0;                ///< time inside forward calls (copies included)
  double busy_fraction = 0.0;         ///< busy_s / wall_s
  std::size_t peak_memory_bytes = 0;  ///< device memory peak (0 on CPU)
};

/// Snapshot of a finished run.
struct RunStats {
  double wall_s = 0.0;   ///< from all replicas ready to last result delivered
  double setup_s = 0.0;  ///< model loading and warm-up before the clock starts
  std::size_t images_ok = 0;
  std::size_t images_failed = 0;
  StageTimes stages;
  std::vector<double> batch_latency_ms;
  std::vector<DeviceStats> devices;
  std::vector<std::pair<double, std::size_t>> queue_depth;  ///< (seconds since start, depth)
  std::size_t peak_rss_bytes = 0;
  /// `--decode gpu`: JPEGs the replicas decoded on their device, and those they handed to the
  /// host decoder (rejected by the device decoder, or a host replica); both 0 when not used.
  std::size_t device_decoded = 0;
  std::size_t device_decode_fallbacks = 0;
  /// data-parallel: decode threads at the end of the run (more than asked where the balancer added some).
  std::size_t decode_threads = 0;
  double images_per_s() const { return wall_s > 0 ? static_cast<double>(images_ok) / wall_s : 0.0; }
  double latency_percentile_ms(double q) const { return stats::percentile(batch_latency_ms, q); }
};

/// Peak resident set size of this process (VmHWM), in bytes; 0 where unknown.
inline std::size_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

/// Resets the kernel's peak-RSS mark so that a run measures its own peak (Linux; best effort).
inline void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";
}

/// Thread-safe collector used by the strategies while a run goes on.
class Metrics {
 public:
  explicit Metrics(const std::vector<std::string>& device_names) {
    for (const auto& n : device_names) stats_.devices.push_back(DeviceStats{n});
    created_ = Clock::now();
    start_ = created_;
  }
  /// Starts the clock: all replicas are loaded and warm.
  void mark_start() {
    std::lock_guard<std::mutex> lk(m_);
    start_ = Clock::now();
    stats_.setup_s = std::chrono::duration<double>(start_ - created_).count();
    started_ = true;
  }
  void add_stages(const StageTimes& t) {
    std::lock_guard<std::mutex> lk(m_);
    stats_.stages.add(t);
  }
  void add_batch(std::size_t device, std::size_t images, double busy_s, double latency_ms) {
    std::lock_guard<std::mutex> lk(m_);
    auto& d = stats_.devices.at(device);
    d.images += images;
    d.batches += 1;
    d.busy_s += busy_s;
    stats_.batch_latency_ms.push_back(latency_ms);
  }
  void add_result(bool ok) {
    std::lock_guard<std::mutex> lk(m_);
    (ok ? stats_.images_ok : stats_.images_failed) += 1;
  }
  void add_device_decode(std::size_t on_device, std::size_t fallbacks) {
    std::lock_guard<std::mutex> lk(m_);
    stats_.device_decoded += on_device;
    stats_.device_decode_fallbacks += fallbacks;
  }
  void set_decode_threads(std::size_t n) {
    std::lock_guard<std::mutex> lk(m_);
    stats_.decode_threads = n;
  }
  void set_peak_memory(std::size_t device, std::size_t bytes) {
    std::lock_guard<std::mutex> lk(m_);
    stats_.devices.at(device).peak_memory_bytes = bytes;
  }
  void sample_queue(std::size_t depth) {
    std::lock_guard<std::mutex> lk(m_);
    if (stats_.queue_depth.size() < 100000)
      stats_.queue_depth.emplace_back(std::chrono::duration<double>(Clock::now() - start_).count(), depth);
  }
  /// When the clock started (creation, until mark_start).
  Clock::time_point start_time() {
    std::lock_guard<std::mutex> lk(m_);
    return start_;
  }
  /// Stops the clock and returns the figures.
  RunStats finish() {
    std::lock_guard<std::mutex> lk(m_);
    if (!started_) {
      start_ = Clock::now();
      stats_.setup_s = std::chrono::duration<double>(start_ - created_).count();
    }
    stats_.wall_s = std::chrono::duration<double>(Clock::now() - start_).count();
    for (auto& d : stats_.devices) d.busy_fraction = stats_.wall_s > 0 ? d.busy_s / stats_.wall_s : 0.0;
    stats_.peak_rss_bytes = peak_rss_bytes();
    return stats_;
  }

 private:
  std::mutex m_;
  RunStats stats_;
  Clock::time_point created_, start_;
  bool started_ = false;
};

}  // namespace vecbench
