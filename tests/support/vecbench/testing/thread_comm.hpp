// Ranks as threads of one process (tests of the multi-process protocol without MPI): every
// rank has a mailbox per tag; abort() throws instead of ending the process.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "vecbench/dist/distributed.hpp"

namespace vecbench::testing {

/// The shared mailboxes of a group of thread ranks.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size) {}
  int size() const { return size_; }
  void post(int dest, int tag, int src, std::string data) {
    std::lock_guard<std::mutex> lk(m_);
    boxes_[{dest, tag}].push_back({src, std::move(data)});
    cv_.notify_all();
  }
  bool take(int dest, int tag, int& src, std::string& data, double timeout_s) {
    std::unique_lock<std::mutex> lk(m_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s < 0 ? 1e9 : timeout_s);
    for (;;) {
      auto& box = boxes_[{dest, tag}];
      for (auto it = box.begin(); it != box.end(); ++it)
        if (src < 0 || it->first == src) {
          src = it->first;
          data = std::move(it->second);
          box.erase(it);
          return true;
        }
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout) return false;
    }
  }

 private:
  int size_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, std::deque<std::pair<int, std::string>>> boxes_;
};

/// One thread's view of a ThreadGroup.
class ThreadComm : public Comm {
 public:
  ThreadComm(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  bool connected() const override { return true; }
  std::string kind() const override { return "threads"; }
  void send(int dest, int tag, const std::string& data) override { g_.post(dest, tag, rank_, data); }
  bool recv(int& source, int tag, std::string& data, double timeout_s) override {
    return g_.take(rank_, tag, source, data, timeout_s);
  }
  [[noreturn]] void abort(const std::string& message, int) override { throw std::runtime_error(message); }

 private:
  ThreadGroup& g_;
  int rank_;
};

}  // namespace vecbench::testing
