// LibTorch, loaded only when a run needs it. Loading LibTorch's shared libraries costs about a
// second at every process start (hundreds of libraries, thousands of operator registrations),
// while the oneDNN engine, the default on CPU, needs none of it once its weights file exists
// (weights_file.hpp). So everything that calls LibTorch lives in one shared library,
// libvecbench_torch.so (src/engine/torch_plugin.cpp), which the vecbench executable does not
// link: `torch_plugin()` opens it on first use (dlopen) and returns its table of functions.
// The rest of vecbench calls the engine functions of engines.hpp, which open the
// library only for what needs it: the TorchScript engine's replicas, a model file without
// stored metadata, the oneDNN engine's first read of a model's weights, CUDA devices, and
// backend_info().
//
// Where the library is looked for: core/system/plugin_library.hpp, with $VECBENCH_TORCH_LIBRARY first
// and the build folder that compiled the caller last. This header includes no LibTorch.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "vecbench/core/system/host_memory.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench {

struct ModelSettings;
struct InceptionWeights;
struct VitWeights;

/// Bumped whenever TorchPluginApi or a type crossing it changes (VirtualDevice, ModelSettings,
/// InceptionWeights, Model); a library of another version is refused. 3: VirtualDevice::kind is a
/// DeviceKind (a binary and a library either side of that change corrupted each other's devices).
/// 4: the model settings are ModelSettings (engine/model_settings.hpp). 5: pinned_host_memory.
constexpr int kTorchPluginAbi = 8;  // 6: ModelSettings::share_weights; 7: ::per_image; 8: read_vit_weights

/// The functions of libvecbench_torch.so. Both sides are built from the same tree by the same
/// compiler (C++ types cross the boundary); `abi` and `size` catch a stale library.
struct TorchPluginApi {
  int abi = kTorchPluginAbi;
  std::size_t size = sizeof(TorchPluginApi);
  /// Replicas of the TorchScript engine: see model_factory in engines.hpp.
  ModelFactory (*torchscript_factory)(const ModelSettings& opt) = nullptr;
  /// `--engine none` on CUDA devices: the input pipeline decoding on the device as a replica
  /// would (`--decode gpu`), zero features of `feature_dim`; refused in a build without CUDA.
  ModelFactory (*device_decode_factory)(int feature_dim, int input_size) = nullptr;
  /// Loads the TorchScript module of `path` (on the CPU) and returns its stored vecbench_meta.json
  /// (empty object if none); throws IoError naming the file when it is no TorchScript file.
  nlohmann::json (*load_model_meta)(const std::string& path) = nullptr;
  /// The export's layers with batch norm folded into each convolution, into `out` (built by the
  /// caller); throws ReplicaError naming the file when a tensor is missing. Null without oneDNN.
  void (*read_inception_weights)(const std::string& path, InceptionWeights& out) = nullptr;
  /// A vision transformer export's tensors and shape (torch_modules.hpp read_vit_weights), into
  /// `out`; throws ReplicaError naming the file. Null without oneDNN.
  void (*read_vit_weights)(const std::string& path, VitWeights& out) = nullptr;
  /// TorchScript modules loaded by the library so far.
  std::size_t (*module_loads)() = nullptr;
  /// CUDA devices LibTorch sees (0 in a CPU build).
  int (*cuda_device_count)() = nullptr;
  /// libtorch, cuda, cudnn, gpus, parallel_info (see backend_info in engines.hpp).
  nlohmann::json (*backend_info)() = nullptr;
  /// Page-locked host memory (cudaHostAlloc) for batch buffers, which the CUDA replicas copy from
  /// without staging; null in a build without CUDA or with no GPU. Lives for the process.
  HostMemory* (*pinned_host_memory)() = nullptr;
};

/// The library's table, opened on the first call (thread-safe). Throws Error naming every path
/// tried and the loader's message when it cannot be opened or is of another version.
const TorchPluginApi& torch_plugin();

/// The table when the library is already open in this process, else null (opens nothing).
const TorchPluginApi* torch_plugin_if_loaded();

/// The file the library was opened from ("" when it is not open).
std::string torch_plugin_path();

}  // namespace vecbench

/// The library's one exported symbol: its table (a static object), or null when the caller
/// expects another `abi`.
extern "C" const vecbench::TorchPluginApi* vecbench_torch_plugin(int abi);
