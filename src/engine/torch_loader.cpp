// Opens libvecbench_torch.so on first use (engine/torch_plugin.hpp). No LibTorch here.
#include <string>

#include "vecbench/core/system/plugin_library.hpp"
#include "vecbench/engine/torch_plugin.hpp"

namespace vecbench {
namespace {

PluginLibrary<TorchPluginApi>& library() {
#ifdef VECBENCH_TORCH_PLUGIN_DIR
  const char* build_dir = VECBENCH_TORCH_PLUGIN_DIR;
#else
  const char* build_dir = "";
#endif
  static PluginLibrary<TorchPluginApi> lib(
      "libvecbench_torch.so", "VECBENCH_TORCH_LIBRARY", "vecbench_torch_plugin", kTorchPluginAbi,
      "LibTorch's part of vecbench (libvecbench_torch.so), which the TorchScript engine, CUDA devices and a "
      "first read of a model's weights need (build it, or set VECBENCH_TORCH_LIBRARY to its path)",
      build_dir);
  return lib;
}

}  // namespace

const TorchPluginApi& torch_plugin() { return library().get(); }

const TorchPluginApi* torch_plugin_if_loaded() { return library().if_loaded(); }

std::string torch_plugin_path() { return library().path(); }

}  // namespace vecbench
