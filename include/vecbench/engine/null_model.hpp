// A model that does no work (`--engine none`): zero features, at once. A run with it measures
// the input pipeline alone (read, decode, resize, batching, writing): the decode ceiling that
// end-to-end throughput is compared with, measured by the same code paths as a real run.
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>

#include "vecbench/engine/model.hpp"

namespace vecbench {

class NullModel : public Model {
 public:
  NullModel(int feature_dim, int input_size) : feature_dim_(feature_dim), input_size_(input_size) {}
  int feature_dim() const override { return feature_dim_; }
  int input_size() const override { return input_size_; }
  ForwardTiming forward(const float*, int n, float* out) override {
    std::fill(out, out + static_cast<std::size_t>(n) * static_cast<std::size_t>(feature_dim_), 0.0f);
    return {};
  }
  void warmup(int, int) override {}

 private:
  int feature_dim_;
  int input_size_;
};

/// Replicas of NullModel for any device.
inline ModelFactory null_factory(int feature_dim, int input_size) {
  return [feature_dim, input_size](const VirtualDevice&) -> std::unique_ptr<Model> {
    return std::make_unique<NullModel>(feature_dim, input_size);
  };
}

}  // namespace vecbench
