// Inception-v3 as oneDNN primitives (see include/vecbench/engine/onednn_inception.hpp): the model
// that runs an InceptionNetwork (onednn_topology.hpp) per batch size, and what the engine tells of this CPU.
// No LibTorch here.
#include "vecbench/engine/onednn_inception.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <vector>

#include "onednn_topology.hpp"
#include "packed_weight_cache.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#include "vecbench/engine/weights_file.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench {

std::shared_ptr<PackedWeightCache> new_packed_weight_cache() { return std::make_shared<PackedWeightCache>(); }

using namespace onednn_detail;  // NOLINT: the engine's private pieces (src/engine/onednn_*.hpp)

namespace {

class OneDnnInception : public Model {
 public:
  OneDnnInception(std::shared_ptr<const InceptionWeights> w, const VirtualDevice& dev, const OneDnnOptions& opt)
      : w_(std::move(w)), dev_(dev), opt_(opt), eng_(cpu_engine()), stream_(eng_) {
    if (dev.is_cuda())
      throw ReplicaError(w_->source + ": the onednn engine runs on CPU devices only, not " + dev.name());
    // fp32 runs oneDNN's reference code on CPUs older than AVX2 (slowly: the route then picks torchscript)
    if (const CpuRoute route = cpu_route(opt.precision); !route.runs() && opt.precision != Precision::fp32)
      throw ReplicaError("onednn engine: " + route.why_not());
    omp_set_num_threads(dev.threads);
    // The network is built by prepare() or the first forward, in this replica's thread.
  }
  int feature_dim() const override { return w_->feature_dim; }
  int input_size() const override { return w_->input_size; }
  /// A run's batch size: the network for exactly that batch (a pool's next run may use a smaller
  /// one, which should not run padded to the last run's).
  void prepare(int max_batch) override {
    max_batch = std::max(1, max_batch);
    if (!net_ || max_batch != net_->batch()) build(max_batch);
  }
  ForwardTiming forward(const float* in, int n, float* out) override {
    if (omp_get_max_threads() != dev_.threads) omp_set_num_threads(dev_.threads);  // naive: replicas share a thread
    ForwardTiming t;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (!net_ || n > net_->batch()) build(n);
      if (n == net_->batch())
        net_->run(stream_, in, out);
      else
        run_padded(in, n, out);
    } catch (const dnnl::error& e) {
      throw ReplicaError(dev_.name() + ": onednn forward failed: " + e.what());
    }
    t.forward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  }

 private:
  void build(int n) {
    net_.reset();  // one network at a time: the old one's memory goes first
    pad_in_.clear();
    pad_out_.clear();
    try {
      net_ =
          std::make_unique<InceptionNetwork>(*w_, opt_, eng_, n, dev_.threads, dev_.virtual_index, dev_.virtual_count);
    } catch (const dnnl::error& e) {
      throw ReplicaError(w_->source + ": building the oneDNN network failed: " + e.what());
    }
    save_packed_weights(*w_);  // what this build packed, for the next start (no-op when nothing new)
  }
  /// A partial batch on the full-batch network: the n images, then zeros (batch items never mix).
  void run_padded(const float* in, int n, float* out) {
    const std::size_t s = static_cast<std::size_t>(w_->input_size), N = static_cast<std::size_t>(net_->batch());
    const std::size_t per_in = 3 * s * s, per_out = static_cast<std::size_t>(w_->feature_dim);
    if (pad_in_.empty()) pad_in_.assign(N * per_in, 0.0f), pad_out_.assign(N * per_out, 0.0f);
    std::copy(in, in + static_cast<std::size_t>(n) * per_in, pad_in_.begin());
    std::fill(pad_in_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_in), pad_in_.end(), 0.0f);
    net_->run(stream_, pad_in_.data(), pad_out_.data());
    std::copy(pad_out_.begin(), pad_out_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_out),
              out);
  }
  std::shared_ptr<const InceptionWeights> w_;
  VirtualDevice dev_;
  OneDnnOptions opt_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  std::unique_ptr<InceptionNetwork> net_;  ///< the one network, for the largest batch asked so far
  std::vector<float> pad_in_, pad_out_;    ///< a partial batch, padded to the network's batch
};

}  // namespace

nlohmann::json onednn_info() {
  const auto* v = dnnl::version();
  nlohmann::json j;
  j["version"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const CpuRoute fp32 = cpu_route(Precision::fp32), bf16 = cpu_route(Precision::bf16),
                 int8 = cpu_route(Precision::int8);
  j["isa"] = enum_name(fp32.isa);
  // the engine's own kernels where the CPU has them (AVX-512: 16-channel blocks, AVX2: 8); direct
  // convolutions otherwise
  j["winograd"] = fp32.winograd;
  j["winograd_impl"] = !fp32.winograd ? "none" : fp32.block == 16 ? "vecbench-avx512" : "vecbench-avx2";
  j["bf16"] = bf16.runs();
  j["amx"] = bf16.amx;  // bf16 and int8 only (bf16 channels-last then)
  j["int8"] = int8.runs();
  j["routes"] = {{"fp32", fp32.to_json()}, {"bf16", bf16.to_json()}, {"int8", int8.to_json()}};
  return j;
}

OneDnnCounters onednn_counters() {
  OneDnnCounters c;
  c.network_builds = g_builds.load();
  c.weight_packs = g_packs.load();
  c.packed_bytes = g_packed_bytes.load();
  c.amx_convolutions = g_amx_convs.load();
  c.weight_memories = g_weight_memories.load();
  c.own_first_layers = g_own_first_layers.load();
  c.own_poolings = g_own_poolings.load();
  return c;
}

std::unique_ptr<Model> make_onednn_inception(std::shared_ptr<const InceptionWeights> weights, const VirtualDevice& dev,
                                             const OneDnnOptions& opt) {
  return std::make_unique<OneDnnInception>(std::move(weights), dev, opt);
}

}  // namespace vecbench
