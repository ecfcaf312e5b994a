// Where strategies deliver results: one call per image, features or an error.
#pragma once
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace vecbench {

/// Receives each image's outcome. Strategies may call it from several threads at once, so
/// implementations must be thread-safe.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  /// Features of input `index` (`dim` floats).
  virtual void on_features(std::size_t index, const float* features, int dim) = 0;
  /// Input `index` failed; `message` names the file and the cause.
  virtual void on_error(std::size_t index, const std::string& message) = 0;
};

/// Keeps every result in memory, addressed by input index (tests, verification).
class MemorySink : public ResultSink {
 public:
  explicit MemorySink(std::size_t n) : features_(n), errors_(n), seen_(n, 0) {}
  void on_features(std::size_t index, const float* f, int dim) override {
    std::lock_guard<std::mutex> lk(m_);
    features_.at(index).assign(f, f + dim);
    ++seen_.at(index);
  }
  void on_error(std::size_t index, const std::string& message) override {
    std::lock_guard<std::mutex> lk(m_);
    errors_.at(index) = message;
    ++seen_.at(index);
  }
  const std::vector<float>& features(std::size_t i) const { return features_.at(i); }
  const std::string& error(std::size_t i) const { return errors_.at(i); }
  /// How many times input `i` was delivered (exactly once is correct).
  int times_seen(std::size_t i) const { return seen_.at(i); }
  std::size_t size() const { return features_.size(); }

 private:
  std::mutex m_;
  std::vector<std::vector<float>> features_;
  std::vector<std::string> errors_;
  std::vector<int> seen_;
};

/// Sends every result to several sinks.
class TeeSink : public ResultSink {
 public:
  explicit TeeSink(std::vector<ResultSink*> sinks) : sinks_(std::move(sinks)) {}
  void on_features(std::size_t index, const float* f, int dim) override {
    for (auto* s : sinks_) s->on_features(index, f, dim);
  }
  void on_error(std::size_t index, const std::string& message) override {
    for (auto* s : sinks_) s->on_error(index, message);
  }

 private:
  std::vector<ResultSink*> sinks_;
};

}  // namespace vecbench
