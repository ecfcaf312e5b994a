// Decoding image bytes into RGB uint8 without linking OpenCV: JPEG and PNG through codec.hpp, with
// the same checks, strictness, error messages and pixels as decode.hpp's decode_rgb, and EXIF
// orientation applied as OpenCV 4.6 does (apply_exif_orientation). Other formats go to OpenCV's
// decode_rgb in libvecbench_opencv.so, opened on first use (opencv_plugin.hpp), in a build with
// OpenCV (VECBENCH_WITH_OPENCV); a build without it refuses them, naming the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/decode_common.hpp"
#ifdef VECBENCH_WITH_OPENCV
#include "vecbench/input/opencv_plugin.hpp"
#endif

namespace vecbench {

/// A decoded image: `height` rows of `width` interleaved RGB8 pixels, `stride` bytes apart.
struct BasicRgbImage {
  std::vector<std::uint8_t> pixels;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
};

/// decode_rgb (decode.hpp) for JPEG and PNG, without OpenCV: the same pixels, options, warnings
/// and errors. Other formats (and unrecognized data, which OpenCV may still read) go to OpenCV's
/// decode_rgb where the build has OpenCV; without it they throw InputError ("cannot decode BMP
/// here: ..."), unrecognized data "not an image".
inline BasicRgbImage decode_rgb_basic(const std::vector<std::uint8_t>& bytes, const std::string& name,
                                      const DecodeOptions& opt = {}, std::string* warning = nullptr) {
  const DecodePlan p = plan_decode(bytes, name, opt, warning);
#ifdef VECBENCH_WITH_OPENCV
  if (!p.direct()) {
    const OpenCvPluginApi* cv = nullptr;
    try {
      cv = &opencv_plugin();
    } catch (const Error& e) {  // this file fails, naming it; the run goes on
      throw InputError(
          name, "cannot decode " + (p.name().empty() ? std::string("this file") : p.name()) + " here: " + e.what());
    }
    BasicRgbImage img;
    cv->decode(bytes, name, opt, warning, img);
    return img;
  }
#endif
  if (p.format == ImageFormat::unknown) throw InputError(name, "not an image (unrecognized format)");
  if (!p.direct())
    throw InputError(name, "cannot decode " + p.name() +
                               " here: this vecbench was built without OpenCV, so it decodes JPEG and PNG only");
  DecodeResult r = detail::decode_direct_into(bytes, name, p.format, opt, p.scale_denom, warning, {});
  if (opt.exif == ExifPolicy::apply) apply_exif_orientation(r.image, r.exif_orientation);
  BasicRgbImage img;
  img.width = r.image.width;
  img.height = r.image.height;
  img.stride = static_cast<std::size_t>(img.width) * 3;
  img.pixels = std::move(r.image.pixels);
  return img;
}

/// The resizer (image_files.hpp)'s view of a decoded image.
inline RgbView rgb_view(const BasicRgbImage& rgb) { return {rgb.pixels.data(), rgb.height, rgb.width, rgb.stride}; }

}  // namespace vecbench
