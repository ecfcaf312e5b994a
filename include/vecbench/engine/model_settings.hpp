// The model a run uses and how its replicas are made, declared once: `vectorize` fills it from its
// flags, an experiment (`run`, `tune`) from its file, and the engines read it. What the model file
// says about itself is ModelInfo, read once from the file.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/base/weight_source.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/int8_calibration.hpp"
#include "vecbench/input/resize.hpp"

namespace vecbench {

/// How replicas of a model are made.
struct ModelSettings {
  std::string path;  ///< TorchScript file from tools/export_inception.py
  /// What runs the network: torchscript (LibTorch runs the module), onednn (CPU only: the
  /// module's weights in vecbench's own oneDNN network, engine/onednn_inception.hpp), or none (no
  /// network, zero features: the input pipeline alone, null_model.hpp).
  EngineKind engine = EngineKind::torchscript;
  /// fp16/bf16: CUDA (model and input converted); bf16 also engine onednn; int8: engine onednn on
  /// CPUs with VNNI, with `calibration`
  Precision precision = Precision::fp32;
  std::string calibration{};  ///< int8: the calibration file of `vecbench calibrate` (int8_calibration.hpp)
  /// int8: the SHA-256 the run's fingerprint names; the engine refuses a file that no longer has it ("": any)
  std::string calibration_sha256{};
  /// engine onednn, fp32: every replica records its activations' ranges here (`vecbench calibrate`)
  std::shared_ptr<ActivationRanges> observe{};
  bool optimize = true;  ///< torch::jit::optimize_for_inference (freeze + fold) after loading
  /// torchscript, CPU, fp32, a module not optimized after loading: the replicas share one copy of its
  /// tensors (the file loaded once per process; each replica a clone that shares them). Set by
  /// model_factory from the file's metadata.
  bool share_weights = false;
  /// torchscript, CPU: the batch's images through the module one at a time. A network whose layers
  /// are matrix products over the batch rows (a ViT's tokens, VGG-16's classifier) is rounded
  /// differently for every batch size where the BLAS blocks a product by its rows (Debian's
  /// LibTorch 1.13 on AVX2: DINOv2's vectors at batch 1, 5 and 7 all differed); one image at a time,
  /// every product has the same shape whatever the batch, so the vectors do not depend on it. Set by
  /// model_factory for exports that are not Inception-v3 (whose convolutions do not mix images).
  bool per_image = false;
  bool channels_last = false;  ///< feed NHWC-strided input (channels_last memory format)
  /// CUDA only: let cuDNN autotune convolution algorithms, once per input shape; a shorter batch
  /// (a run's last) is then padded to the run's batch, so the warm-up tuned every shape the clock sees
  bool cudnn_benchmark = true;
  bool flush_denormal = false;  ///< CPU: flush denormal floats to zero (FTZ/DAZ) in each replica thread
  bool cuda_graphs = false;     ///< CUDA only: capture the forward of full batches once, then replay it
  bool winograd = true;         ///< onednn: Winograd for 3x3 stride-1 convolutions where the CPU has them
  /// onednn, int8 and bf16: the first layer by vecbench's kernel into u8/bf16 where the CPU runs it
  /// (OneDnnOptions::own_first_layer; false: oneDNN's f32 layer and a reorder, for comparisons)
  bool own_first_layer = true;
  /// onednn, int8 and bf16: the poolings by vecbench's kernels where the CPU runs them
  /// (OneDnnOptions::own_pooling; false: oneDNN's poolings, for comparisons)
  bool own_pooling = true;
};

/// What a model file says about itself (the export's `vecbench_meta.json`), read once.
struct ModelInfo {
  std::string path;
  std::string arch;            ///< "" when the file is not from the export tool
  WeightSource weight_source;  ///< unknown when the metadata has none
  std::string weight_sha256;   ///< the export's ("" when not from the export tool: see identity())
  int input_size = 299;
  int feature_dim = 2048;
  ResizeMode resize_default = ResizeMode::tf_legacy;
  bool optimize_after_load = true;  ///< false: the export is already optimized (fused)
  bool cpu_only = false;            ///< the export runs on CPU only (a prepacked fused model)
  std::string fuse;                 ///< the export's fusion ("" when none)
  /// The FID tool whose input pipeline the export follows (export_inception.py --like:
  /// "pytorch-fid" | "torch-fidelity"; "" when none): app/fid_presets.hpp
  std::string like;
  nlohmann::json raw;  ///< the metadata as stored (recorded in results)
  /// The export has synthetic weights (export_inception.py --seed): its features are not Inception's.
  bool synthetic() const { return weight_source.synthetic(); }
  /// Made by the export tool: its metadata names the architecture.
  bool is_export() const { return raw.contains("arch"); }
  /// The weights' identity (fingerprints, machine profiles): weight_sha256, else the SHA-256 of
  /// the file itself, read in full once (the route and the fingerprint both ask for it).
  const std::string& identity() const {
    if (identity_.empty()) identity_ = !weight_sha256.empty() ? weight_sha256 : sha256_file(path);
    return identity_;
  }

 private:
  mutable std::string identity_;  ///< identity(), once known
};

/// Parses the stored metadata `raw` (as read_model_meta returns it) of the file `path`. Throws
/// ConfigError naming the file and the field when a field has the wrong type.
inline ModelInfo model_info_from(const std::string& path, const nlohmann::json& raw) {
  ModelInfo m;
  m.path = path;
  m.raw = raw;
  if (!raw.is_object()) return m;
  try {
    m.arch = raw.value("arch", std::string());
    m.weight_source = WeightSource::parse(raw.value("weight_source", std::string()));
    m.weight_sha256 = raw.value("weight_sha256", std::string());
    m.input_size = raw.value("input_size", 299);
    m.feature_dim = raw.value("feature_dim", 2048);
    m.resize_default = parse_resize_mode(raw.value("resize_default", std::string("tf-legacy")));
    m.optimize_after_load = raw.value("optimize_after_load", true);
    m.cpu_only = raw.value("devices", std::string("any")) == "cpu";
    m.fuse = raw.value("fuse", std::string());
    m.like = raw.value("like", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path, std::string("model metadata (vecbench_meta.json): ") + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(path, std::string("model metadata (vecbench_meta.json): ") + e.what());
  }
  if (m.input_size <= 0 || m.feature_dim <= 0)
    throw ConfigError(path, "model metadata (vecbench_meta.json): input_size and feature_dim must be positive");
  return m;
}

}  // namespace vecbench
