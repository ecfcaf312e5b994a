// Opens libvecbench_torch.so on first use (engine/torch_plugin.hpp). No LibTorch here.
#include <mutex>
#include <string>

#include "vecbench/core/plugin_library.hpp"
#include "vecbench/engine/torch_plugin.hpp"

namespace vecbench {
namespace {

struct Loaded {
  std::mutex mu;
  const TorchPluginApi* api = nullptr;  // set once, never cleared: the library is never closed
  std::string path;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

}  // namespace

const TorchPluginApi& torch_plugin() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lk(l.mu);
  if (l.api) return *l.api;
#ifdef VECBENCH_TORCH_PLUGIN_DIR
  const std::string build_dir = VECBENCH_TORCH_PLUGIN_DIR;
#else
  const std::string build_dir;
#endif
  l.api = open_plugin_library<TorchPluginApi>(
      plugin_library_candidates("libvecbench_torch.so", "VECBENCH_TORCH_LIBRARY", build_dir), "vecbench_torch_plugin",
      kTorchPluginAbi,
      [](const TorchPluginApi& a) { return a.abi == kTorchPluginAbi && a.size == sizeof(TorchPluginApi); },
      "LibTorch's part of vecbench (libvecbench_torch.so), which the TorchScript engine, CUDA devices and a "
      "first read of a model's weights need (build it, or set VECBENCH_TORCH_LIBRARY to its path)",
      &l.path);
  return *l.api;
}

const TorchPluginApi* torch_plugin_if_loaded() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lk(l.mu);
  return l.api;
}

std::string torch_plugin_path() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lk(l.mu);
  return l.path;
}

}  // namespace vecbench
