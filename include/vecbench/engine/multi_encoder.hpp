// Several encoders on one device, fed from one decode (`vectorize --encoders`): a Model made of
// one replica per encoder (composition: each keeps its own engine, weights and threads), whose
// input image is the composite of input/input_layout.hpp and whose feature vector is the
// encoders' vectors side by side. Each forward gathers part k of every image into a batch of its
// own and runs encoder k on it: the vectors are the ones that encoder gives alone on that batch.
#pragma once
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/model.hpp"
#include "vecbench/input/input_layout.hpp"

namespace vecbench {

class MultiEncoderModel : public Model {
 public:
  /// `parts[k]` runs part k of `layout` (its input_size() must be that part's size).
  MultiEncoderModel(std::vector<std::unique_ptr<Model>> parts, InputLayout layout)
      : parts_(std::move(parts)), layout_(std::move(layout)) {
    if (parts_.size() != layout_.parts.size()) throw Error("MultiEncoderModel: one replica per part");
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      if (parts_[k]->input_size() != layout_.parts[k].size)
        throw Error("MultiEncoderModel: encoder " + std::to_string(k) + " takes " +
                    std::to_string(parts_[k]->input_size()) + " pixels per side, its part " +
                    std::to_string(layout_.parts[k].size));
      dim_ += parts_[k]->feature_dim();
    }
  }
  int feature_dim() const override { return dim_; }
  int input_size() const override { return layout_.side(); }
  /// Where encoder k's floats start in the vector (the sum of the widths before it).
  int column(std::size_t k) const {
    int c = 0;
    for (std::size_t i = 0; i < k; ++i) c += parts_[i]->feature_dim();
    return c;
  }

  ForwardTiming forward(const float* input, int n, float* output) override {
    ForwardTiming total;
    const std::size_t side = static_cast<std::size_t>(layout_.side()), stride = 3 * side * side;
    const std::size_t rows = static_cast<std::size_t>(n), dim = static_cast<std::size_t>(dim_);
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      const std::size_t floats = layout_.parts[k].floats(), off = layout_.offset(k);
      const std::size_t d = static_cast<std::size_t>(parts_[k]->feature_dim());
      const std::size_t col = static_cast<std::size_t>(column(k));
      in_.resize(rows * floats);
      out_.resize(rows * d);
      for (std::size_t j = 0; j < rows; ++j)
        std::memcpy(in_.data() + j * floats, input + j * stride + off, floats * sizeof(float));
      const ForwardTiming t = parts_[k]->forward(in_.data(), n, out_.data());
      for (std::size_t j = 0; j < rows; ++j)
        std::memcpy(output + j * dim + col, out_.data() + j * d, d * sizeof(float));
      total.h2d_s += t.h2d_s;
      total.forward_s += t.forward_s;
      total.d2h_s += t.d2h_s;
      total.decode_s += t.decode_s;
    }
    return total;
  }
  void prepare(int max_batch) override {
    for (auto& p : parts_) p->prepare(max_batch);
  }
  void warmup(int n, int calls) override {  // each encoder on inputs of its own size
    for (auto& p : parts_) p->warmup(n, calls);
  }
  std::size_t peak_memory_bytes() const override {
    std::size_t b = 0;
    for (const auto& p : parts_) b += p->peak_memory_bytes();
    return b;
  }

 private:
  std::vector<std::unique_ptr<Model>> parts_;
  InputLayout layout_;
  int dim_ = 0;
  std::vector<float> in_, out_;  ///< one part's batch and its vectors (reused)
};

/// Replicas of several encoders on each device: `factories[k]` makes encoder k's, in the calling
/// (worker) thread, as a single-encoder run would.
inline ModelFactory multi_encoder_factory(std::vector<ModelFactory> factories, InputLayout layout) {
  return [factories = std::move(factories), layout = std::move(layout)](const VirtualDevice& dev) {
    std::vector<std::unique_ptr<Model>> parts;
    for (const auto& f : factories) parts.push_back(f(dev));
    return std::unique_ptr<Model>(std::make_unique<MultiEncoderModel>(std::move(parts), layout));
  };
}

}  // namespace vecbench
