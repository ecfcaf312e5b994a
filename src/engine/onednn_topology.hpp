// Inception-v3 as a oneDNN network for one batch size (private to src/engine/): the topology (the
// stem, blocks A-E of the Mixed layers, the global pool) as one client of the network builder
// (onednn_network.hpp) and its layer builders (onednn_conv.hpp, onednn_pool.hpp), which it owns;
// OneDnnInception (onednn_inception.cpp) runs it. A second network is another such client.
#pragma once
#include <memory>
#include <string>

#include "onednn_conv.hpp"
#include "onednn_network.hpp"
#include "onednn_pool.hpp"
#include "vecbench/engine/first_conv.hpp"

namespace vecbench::onednn_detail {

/// The primitives of one forward pass of Inception-v3 for one batch size, with their weights
/// packed for them.
class InceptionNetwork {
 public:
  /// `share` of `shares`: this replica's place among the replicas building the same network at
  /// once (NetworkBuilder::finish).
  InceptionNetwork(const InceptionWeights& wts, const OneDnnOptions& opt, const dnnl::engine& eng, int n, int threads,
                   int share = 0, int shares = 1);

  int batch() const { return net_.batch(); }
  std::size_t arena_bytes() const { return net_.arena_bytes(); }
  void run(dnnl::stream& s, const float* in, float* out) { net_.run(s, in, out); }

 private:
  const FoldedConv& find_layer(const std::string& name) const;
  /// The layer, checked to take `in_c` input channels.
  const FoldedConv& layer(const std::string& name, int in_c) const;
  int out_channels(const std::string& name) const { return static_cast<int>(find_layer(name).shape[0]); }
  Act new_point(const std::string& point, int c, int h, int w) { return points_.new_point(net_, point, c, h, w); }

  Act conv(const std::string& name, const Act& x, int stride = 1, int pad = -1);
  /// Last layer of a branch, writing into the next slice of `cat` (stride-1 "same" padding
  /// unless `stride`/`pad` say otherwise).
  void conv_to(Concat& cat, const std::string& name, const Act& x, int stride = 1, int pad = -1);
  void pool_branch(Concat& cat, const std::string& name, const Act& x);
  void own_pool_branch(Concat& cat, const std::string& name, const Act& x);
  /// Average pool of the Mixed blocks' pool branch: over the valid window (tf2015) or counting
  /// the zero padding (torchvision).
  algorithm avg_alg() const;

  Act block_a(const std::string& b, const Act& x);
  Act block_b(const std::string& b, const Act& x);
  Act block_c(const std::string& b, const Act& x);
  Act block_d(const std::string& b, const Act& x);
  Act block_e(const std::string& b, const Act& x, bool max_pool_branch);

  void build();
  bool own_first_layer_runs() const;
  void own_first_layer(const Act& x);
  void build_rest(Act x);

  const InceptionWeights& wts_;
  OneDnnOptions opt_;
  CpuRoute route_;  ///< this CPU's route for opt_ (layouts, block, which own kernels run)
  ActType f32_;     ///< f32 activations (int8: its first layer and last pool)
  NetworkBuilder net_;
  QuantPoints points_;
  ConvBuilder convs_;
  PoolBuilder pools_;
  FoldedConv first_;  ///< Conv2d_1a_3x3 with the input normalization folded in
  memory in_;         ///< the caller's NCHW floats
};

}  // namespace vecbench::onednn_detail
