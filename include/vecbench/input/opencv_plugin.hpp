// OpenCV, loaded only when a run needs it: for image formats other than JPEG and PNG (which
// codec.hpp decodes with libjpeg and libpng) and for generated image sets. OpenCV's shared
// libraries pull in about 140 others (GDAL, ...), 0.2 s at every process start on 2 cores, so
// the code that calls OpenCV lives in libvecbench_opencv.so (src/input/opencv_plugin.cpp),
// which vecbench opens on first use (core/system/plugin_library.hpp; $VECBENCH_OPENCV_LIBRARY first).
// This header includes no OpenCV.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vecbench/input/decode_common.hpp"
#include "vecbench/input/imageset_spec.hpp"

namespace vecbench {

struct BasicRgbImage;

/// Bumped whenever OpenCvPluginApi changes; a library of another version is refused.
constexpr int kOpenCvPluginAbi = 1;

/// The functions of libvecbench_opencv.so (built from the same tree by the same compiler).
struct OpenCvPluginApi {
  int abi = kOpenCvPluginAbi;
  std::size_t size = sizeof(OpenCvPluginApi);
  /// decode_rgb (decode.hpp) of any format OpenCV reads, into `out`: the same pixels, checks and
  /// errors (InputError naming the file).
  void (*decode)(const std::vector<std::uint8_t>& bytes, const std::string& name, const DecodeOptions& opt,
                 std::string* warning, BasicRgbImage& out) = nullptr;
  /// generate_image_set (imageset.hpp): makes or finds the set, returns its folder.
  std::string (*generate_image_set)(const ImageSetSpec::Generate& g) = nullptr;
};

/// The library's table, opened on the first call (thread-safe). Throws Error naming every path
/// tried and why when it cannot be opened.
const OpenCvPluginApi& opencv_plugin();

/// Whether the library is open in this process (opens nothing).
bool opencv_plugin_loaded();

}  // namespace vecbench

/// The library's one exported symbol: its table, or null when the caller expects another `abi`.
extern "C" const vecbench::OpenCvPluginApi* vecbench_opencv_plugin(int abi);
