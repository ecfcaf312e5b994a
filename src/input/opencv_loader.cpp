// Opens libvecbench_opencv.so on first use (input/opencv_plugin.hpp). No OpenCV here.
#include <atomic>
#include <mutex>
#include <string>

#include "vecbench/core/plugin_library.hpp"
#include "vecbench/input/opencv_plugin.hpp"

namespace vecbench {
namespace {
std::mutex g_mu;
std::atomic<const OpenCvPluginApi*> g_api{nullptr};  // set once, never cleared: never closed
}  // namespace

const OpenCvPluginApi& opencv_plugin() {
  if (const auto* a = g_api.load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lk(g_mu);
  if (const auto* a = g_api.load(std::memory_order_acquire)) return *a;
#ifdef VECBENCH_OPENCV_PLUGIN_DIR
  const std::string build_dir = VECBENCH_OPENCV_PLUGIN_DIR;
#else
  const std::string build_dir;
#endif
  const auto* api = open_plugin_library<OpenCvPluginApi>(
      plugin_library_candidates("libvecbench_opencv.so", "VECBENCH_OPENCV_LIBRARY", build_dir),
      "vecbench_opencv_plugin", kOpenCvPluginAbi,
      [](const OpenCvPluginApi& a) { return a.abi == kOpenCvPluginAbi && a.size == sizeof(OpenCvPluginApi); },
      "OpenCV's part of vecbench (libvecbench_opencv.so), which image formats other than JPEG and PNG and "
      "generated image sets need (build it, or set VECBENCH_OPENCV_LIBRARY to its path)",
      nullptr);
  g_api.store(api, std::memory_order_release);
  return *api;
}

bool opencv_plugin_loaded() { return g_api.load(std::memory_order_acquire) != nullptr; }

}  // namespace vecbench
