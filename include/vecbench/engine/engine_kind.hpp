// The closed sets of model settings: which engine runs the network and in what arithmetic.
// Parsed once where they enter (CLI, experiment file), compared as enums everywhere else.
#pragma once
#include <string>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// What runs the network.
enum class EngineKind {
  torchscript,  ///< LibTorch runs the TorchScript module (CPU and CUDA)
  onednn,       ///< vecbench's own oneDNN network from the module's weights (CPU)
  none,         ///< no network: the input pipeline alone, zero features
};

/// The arithmetic of the network's activations and weights.
enum class Precision {
  fp32,  ///< exact float32 (the default)
  fp16,  ///< half precision (CUDA)
  bf16,  ///< bfloat16 (CUDA; oneDNN on CPUs with AVX-512 BF16)
  int8,  ///< 8-bit integers with calibrated scales (oneDNN on CPUs with VNNI; opt-in, not for FID)
};

template <>
struct EnumNames<EngineKind> {
  static constexpr const char* what = "engine";
  static constexpr std::array<std::pair<EngineKind, const char*>, 3> names = {
      {{EngineKind::torchscript, "torchscript"}, {EngineKind::onednn, "onednn"}, {EngineKind::none, "none"}}};
};
template <>
struct EnumNames<Precision> {
  static constexpr const char* what = "precision";
  static constexpr std::array<std::pair<Precision, const char*>, 4> names = {
      {{Precision::fp32, "fp32"}, {Precision::fp16, "fp16"}, {Precision::bf16, "bf16"}, {Precision::int8, "int8"}}};
};

inline const char* to_string(EngineKind k) { return enum_name(k); }
inline const char* to_string(Precision p) { return enum_name(p); }

/// ConfigError naming `key` for an unknown name.
inline EngineKind parse_engine(const std::string& s, const std::string& key = "engine") {
  return parse_enum<EngineKind>(s, key);
}

/// ConfigError naming `key` for an unknown name.
inline Precision parse_precision(const std::string& s, const std::string& key = "precision") {
  return parse_enum<Precision>(s, key);
}

}  // namespace vecbench
