// The pooling builder of the oneDNN engine (private to src/engine/): oneDNN's poolings, or the
// engine's own kernels (engine/pool_kernels.hpp) where the CPU route says so. It adds ops to a
// NetworkBuilder and knows no topology.
#pragma once
#include <string>

#include "onednn_network.hpp"
#include "vecbench/engine/cpu_route.hpp"
#include "vecbench/engine/pool_kernels.hpp"

namespace vecbench::onednn_detail {

/// One k x k pooling window: its stride and padding.
struct PoolWindow {
  int k = 3, stride = 1, pad = 0;
};

class PoolBuilder {
 public:
  /// Ops into `net`, kernels as `route` says for this CPU; `source` (the weights' file) is named
  /// in errors.
  PoolBuilder(NetworkBuilder& net, const CpuRoute& route, std::string source)
      : net_(net), route_(route), source_(std::move(source)) {}

  /// A pooling of `x` into `dst`. int8: `dst_step` (0: x's) is dst's u8 step; where it is not
  /// x's, the pool writes a buffer of x's steps that a reorder rescales into dst. `relu`: with a
  /// ReLU post-op; false returned where oneDNN has no such pooling (nothing added then), true
  /// otherwise.
  bool pool_into(algorithm alg, const Act& x, const memory& dst, const PoolWindow& win, float dst_step = 0.0f,
                 bool relu = false);
  /// A pooling of `x` into a fresh activation (int8: of x's step).
  Act pool(algorithm alg, const Act& x, const PoolWindow& win);
  /// Whether oneDNN has a pooling (not its reference code) of `alg` for a 3x3 stride-1 window of
  /// `md` with a ReLU post-op.
  bool has_pool_relu(algorithm alg, const memory::desc& md) const;

  /// Whether the poolings run vecbench's kernels (engine/pool_kernels.hpp): int8 and bf16 on
  /// channels-last activations where the route says so for this CPU.
  bool own_pooling() const;
  /// The 3x3 stride-1 average (over the valid window) of channels-last f32 `t`, its ReLU, and
  /// int8: times `inv_step` into u8, by vecbench's kernel, into `dst` (a slice of channels-last u8
  /// or bf16). A ReplicaError naming `what` where the layouts do not fit.
  void avg3x3_relu_into(const std::string& what, const memory& t, const memory& dst, float inv_step);
  /// The check avg3x3_relu_into makes first, for a caller to make before it builds what writes `t`.
  void check_avg3x3_relu(const std::string& what, const memory& t, const memory& dst) const;
  /// The global average pool of u8 or bf16 `x` straight into `out` (f32 [N, C, 1, 1]) by
  /// vecbench's kernel (int8: exact sums times x's step); false where own_pooling() is off (a
  /// layout it does not take is a ReplicaError then, as in own_max_pool).
  bool own_global_average(const Act& x, const memory& out);

 private:
  bool own_max_pool(const memory& src, const memory& dst, const PoolWindow& win, float rescale);
  /// The channels-last shapes and first elements of avg3x3_relu_into's `t` and `dst`; a
  /// ReplicaError naming `what` where the kernel does not take them.
  struct Avg3x3Layouts {
    pool_kernels::Tensor t, dst;
    std::size_t t_off = 0, dst_off = 0;
  };
  Avg3x3Layouts avg3x3_layouts(const std::string& what, const memory& t, const memory& dst) const;
  pool_kernels::Type pool_type() const { return net_.int8() ? pool_kernels::Type::u8 : pool_kernels::Type::bf16; }
  NetworkBuilder& net_;
  const CpuRoute& route_;
  std::string source_;
};

}  // namespace vecbench::onednn_detail
