// The decoder threads of a data-parallel run, and the balancer that adds one when the devices
// wait for input. The threads share one counter of batches, so a thread added mid-run just takes
// the next batch; the pool only grows.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vecbench {

class DecodePool {
 public:
  /// `body(i)`: decoder i's loop (it catches its own errors); `on_last_done`: called once, by the
  /// last thread to finish (closes the queue of ready batches).
  DecodePool(std::function<void(int)> body, std::function<void()> on_last_done)
      : body_(std::move(body)), on_last_done_(std::move(on_last_done)) {}
  DecodePool(const DecodePool&) = delete;
  DecodePool& operator=(const DecodePool&) = delete;
  ~DecodePool() { join(); }

  /// Starts one more decoder, unless every decoder started so far has finished (then the queue is
  /// closed and there is nothing left to decode); returns whether it did.
  bool add() {
    std::lock_guard<std::mutex> lk(m_);
    if (finished_) return false;
    ++running_;
    const int i = started_++;
    threads_.emplace_back([this, i] {
      body_(i);
      bool last = false;
      {
        std::lock_guard<std::mutex> l(m_);
        last = --running_ == 0;
        if (last) finished_ = true;
      }
      if (last) on_last_done_();
    });
    return true;
  }
  /// Decoders started so far.
  int started() {
    std::lock_guard<std::mutex> lk(m_);
    return started_;
  }
  /// Waits for every decoder (no new one starts meanwhile: call once adding has stopped).
  void join() {
    std::vector<std::thread> t;
    {
      std::lock_guard<std::mutex> lk(m_);
      t.swap(threads_);
    }
    for (auto& th : t)
      if (th.joinable()) th.join();
  }

 private:
  std::function<void(int)> body_;
  std::function<void()> on_last_done_;
  std::mutex m_;  ///< guards the members below
  std::vector<std::thread> threads_;
  int running_ = 0;
  int started_ = 0;
  bool finished_ = false;
};

/// While it lives, adds a decoder to `pool` whenever the devices spent more than `threshold` of
/// an interval waiting for input (`starved_ns`: their summed wait, growing) and `more()` says
/// there is input left, up to `max_decoders`.
class DecodeBalancer {
 public:
  DecodeBalancer(DecodePool& pool, const std::atomic<std::int64_t>& starved_ns, std::size_t devices, int max_decoders,
                 std::function<bool()> more, double interval_s = 0.25, double threshold = 0.25)
      : pool_(pool), starved_(starved_ns) {
    if (max_decoders <= pool.started()) return;
    thread_ = std::thread([=, more = std::move(more)] {
      std::int64_t last = starved_.load();
      const auto step = std::chrono::duration<double>(interval_s);
      const double budget_ns = threshold * static_cast<double>(devices) * interval_s * 1e9;
      std::unique_lock<std::mutex> lk(m_);
      while (!cv_.wait_for(lk, step, [&] { return stop_; })) {
        const std::int64_t now = starved_.load();
        if (static_cast<double>(now - last) > budget_ns && more() && pool_.started() < max_decoders) pool_.add();
        last = now;
      }
    });
  }
  DecodeBalancer(const DecodeBalancer&) = delete;
  DecodeBalancer& operator=(const DecodeBalancer&) = delete;
  ~DecodeBalancer() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  DecodePool& pool_;
  const std::atomic<std::int64_t>& starved_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace vecbench
