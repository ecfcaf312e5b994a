// The vision transformers of the encoder registry (DINOv2 ViT-S/B/L/g 14, CLIP's image towers) on
// oneDNN (`--engine onednn`): every linear layer one oneDNN matmul on the weights as the export holds
// them (read in place: one copy for every replica), its post-ops fused (bias, GELU or CLIP's
// QuickGELU; layer scale and the residual sum), attention as batched matmuls over the heads reading
// q, k and v straight out of the qkv product and a softmax between them, oneDNN's layer norm, and the
// patch embedding as one matmul over the image's patches (vecbench's kernel normalizes the input
// and gathers the patches in one pass). Each image runs alone through the same primitives (the
// tokens of one image are the rows): its vector does not depend on the batch it came in, the batch
// size or the strategy. docs/encoders.md ("On oneDNN").
// The weights come from the export (src/engine/torch_modules.cpp reads them once through
// libvecbench_torch.so); this header and src/engine/onednn_vit.cpp include neither LibTorch nor OpenCV.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench {

/// The two transformer families of the registry (their module layouts in tools/vecbench_export/).
enum class VitFamily {
  dinov2,  ///< tools/vecbench_export/dinov2.py: pre-norm blocks with layer scale, GELU (erf) or SwiGLU, final norm, CLS
  clip,    ///< tools/vecbench_export/clip.py: ln_pre, pre-norm blocks with QuickGELU, ln_post of CLS, projection
};
template <>
struct EnumNames<VitFamily> {
  static constexpr const char* what = "vision transformer family";
  static constexpr std::array<std::pair<VitFamily, const char*>, 2> names = {
      {{VitFamily::dinov2, "dinov2"}, {VitFamily::clip, "clip"}}};
};

/// One tensor of the export: its shape and its floats (row-major, as LibTorch holds it).
struct VitTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Everything the engine needs from a ViT export: its shape, its input normalization, and its
/// parameters and buffers by module path ("blocks.3.attn.qkv.weight", "transformer.resblocks.0.ln_1.bias").
struct VitWeights {
  std::string source;   ///< the model file, for error messages
  std::string encoder;  ///< the export's arch: an encoder of the registry (engine/encoder.hpp)
  VitFamily family = VitFamily::dinov2;
  int input_size = 224;
  int patch = 14;
  int dim = 0;          ///< token width
  int depth = 0;        ///< blocks
  int heads = 0;        ///< attention heads (width / heads floats each)
  int feature_dim = 0;  ///< floats per vector (dim, or CLIP's projection width)
  bool swiglu = false;  ///< DINOv2 ViT-g/14's fused SwiGLU feed-forward (else fc1, GELU, fc2)
  float ln_eps = 1e-6f;
  bool l2_normalize = false;  ///< CLIP under a protocol that normalizes the embedding (cmmd)
  float input_div = 1.0f;     ///< input normalization: (x / div - mean[c]) / std[c]
  std::array<float, 3> input_mean{};
  std::array<float, 3> input_std{1, 1, 1};
  std::map<std::string, VitTensor> tensors;

  /// Tokens per image: the patches and the class token.
  int tokens() const { return (input_size / patch) * (input_size / patch) + 1; }
  /// The tensor `key` of exactly `shape`; ReplicaError naming the file, the key and both shapes otherwise.
  const VitTensor& at(const std::string& key, const std::vector<int64_t>& shape) const;
};

/// One replica on a CPU device; sets the calling thread's OpenMP thread count to dev.threads.
/// Throws ReplicaError when dev is not a CPU device, the CPU has no AVX2, or a tensor is missing or
/// mis-shaped (naming weights.source). fp32 only. The network (one image's) is built by prepare()
/// or the first forward; a batch of n runs it n times.
std::unique_ptr<Model> make_onednn_vit(std::shared_ptr<const VitWeights> weights, const VirtualDevice& dev);

}  // namespace vecbench
