// Inception-v3 as oneDNN primitives (see include/vecbench/engine/onednn_inception.hpp): the model
// that runs a Graph (onednn_topology.hpp) per batch size, and what the engine tells of this CPU.
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
#include "vecbench/core/error.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#include "vecbench/engine/weights_file.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench {

std::shared_ptr<PackedWeightCache> new_packed_weight_cache() { return std::make_shared<PackedWeightCache>(); }

using namespace onednn_detail;  // NOLINT: the engine's private pieces (src/engine/onednn_*.hpp)

namespace {

/// The process's one CPU engine: every replica's primitives and memories belong to it (the
/// packed weights' memories are shared between replicas, PackedWeightCache::Entry::mem). Never
/// destroyed: a cache's memories may outlive any replica, up to the end of the process.
const dnnl::engine& cpu_engine() {
  static const auto* const eng = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *eng;
}

class OneDnnInception : public Model {
 public:
  OneDnnInception(std::shared_ptr<const InceptionWeights> w, const VirtualDevice& dev, const OneDnnOptions& opt)
      : w_(std::move(w)), dev_(dev), opt_(opt), eng_(cpu_engine()), stream_(eng_) {
    if (dev.is_cuda())
      throw ReplicaError(w_->source + ": the onednn engine runs on CPU devices only, not " + dev.name());
    if (opt.precision == Precision::fp16)
      throw ReplicaError("onednn engine: precision fp16 is not supported (use fp32, bf16 or int8)");
    std::string why;
    if (opt.precision == Precision::int8 && !onednn_int8_supported(&why)) throw ReplicaError("onednn engine: " + why);
    if (opt.precision == Precision::bf16 && !has_isa(dnnl::cpu_isa::avx512_core_bf16))
      throw ReplicaError("onednn engine: bf16 needs a CPU with AVX-512 BF16 (oneDNN runs " +
                         onednn_info()["isa"].get<std::string>() + " code here)");
    omp_set_num_threads(dev.threads);
    // The network is built by prepare() or the first forward, in this replica's thread.
  }
  int feature_dim() const override { return w_->feature_dim; }
  int input_size() const override { return w_->input_size; }
  /// A run's batch size: the network for exactly that batch (a pool's next run may use a smaller
  /// one, which should not run padded to the last run's).
  void prepare(int max_batch) override {
    max_batch = std::max(1, max_batch);
    if (!graph_ || max_batch != graph_->batch()) build(max_batch);
  }
  ForwardTiming forward(const float* in, int n, float* out) override {
    if (omp_get_max_threads() != dev_.threads) omp_set_num_threads(dev_.threads);  // naive: replicas share a thread
    ForwardTiming t;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (!graph_ || n > graph_->batch()) build(n);
      if (n == graph_->batch())
        graph_->run(stream_, in, out);
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
    graph_.reset();  // one network at a time: the old one's memory goes first
    pad_in_.clear();
    pad_out_.clear();
    try {
      graph_ = std::make_unique<Graph>(*w_, opt_, eng_, n, dev_.threads, dev_.virtual_index, dev_.virtual_count);
    } catch (const dnnl::error& e) {
      throw ReplicaError(w_->source + ": building the oneDNN network failed: " + e.what());
    }
    save_packed_weights(*w_);  // what this build packed, for the next start (no-op when nothing new)
  }
  /// A partial batch on the full-batch network: the n images, then zeros (batch items never mix).
  void run_padded(const float* in, int n, float* out) {
    const std::size_t s = static_cast<std::size_t>(w_->input_size), N = static_cast<std::size_t>(graph_->batch());
    const std::size_t per_in = 3 * s * s, per_out = static_cast<std::size_t>(w_->feature_dim);
    if (pad_in_.empty()) pad_in_.assign(N * per_in, 0.0f), pad_out_.assign(N * per_out, 0.0f);
    std::copy(in, in + static_cast<std::size_t>(n) * per_in, pad_in_.begin());
    std::fill(pad_in_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_in), pad_in_.end(), 0.0f);
    graph_->run(stream_, pad_in_.data(), pad_out_.data());
    std::copy(pad_out_.begin(), pad_out_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_out),
              out);
  }
  std::shared_ptr<const InceptionWeights> w_;
  VirtualDevice dev_;
  OneDnnOptions opt_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  std::unique_ptr<Graph> graph_;         ///< the one network, for the largest batch asked so far
  std::vector<float> pad_in_, pad_out_;  ///< a partial batch, padded to the network's batch
};

}  // namespace

nlohmann::json onednn_info() {
  const auto* v = dnnl::version();
  nlohmann::json j;
  j["version"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const bool avx512 = has_isa(dnnl::cpu_isa::avx512_core);
  j["isa"] = avx512 ? "avx512_core" : has_isa(dnnl::cpu_isa::avx2) ? "avx2" : "older";
  // the engine's own kernels where the CPU has them (AVX-512: 16-channel blocks, AVX2: 8); direct
  // convolutions otherwise
  const bool own = winograd::available(avx512 ? 16 : 8);
  j["winograd"] = own;
  j["winograd_impl"] = own ? (avx512 ? "vecbench-avx512" : "vecbench-avx2") : "none";
  j["bf16"] = has_isa(dnnl::cpu_isa::avx512_core_bf16);
  j["amx"] = onednn_bf16_amx();  // bf16 and int8 only (bf16 channels-last then)
  j["int8"] = onednn_int8_supported();
  return j;
}

bool onednn_bf16_amx() { return has_isa(dnnl::cpu_isa::avx512_core_amx); }

OneDnnRoute onednn_route_version(Precision precision, bool own_first_layer, bool own_pooling) {
  const bool first = own_first_layer && onednn_own_first_layer(precision);
  const bool pool = own_pooling && onednn_own_pooling(precision);
  return first ? (pool ? OneDnnRoute::v3 : OneDnnRoute::v2) : (pool ? OneDnnRoute::v1_pool : OneDnnRoute::v1);
}

bool onednn_own_pooling(Precision precision) {
  // the kernels read and write channels-last, as onednn_own_first_layer's
  if (precision == Precision::int8) return onednn_int8_supported() && pool_kernels::available(pool_kernels::Type::u8);
  if (precision == Precision::bf16) return onednn_bf16_amx() && pool_kernels::available(pool_kernels::Type::bf16);
  return false;
}

bool onednn_own_first_layer(Precision precision) {
  // the kernel writes channels-last, the layout the Graph takes for int8 always and for bf16 on AMX only
  if (precision == Precision::int8) return onednn_int8_supported() && first_conv::available(first_conv::Output::u8);
  if (precision == Precision::bf16) return onednn_bf16_amx() && first_conv::available(first_conv::Output::bf16);
  return false;
}

const char* onednn_int8_isa() {
  if (has_isa(dnnl::cpu_isa::avx512_core_vnni)) return "avx512_core_vnni";
  if (has_isa(dnnl::cpu_isa::avx2_vnni)) return "avx2_vnni";
  return "none";
}

bool onednn_int8_supported(std::string* why) {
  if (has_isa(dnnl::cpu_isa::avx512_core_vnni) || has_isa(dnnl::cpu_isa::avx2_vnni)) return true;
  if (why)
    *why = "int8 needs a CPU with VNNI (AVX-512 VNNI or AVX-VNNI); oneDNN runs " +
           onednn_info()["isa"].get<std::string>() +
           " code here, where 8-bit products would be no faster than fp32's and saturate";
  return false;
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
