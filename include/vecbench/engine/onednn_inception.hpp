// A second CPU engine for the same model: Inception-v3 written directly as oneDNN primitives
// (the library LibTorch itself calls), with the choices LibTorch 1.13's path cannot make:
// one blocked activation layout end to end, conv+BN+ReLU as one primitive, branch outputs
// written straight into their slice of the concatenation (no copies), and vecbench's own Winograd
// convolutions (engine/winograd.hpp) for the stride-1 3x3, 5x5, 1x7, 7x1, 1x3 and 3x1 layers
// (results/PERFORMANCE.md).
// The weights come from the same TorchScript file (src/engine/torch_plugin.cpp reads them); this header
// and src/engine/onednn_inception.cpp include neither LibTorch nor OpenCV.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/cpu_route.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/int8_calibration.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench {

/// A layer's floats: its own (a vector), or a read-only range of a mapped weights file
/// (weights_file.hpp) that `keep` holds mapped, so that a start-up reads no weight twice and
/// touches no fresh page for them. Copies are always its own floats (like a vector's); a
/// write through a mapped range first copies it.
class LayerFloats {
 public:
  LayerFloats() = default;
  LayerFloats(std::vector<float> v) : own_(std::move(v)) {}  // NOLINT: a vector is one
  LayerFloats(const float* p, std::size_t n, std::shared_ptr<const void> keep)
      : ext_(p), ext_n_(n), keep_(std::move(keep)) {}
  LayerFloats(const LayerFloats& o) : own_(o.begin(), o.end()) {}
  LayerFloats(LayerFloats&&) noexcept = default;
  LayerFloats& operator=(const LayerFloats& o) {
    if (this != &o) *this = LayerFloats(o);
    return *this;
  }
  LayerFloats& operator=(LayerFloats&&) noexcept = default;

  const float* data() const { return ext_ ? ext_ : own_.data(); }
  float* data() {
    own();
    return own_.data();
  }
  std::size_t size() const { return ext_ ? ext_n_ : own_.size(); }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size(); }
  float operator[](std::size_t i) const { return data()[i]; }
  float& operator[](std::size_t i) { return data()[i]; }
  /// Whether these floats are a range of a mapped file (not their own).
  bool mapped() const { return ext_ != nullptr; }

 private:
  void own() {
    if (!ext_) return;
    own_.assign(ext_, ext_ + ext_n_);
    ext_ = nullptr;
    ext_n_ = 0;
    keep_.reset();
  }
  std::vector<float> own_;
  const float* ext_ = nullptr;
  std::size_t ext_n_ = 0;
  std::shared_ptr<const void> keep_;
};

/// One conv+BN+ReLU layer with the batch norm folded in: y = relu(conv(x, weight) + bias).
struct FoldedConv {
  std::array<int64_t, 4> shape{};  ///< weight shape: out channels, in channels, kernel h, kernel w
  LayerFloats weight;              ///< OIHW, shape[0]*shape[1]*shape[2]*shape[3] floats
  LayerFloats bias;                ///< shape[0] floats
};

/// The layers' weights packed for oneDNN's primitives, one copy per layer and layout, shared
/// read-only by every replica made from the same InceptionWeights (the first replica that needs
/// a layer in a layout packs it; the others use that copy). Defined in src/engine/onednn_inception.cpp.
struct PackedWeightCache;
std::shared_ptr<PackedWeightCache> new_packed_weight_cache();

/// The export tool's two layouts of Inception-v3 (tools/export_inception.py --arch).
enum class InceptionArch {
  tf2015,       ///< the 2015 TF graph's: average pools over the valid window, a max pool in Mixed_7c
  torchvision,  ///< torchvision's: average pools count the zero padding
};
template <>
struct EnumNames<InceptionArch> {
  static constexpr const char* what = "architecture";
  static constexpr std::array<std::pair<InceptionArch, const char*>, 2> names = {
      {{InceptionArch::tf2015, "tf2015"}, {InceptionArch::torchvision, "torchvision"}}};
};

/// Everything the engine needs from a model file.
struct InceptionWeights {
  std::string source;  ///< the model file, for error messages
  /// XXH3-64 of the folded floats as a weights file stores them (weights_file.hpp), once a
  /// weights file was read ("" otherwise): the packed-weights file names the floats it was made from.
  std::string folded_xxh3;
  InceptionArch arch = InceptionArch::tf2015;
  int input_size = 299;
  int feature_dim = 2048;
  float input_div = 1.0f;                   ///< input normalization: (x / div - mean[c]) / std[c]
  std::array<float, 3> input_mean{};        ///< per RGB channel
  std::array<float, 3> input_std{1, 1, 1};  ///< per RGB channel
  /// Layers by module path ("Conv2d_1a_3x3", "Mixed_5b.branch1x1", ...).
  std::map<std::string, FoldedConv> convs;
  /// The packed copies of `convs` that the replicas share (filled as they build their networks).
  std::shared_ptr<PackedWeightCache> packed = new_packed_weight_cache();
};

/// Engine settings.
struct OneDnnOptions {
  /// The 3x3, 5x5, 1x7, 7x1, 1x3 and 3x1 stride-1 convolutions as vecbench's own Winograd
  /// (engine/winograd.hpp; fp32 only, AVX2 or AVX-512 CPUs); false: direct convolutions everywhere.
  bool winograd = true;
  /// fp32, or bf16: activations and weights in bfloat16 (f32 accumulation), on CPUs with AVX-512
  /// BF16 only; faster, features within 2-6 % (relative L2) of fp32 on real photos (docs/engines.md).
  /// int8 (CPUs with VNNI): u8 activations, s8 weights with a scale per output channel, s32
  /// accumulation; the first layer in f32 (by vecbench's kernel into u8 on AVX-512), the final
  /// average pool into f32 (exact integer sums by vecbench's kernel on AVX-512). Needs `int8_ranges`.
  Precision precision = Precision::fp32;
  /// int8: the calibrated range of each quantization point (a layer's output by layer name, a
  /// block's concatenation by block name); a point without one is a ReplicaError naming it.
  std::shared_ptr<const std::map<std::string, float>> int8_ranges;
  /// fp32 only: record the largest value of each quantization point of every forward here
  /// (`vecbench calibrate`).
  std::shared_ptr<ActivationRanges> observe;
  /// int8 and bf16 on channels-last activations (int8; bf16 on AMX), on AVX-512 CPUs: the first
  /// layer by vecbench's kernel, straight into u8/bf16 (engine/first_conv.hpp); false: oneDNN's
  /// f32 convolution and a reorder, as before it (tests compare the two).
  bool own_first_layer = true;
  /// int8 and bf16 on channels-last activations, on AVX-512 CPUs: the max pools, the tf2015 pool
  /// branches (their 1x1 layer first, into f32) and the last average pool by vecbench's kernels
  /// (engine/pool_kernels.hpp), writing straight into concatenations; false: oneDNN's poolings
  /// and reorders, as before them (tests compare the two).
  bool own_pooling = true;
};

/// oneDNN's version, the ISA it runs with, whether Winograd, bf16, AMX and int8 run here, and the
/// route of each precision (cpu_route's, "routes": what `vecbench devices` prints).
nlohmann::json onednn_info();

/// Process-wide counts of the engine's work, for tests and reports.
struct OneDnnCounters {
  std::size_t network_builds = 0;    ///< networks built (one per replica and largest batch size)
  std::size_t weight_packs = 0;      ///< layers packed into a PackedWeightCache (shared by replicas)
  std::size_t packed_bytes = 0;      ///< bytes of those packed layers
  std::size_t amx_convolutions = 0;  ///< convolutions built on oneDNN's AMX kernels (bf16, int8)
  /// oneDNN memories made over packed weights in a PackedWeightCache: one per entry, by the first
  /// network that takes it; replicas after it take that memory (no replica writes a padded
  /// layout's padding while another's forward reads it)
  std::size_t weight_memories = 0;
  /// networks whose first layer runs vecbench's kernel into u8 or bf16 (engine/first_conv.hpp)
  std::size_t own_first_layers = 0;
  /// poolings run by vecbench's kernels (engine/pool_kernels.hpp), every network's counted
  std::size_t own_poolings = 0;
};
OneDnnCounters onednn_counters();

/// One replica on a CPU device; sets the calling thread's OpenMP thread count to dev.threads.
/// Throws ReplicaError when dev is not a CPU device or the precision is not supported here. One
/// network serves every batch size: it is built by prepare(B) (before the clock, for batch B) or by
/// the first forward; a smaller (partial) batch runs on it padded, and
/// only a larger one builds it again. Its activations share one arena (a buffer's bytes are
/// reused once its last reader has run), its weights come from weights->packed. Building
/// throws ReplicaError naming weights.source when a layer is missing or has the wrong shape.
std::unique_ptr<Model> make_onednn_inception(std::shared_ptr<const InceptionWeights> weights, const VirtualDevice& dev,
                                             const OneDnnOptions& opt);

}  // namespace vecbench
