// Progress of a long run: done/total, throughput (recent and overall), ETA and failures. On a
// terminal one line is redrawn in place; otherwise (a log file, a batch job) a plain line is
// printed every `interval_s`. It watches the outcomes on their way to the real sink.
#pragma once
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <utility>

#include "vecbench/core/run/sink.hpp"

namespace vecbench {

/// How progress is shown.
struct ProgressOptions {
  double interval_s = 30;  ///< seconds between plain lines (not a terminal); <= 0: no progress at all
  bool terminal = false;   ///< redraw one line in place, twice a second
  std::string label;       ///< put after "vecbench: " (e.g. "rank 0: ")
  /// Several processes: the other ranks' (done, failed), added to this one's in each line (rank 0
  /// of an MPI job shows the job's totals; dist/job_progress.hpp). Empty: this process only.
  std::function<std::pair<std::size_t, std::size_t>()> remote;
  /// Called with this process's (done, failed) every `publish_every_s` instead of drawing a
  /// line (the other ranks of an MPI job send their counts to rank 0).
  std::function<void(std::size_t, std::size_t)> publish;
  double publish_every_s = 1.0;
  /// Tests: the display thread draws a line (or publishes) only when ProgressSink::tick() asks,
  /// never on its timer, so that a test decides when each line is made, whatever the load.
  bool manual_ticks = false;
};

/// "1h02m", "4m05s", "12s"; "?" when not finite.
inline std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char b[32];
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60)
    std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%lds", t);
  return b;
}

/// The progress text: "120/1000 (12.0%), 21.3 img/s now, 20.1 overall, ETA 43s, 2 failed".
inline std::string progress_text(std::size_t done, std::size_t total, std::size_t failed, double recent_ips,
                                 double overall_ips) {
  char b[160];
  const double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  const double left = static_cast<double>(total > done ? total - done : 0);
  const double rate = recent_ips > 0 ? recent_ips : overall_ips;
  std::snprintf(b, sizeof b, "%zu/%zu (%.1f%%), %.1f img/s now, %.1f overall, ETA %s, %zu failed", done, total, pct,
                recent_ips, overall_ips, format_duration(rate > 0 ? left / rate : (left == 0 ? 0 : NAN)).c_str(),
                failed);
  return b;
}

/// Passes every outcome to `inner` and counts it; a thread shows the counts as it goes.
class ProgressSink : public ResultSink {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressSink(ResultSink& inner, std::size_t total, ProgressOptions opt, std::ostream& out)
      : inner_(inner), total_(total), opt_(std::move(opt)), out_(out), start_(Clock::now()) {
    if (opt_.interval_s > 0 || opt_.publish) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressSink() override { stop(); }
  ProgressSink(const ProgressSink&) = delete;
  ProgressSink& operator=(const ProgressSink&) = delete;

  void on_features(std::size_t index, const float* f, int dim) override {
    inner_.on_features(index, f, dim);
    ++done_;
  }
  void on_error(std::size_t index, const std::string& message) override {
    inner_.on_error(index, message);
    ++failed_;
    ++done_;
  }
  /// Ends the display (a terminal line is finished with a newline). Safe to call twice.
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (opt_.publish) opt_.publish(done_, failed_);  // the final counts
    if (opt_.terminal && shown_ && !opt_.publish) out_ << ("\r" + line() + "\x1b[K\n") << std::flush;
  }
  std::size_t done() const { return done_; }
  std::size_t failed() const { return failed_; }
  /// With `manual_ticks`: one tick of the display thread, as its timer would give it; returns once
  /// its line is drawn (or its counts published). False when there is no display thread or it stopped.
  bool tick() {
    std::unique_lock<std::mutex> lk(m_);
    if (stopped_ || !thread_.joinable() || !opt_.manual_ticks) return false;
    const std::uint64_t want = ++asked_;
    cv_.notify_all();
    cv_.wait(lk, [&] { return stopped_ || made_ >= want; });
    return made_ >= want;
  }

 private:
  std::string line() {
    const auto now = Clock::now();
    std::size_t d = done_, failed = failed_;
    if (opt_.remote) {
      const auto [rd, rf] = opt_.remote();
      d += rd, failed += rf;
    }
    const double el = std::chrono::duration<double>(now - start_).count();
    // Recent rate: over the last ~10 s of samples.
    samples_.emplace_back(now, d);
    while (samples_.size() > 2 && now - samples_.front().first > std::chrono::seconds(10)) samples_.pop_front();
    const double span = std::chrono::duration<double>(now - samples_.front().first).count();
    const double recent = span > 0.2 ? static_cast<double>(d - samples_.front().second) / span : 0.0;
    return "vecbench: " + opt_.label + progress_text(d, total_, failed, recent, el > 0 ? d / el : 0.0);
  }
  void loop() {
    const double s = opt_.publish    ? opt_.publish_every_s
                     : opt_.terminal ? std::min(0.5, opt_.interval_s)
                                     : opt_.interval_s;
    const auto every = std::chrono::duration<double>(s);
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      if (opt_.manual_ticks)
        cv_.wait(lk, [this] { return stopped_ || asked_ > made_; });
      else
        cv_.wait_for(lk, every, [this] { return stopped_; });
      if (stopped_) return;
      lk.unlock();
      if (opt_.publish) {
        opt_.publish(done_, failed_);
      } else {
        const std::string l = line();
        out_ << (opt_.terminal ? "\r" + l + "\x1b[K" : l + "\n") << std::flush;  // one write
        shown_ = true;
      }
      lk.lock();
      if (opt_.manual_ticks) {
        made_ = asked_;
        cv_.notify_all();
      }
    }
  }

  ResultSink& inner_;
  const std::size_t total_;
  const ProgressOptions opt_;
  std::ostream& out_;
  const Clock::time_point start_;
  std::atomic<std::size_t> done_{0}, failed_{0};
  std::deque<std::pair<Clock::time_point, std::size_t>> samples_;  // the display thread's only
  std::atomic<bool> shown_{false};
  std::mutex m_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::uint64_t asked_ = 0, made_ = 0;  ///< manual_ticks: the ticks tick() asked for, and made
  std::thread thread_;
};

}  // namespace vecbench
