// Opens libvecbench_opencv.so on first use (input/opencv_plugin.hpp). No OpenCV here.
#include "vecbench/core/system/plugin_library.hpp"
#include "vecbench/input/opencv_plugin.hpp"

namespace vecbench {
namespace {

PluginLibrary<OpenCvPluginApi>& library() {
#ifdef VECBENCH_OPENCV_PLUGIN_DIR
  const char* build_dir = VECBENCH_OPENCV_PLUGIN_DIR;
#else
  const char* build_dir = "";
#endif
  static PluginLibrary<OpenCvPluginApi> lib(
      "libvecbench_opencv.so", "VECBENCH_OPENCV_LIBRARY", "vecbench_opencv_plugin", kOpenCvPluginAbi,
      "OpenCV's part of vecbench (libvecbench_opencv.so), which image formats other than JPEG and PNG and "
      "generated image sets need (build it, or set VECBENCH_OPENCV_LIBRARY to its path)",
      build_dir);
  return lib;
}

}  // namespace

const OpenCvPluginApi& opencv_plugin() { return library().get(); }

bool opencv_plugin_loaded() { return library().if_loaded() != nullptr; }

}  // namespace vecbench
