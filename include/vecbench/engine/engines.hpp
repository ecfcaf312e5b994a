// The engines (TorchScript, oneDNN, none) behind the small Model interface, and their factory.
// This header does not include LibTorch: src/engine/engines.cpp implements it without LibTorch
// (the oneDNN engine, `--engine none`, the stored metadata) and hands the rest to
// libvecbench_torch.so (src/engine/torch_plugin.cpp), which it opens only then (torch_plugin.hpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/system/host_memory.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/model.hpp"
#include "vecbench/engine/model_settings.hpp"

namespace vecbench {

/// The engines this build has (torchscript, none, and onednn when built with libdnnl-dev).
std::vector<EngineKind> available_engines();

/// Whether this build has engine `k`.
bool has_engine(EngineKind k);

/// The factory of replicas of `opt.engine`, whichever it is: torchscript loads the file onto the
/// device (torch::jit::load(path, device)) at each call, optimizes it, and sets the calling
/// thread's intra-op thread count to the device's share; onednn reads the file once (BN folded
/// into the convolutions; from the weights file, engine/weights_file.hpp, when one exists for these
/// weights, without loading the module) and builds a oneDNN network from those weights at each
/// call; none makes zero-feature replicas of the model's shapes.
/// int8 on any engine but onednn is a ConfigError; int8 reads the calibration
/// (checked_int8_calibration) when the factory is made.
ModelFactory model_factory(const ModelSettings& opt);

/// The int8 route's calibration of `opt` (opt.calibration), checked: ConfigError when there is
/// none, this CPU has no VNNI, the file is not one, or it was made for another model.
Int8Calibration checked_int8_calibration(const ModelSettings& opt);

/// The `vecbench_meta.json` stored in a model file by the export tool (empty object if none).
/// Throws IoError naming the file if it cannot be loaded.
nlohmann::json read_model_meta(const std::string& path);

/// read_model_meta's metadata, typed (model_settings.hpp).
inline ModelInfo read_model_info(const std::string& path) { return model_info_from(path, read_model_meta(path)); }

/// TorchScript modules loaded so far in this process (replicas, weights read for the onednn
/// engine, metadata of a file without the stored member): the oneDNN engine's start-up from a
/// weights file loads none (tested).
std::size_t torchscript_module_loads();

/// Number of CUDA devices LibTorch sees (0 on a CPU build).
int cuda_device_count();

/// Where a run on `devices` keeps its batch buffers (RunSettings::host_memory): page-locked memory
/// when one of them is a CUDA device (its replica then copies batches to the GPU with no staging
/// copy), else null (ordinary memory; LibTorch is not opened for that).
HostMemory* host_memory_for(const std::vector<VirtualDevice>& devices);

/// Versions and devices of the backend: libtorch, cuda, cudnn, gpus[{name, memory_bytes}],
/// and the BLAS/OpenMP set-up (at::get_parallel_info()).
nlohmann::json backend_info();

}  // namespace vecbench
