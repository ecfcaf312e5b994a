// The closed sets of model settings: which engine runs the network and in what arithmetic.
// Parsed once where they enter (CLI, experiment file), compared as enums everywhere else.
#pragma once
#include <string>
#include <vector>

#include "vecbench/core/error.hpp"

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

inline const char* to_string(EngineKind k) {
  switch (k) {
    case EngineKind::torchscript:
      return "torchscript";
    case EngineKind::onednn:
      return "onednn";
    case EngineKind::none:
      return "none";
  }
  return "torchscript";
}

inline const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::int8:
      return "int8";
  }
  return "fp32";
}

/// ConfigError naming `key` for an unknown name.
inline EngineKind parse_engine(const std::string& s, const std::string& key = "engine") {
  for (EngineKind k : {EngineKind::torchscript, EngineKind::onednn, EngineKind::none})
    if (s == to_string(k)) return k;
  throw ConfigError(key, "unknown engine '" + s + "' (use torchscript, onednn, none)");
}

/// ConfigError naming `key` for an unknown name.
inline Precision parse_precision(const std::string& s, const std::string& key = "precision") {
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16, Precision::int8})
    if (s == to_string(p)) return p;
  throw ConfigError(key, "unknown precision '" + s + "' (use fp32, fp16, bf16, int8)");
}

}  // namespace vecbench
