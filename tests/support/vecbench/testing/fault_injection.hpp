// The fault of the distributed tests: a process that dies or hangs after N images, as a
// crashed or hung node would (tests/vecbench_fault.cpp puts it around the writer).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "vecbench/core/run/sink.hpp"

namespace vecbench {

/// VECBENCH_TEST_DIE_AFTER=N (every rank) or N@R (rank R only) makes the process
/// abort (as a crash would) right after its N-th image is delivered; with ":hang" appended it
/// stops making progress instead (as a hung node would). n = -1 when not set for `rank`.
struct DieAfter {
  long n = -1;
  bool hang = false;
};
inline DieAfter die_after_from_env(int rank) {
  const char* v = std::getenv("VECBENCH_TEST_DIE_AFTER");
  if (!v || !*v) return {};
  std::string s = v;
  DieAfter d;
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ":hang") == 0) {
    d.hang = true;
    s.resize(s.size() - 5);
  }
  const auto at = s.find('@');
  try {
    if (at != std::string::npos && std::stol(s.substr(at + 1)) != rank) return {};
    d.n = std::stol(s.substr(0, at));
  } catch (const std::exception&) {
    return {};
  }
  return d;
}

/// Passes results on, and aborts (or hangs) after `d.n` images (see die_after_from_env).
class DieAfterSink : public ResultSink {
 public:
  DieAfterSink(ResultSink& inner, DieAfter d, std::string who) : inner_(inner), d_(d), who_(std::move(who)) {}
  void on_features(std::size_t index, const float* f, int dim) override {
    inner_.on_features(index, f, dim);
    if (++count_ == d_.n) {
      std::cerr << ("vecbench: " + who_ + ": VECBENCH_TEST_DIE_AFTER=" + std::to_string(d_.n) +
                    " reached: " + (d_.hang ? "hanging" : "dying") + " on purpose\n")
                << std::flush;
      if (!d_.hang) std::abort();
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  void on_error(std::size_t index, const std::string& message) override { inner_.on_error(index, message); }

 private:
  ResultSink& inner_;
  DieAfter d_;
  std::string who_;
  std::atomic<long> count_{0};
};

}  // namespace vecbench
