// Decoding image bytes into RGB uint8 without OpenCV (a build without OpenCV's C++ library): JPEG
// and PNG through codec.hpp, with the same checks, strictness, error messages and pixels as
// decode.hpp's decode_rgb, and EXIF orientation applied as OpenCV 4.6 does
// (apply_exif_orientation). Other formats are refused, naming the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/error.hpp"
#include "vecbench/input/decode_common.hpp"

namespace vecbench {

/// A decoded image: `height` rows of `width` interleaved RGB8 pixels, `stride` bytes apart.
struct BasicRgbImage {
  std::vector<std::uint8_t> pixels;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
};

/// decode_rgb (decode.hpp) for JPEG and PNG, without OpenCV: the same pixels, options, warnings
/// and errors. Other formats throw InputError ("cannot decode BMP here: ..."), unrecognized data
/// "not an image".
inline BasicRgbImage decode_rgb_basic(const std::vector<std::uint8_t>& bytes, const std::string& name,
                                      const DecodeOptions& opt = {}, std::string* warning = nullptr) {
  const DecodePlan p = plan_decode(bytes, name, opt, warning);
  if (p.format.empty()) throw InputError(name, "not an image (unrecognized format)");
  if (!p.direct())
    throw InputError(name, "cannot decode " + p.format +
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
