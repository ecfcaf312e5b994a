// The LibTorch (TorchScript) model backend and the engine factory, behind the small Model interface.
// This header does not include LibTorch: src/engine/engines.cpp implements it without LibTorch
// (the oneDNN engine, `--engine none`, the stored metadata) and hands the rest to
// libvecbench_torch.so (src/engine/torch_plugin.cpp), which it opens only then (torch_plugin.hpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench {

/// How replicas are loaded.
struct TorchModelOptions {
  std::string path;                       ///< TorchScript file from tools/export_inception.py
  bool optimize = true;                   ///< torch::jit::optimize_for_inference (freeze + fold) after loading
  bool channels_last = false;             ///< feed NHWC-strided input (channels_last memory format)
  Precision precision = Precision::fp32;  ///< fp16/bf16: CUDA (model and input converted); bf16 also engine onednn
  bool cudnn_benchmark = true;            ///< CUDA only: let cuDNN autotune convolution algorithms
  bool flush_denormal = false;            ///< CPU: flush denormal floats to zero (FTZ/DAZ) in each replica thread
  bool cuda_graphs = false;               ///< CUDA only: capture the forward of full batches once, then replay it
  /// What runs the network: torchscript (LibTorch runs the module), onednn (CPU only: the
  /// module's weights in vecbench's own oneDNN network, include/vecbench/engine/onednn_inception.hpp),
  /// or none (no network, zero features: measures the input pipeline alone, null_model.hpp).
  EngineKind engine = EngineKind::torchscript;
  bool winograd = true;  ///< onednn: Winograd for 3x3 stride-1 convolutions where the CPU has them
};

/// The engines this build has (torchscript, none, and onednn when built with libdnnl-dev).
std::vector<EngineKind> available_engines();

/// Whether this build has engine `k`.
bool has_engine(EngineKind k);

/// A factory of replicas: each call loads the file onto the device (torch::jit::load(path,
/// device)), optimizes it, and sets the calling thread's intra-op thread count to the device's
/// share. With engine "onednn", the file is read once (BN folded into the convolutions) and each
/// call builds a oneDNN network from those weights; the folded weights come from the weights file
/// (engine/weights_file.hpp) when one exists for these weights, without loading the module.
ModelFactory torchscript_factory(const TorchModelOptions& opt);

/// The `vecbench_meta.json` stored in a model file by the export tool (empty object if none).
/// Throws IoError naming the file if it cannot be loaded.
nlohmann::json read_model_meta(const std::string& path);

/// TorchScript modules loaded so far in this process (replicas, weights read for the onednn
/// engine, metadata of a file without the stored member): the oneDNN engine's start-up from a
/// weights file loads none (tested).
std::size_t torchscript_module_loads();

/// Number of CUDA devices LibTorch sees (0 on a CPU build).
int cuda_device_count();

/// Versions and devices of the backend: libtorch, cuda, cudnn, gpus[{name, memory_bytes}],
/// and the BLAS/OpenMP set-up (at::get_parallel_info()).
nlohmann::json backend_info();

}  // namespace vecbench
