// The progress of a whole multi-process job, shown by rank 0: every other rank sends its counts
// (done, failed) to rank 0 on each tick of its progress thread, and rank 0 adds the latest counts
// of each rank to its own when it draws its line. Tiny messages (kTagProgress), only where the
// communicator lets a second thread talk (Comm::threads_ok); elsewhere rank 0 shows its own share.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/dist/distributed.hpp"
#include "vecbench/pipeline/progress.hpp"

namespace vecbench {

class JobProgress {
 public:
  explicit JobProgress(Comm& comm) : comm_(comm), latest_(static_cast<std::size_t>(comm.size())) {}

  /// Whether the job's totals can be shown (a connected group of several ranks with threads).
  bool active() const { return comm_.connected() && comm_.size() > 1 && comm_.threads_ok(); }

  /// Ranks other than 0: sends this rank's counts to rank 0.
  void publish(std::size_t done, std::size_t failed) {
    comm_.send(0, kTagProgress, std::to_string(done) + " " + std::to_string(failed));
  }

  /// Rank 0: the latest counts of every other rank, summed (reads every message that has come).
  std::pair<std::size_t, std::size_t> others() {
    std::lock_guard<std::mutex> lk(m_);
    drain_locked();
    std::pair<std::size_t, std::size_t> sum{0, 0};
    for (std::size_t r = 1; r < latest_.size(); ++r) sum.first += latest_[r].first, sum.second += latest_[r].second;
    return sum;
  }

  /// Rank 0, at the end: reads what is still queued so that no message is left behind.
  void drain() {
    std::lock_guard<std::mutex> lk(m_);
    drain_locked();
  }

  /// The ProgressOptions hooks for this rank: rank 0 shows the job's counts, others publish.
  void hook(ProgressOptions& po) {
    if (!active()) return;
    if (comm_.rank() == 0) {
      po.remote = [this] { return others(); };
      po.label = "job (" + std::to_string(comm_.size()) + " ranks): ";
    } else {
      // as often as rank 0 draws its lines (its --progress interval, the same on every rank),
      // at least once a second and at most ten times: a short job's lines still count this rank
      po.publish_every_s = std::clamp(po.interval_s, 0.1, 1.0);
      po.interval_s = 0;  // no line of its own
      po.publish = [this](std::size_t d, std::size_t f) { publish(d, f); };
    }
  }

 private:
  void drain_locked() {
    int src = -1;
    std::string msg;
    while (comm_.recv(src = -1, kTagProgress, msg, 0)) {
      unsigned long long d = 0, f = 0;
      const auto r = static_cast<std::size_t>(src);
      if (src > 0 && r < latest_.size() && std::sscanf(msg.c_str(), "%llu %llu", &d, &f) == 2)
        latest_[r] = {std::max<std::size_t>(latest_[r].first, d), std::max<std::size_t>(latest_[r].second, f)};
    }
  }

  Comm& comm_;
  std::vector<std::pair<std::size_t, std::size_t>> latest_;  ///< by rank: (done, failed)
  std::mutex m_;
};

}  // namespace vecbench
