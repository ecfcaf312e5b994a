// The convolution builder of the oneDNN engine (private to src/engine/): oneDNN's convolutions,
// or the engine's own Winograd kernels where the CPU route says they fit (engine/winograd.hpp),
// with their weights packed once for every replica (onednn_packed.hpp). It adds ops to a
// NetworkBuilder and knows no topology: a layer is its name (the packed-weight key), its floats
// and its geometry.
#pragma once
#include <string>

#include "onednn_network.hpp"
#include "packed_weight_cache.hpp"
#include "vecbench/engine/cpu_route.hpp"
#include "vecbench/engine/weights_file.hpp"

namespace vecbench::onednn_detail {

/// One convolution: stride and padding (height, width); int8: the u8 steps of its input and
/// output; `relu` false: conv+bias only (an f32 1x1 layer whose ReLU follows a pool).
struct ConvGeometry {
  int stride = 1;
  int pad_h = 0, pad_w = 0;
  float in_step = 1.0f, out_step = 1.0f;
  bool relu = true;
};

class ConvBuilder {
 public:
  /// Ops into `net`, packed weights from and into `packed`, kernels as `route` says for this CPU;
  /// `source` (the weights' file) is named in errors.
  ConvBuilder(NetworkBuilder& net, PackedWeightCache& packed, const CpuRoute& route, std::string source)
      : net_(net), packed_(packed), route_(route), source_(std::move(source)) {}

  /// conv+bias(+ReLU) of layer `name` (OIHW floats `l`) from `src` into `dst` (a fresh activation
  /// or a slice of a concatenation), in the network's current activation type (int8: s8 weights
  /// with a scale per output channel).
  void conv_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst,
                 const ConvGeometry& g);

 private:
  bool winograd_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst,
                     winograd::Kernel kernel, int pad);
  NetworkBuilder& net_;
  PackedWeightCache& packed_;
  const CpuRoute& route_;
  std::string source_;
};

}  // namespace vecbench::onednn_detail
