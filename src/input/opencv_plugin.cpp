// The only code that calls OpenCV: libvecbench_opencv.so, which vecbench opens only when a run
// needs OpenCV (input/opencv_plugin.hpp). Its one exported symbol is vecbench_opencv_plugin.
#include "vecbench/input/opencv_plugin.hpp"

#include <cstring>

#include "vecbench/input/decode.hpp"
#include "vecbench/input/decode_basic.hpp"
#include "vecbench/input/imageset.hpp"

namespace vecbench {
namespace {

void decode_any(const std::vector<std::uint8_t>& bytes, const std::string& name, const DecodeOptions& opt,
                std::string* warning, BasicRgbImage& out) {
  const cv::Mat rgb = decode_rgb(bytes, name, opt, warning);
  out.width = rgb.cols;
  out.height = rgb.rows;
  out.stride = static_cast<std::size_t>(rgb.cols) * 3;
  out.pixels.resize(out.stride * static_cast<std::size_t>(rgb.rows));
  for (int y = 0; y < rgb.rows; ++y) std::memcpy(out.pixels.data() + out.stride * y, rgb.ptr(y), out.stride);
}

std::string image_set(const ImageSetSpec::Generate& g) { return generate_image_set(g).string(); }

OpenCvPluginApi make_api() {
  OpenCvPluginApi api;
  api.decode = &decode_any;
  api.generate_image_set = &image_set;
  return api;
}

}  // namespace
}  // namespace vecbench

extern "C" __attribute__((visibility("default"))) const vecbench::OpenCvPluginApi* vecbench_opencv_plugin(int abi) {
  static const vecbench::OpenCvPluginApi api = vecbench::make_api();
  return abi == vecbench::kOpenCvPluginAbi ? &api : nullptr;
}
