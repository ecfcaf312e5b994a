// A oneDNN network under construction (private to src/engine/): its settings, its op list and
// arena, and the helpers every layer uses (activations, quantization points, the weights by
// layer name, concatenations). The layers build on it: onednn_conv.hpp, onednn_pool.hpp, then
// the Inception topology (onednn_topology.hpp).
#pragma once
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "onednn_arena.hpp"
#include "onednn_common.hpp"
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/weights_file.hpp"

namespace vecbench::onednn_detail {

class GraphState {
 protected:
  GraphState(const InceptionWeights& wts, const OneDnnOptions& opt, dnnl::engine& eng, int n, int threads)
      : wts_(wts),
        opt_(opt),
        route_(cpu_route(opt.precision, opt.own_first_layer, opt.own_pooling, opt.winograd)),
        eng_(eng),
        n_(n),
        threads_(std::max(1, threads)) {}

  /// oneDNN's format tag of a layout.
  static tag format_of(ActivationLayout l) {
    return l == ActivationLayout::channels_last ? tag::nhwc
           : l == ActivationLayout::blocked16   ? tag::nChw16c
                                                : tag::nChw8c;
  }

  memory::desc act_desc(int c, int h, int w) const { return memory::desc({n_, c, h, w}, act_dt_, fmt_); }
  Act new_act(int c, int h, int w) { return Act{arena_.add(act_desc(c, h, w), eng_), c, h, w}; }
  bool int8() const { return act_dt_ == dt::u8; }

  /// int8: the u8 step of quantization point `point` from its calibrated range (largest value).
  float point_scale(const std::string& point) const {
    const auto it = opt_.int8_ranges->find(point);
    if (it == opt_.int8_ranges->end())
      throw ReplicaError(wts_.source + ": the int8 calibration has no range for " + point +
                         " (made for another model? run `vecbench calibrate` for this one)");
    return it->second > 0 ? it->second / 255.0f : 1.0f;
  }
  /// A fresh activation that is a quantization point (a layer's output, a block's concatenation).
  Act new_point(const std::string& point, int c, int h, int w) {
    Act a = new_act(c, h, w);
    if (int8()) a.scale = point_scale(point);
    return a;
  }
  /// Calibration (opt_.observe, fp32): records the largest value of `a` once the op before has run.
  void observe(const std::string& point, const Act& a) {
    if (!opt_.observe || act_dt_ != dt::f32) return;
    const memory m = a.mem;
    const std::size_t n = m.get_desc().get_size() / sizeof(float);
    auto ranges = opt_.observe;
    ops_.emplace_back(
        [m, n, ranges, point]() {
          const auto* p = static_cast<const float*>(m.get_data_handle());
          float hi = 0.0f;
          for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, p[i]);
          ranges->record(point, hi);
        },
        Args{{DNNL_ARG_SRC, m}});
  }

  const FoldedConv& find_layer(const std::string& name) const {
    auto it = wts_.convs.find(name);
    if (it == wts_.convs.end()) throw ReplicaError(wts_.source + ": layer " + name + " is missing (onednn engine)");
    return it->second;
  }
  /// The layer, checked to take `in_c` input channels.
  const FoldedConv& layer(const std::string& name, int in_c) const {
    const auto& l = find_layer(name);
    if (l.shape[1] != in_c)
      throw ReplicaError(wts_.source + ": layer " + name + " expects " + std::to_string(l.shape[1]) +
                         " input channels, the network gives it " + std::to_string(in_c));
    return l;
  }

  static int out_dim(int in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

  /// A concatenation along channels, filled slice by slice by the layers that write into it.
  struct Concat {
    Act out;
    int next = 0;  ///< first channel not yet taken
  };
  memory slice(Concat& cat, int c) {
    auto md = cat.out.mem.get_desc().submemory_desc({n_, c, cat.out.h, cat.out.w}, {0, cat.next, 0, 0});
    cat.next += c;
    return arena_.view(cat.out.mem, md, eng_);
  }
  int out_channels(const std::string& name) const { return static_cast<int>(find_layer(name).shape[0]); }

  const InceptionWeights& wts_;
  OneDnnOptions opt_;
  CpuRoute route_;  ///< this CPU's route for opt_ (layouts, block, which own kernels run)
  dnnl::engine& eng_;
  int n_;
  tag fmt_ = tag::nChw16c;
  tag f32_fmt_ = tag::nChw16c;  ///< the blocked layout of f32 activations here (int8: its first layer and last pool)
  dt act_dt_ = dt::f32;         ///< activations and weights: f32, or bf16 (f32 accumulation and bias)
  FoldedConv first_;            ///< Conv2d_1a_3x3 with the input normalization folded in
  memory in_user_, out_user_;
  ActivationArena arena_;  ///< every activation, placed after the build
  std::size_t arena_bytes_ = 0;
  std::vector<Op> ops_;
  std::deque<std::vector<float>> int8_bias_;  ///< int8: each layer's bias in its s32 sums' units
  int threads_ = 1;                           ///< OpenMP threads of this replica (its device's), for own kernels
  std::size_t scratch_floats_ = 0;            ///< per thread, for the largest Winograd layer
  std::shared_ptr<void> scratch_;             ///< threads_ x scratch_floats_
  dnnl::stream* stream_ = nullptr;            ///< run()'s stream, for ops of vecbench's own that run primitives
};

}  // namespace vecbench::onednn_detail
