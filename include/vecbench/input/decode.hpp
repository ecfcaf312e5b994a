// Decoding image bytes into RGB uint8 with OpenCV, with clear errors for bad input (the checks and
// the JPEG/PNG decode that need no OpenCV are in decode_common.hpp; decode_basic.hpp decodes
// without OpenCV). JPEG and PNG go through the direct libjpeg/libpng decoders of codec.hpp
// (pixels identical to OpenCV 4.6's, decoder warnings caught and attributed to the file instead
// of printed); other formats through OpenCV.
// Strict by default: a decoder data warning (corrupt or truncated data that the decoder papered
// over, e.g. with grey blocks) fails the file; `lenient` accepts it and reports the warning.
// The image size is read from the header and checked against `max_pixels` before decoding.
// EXIF orientation policy: ignored by default, as TF's DecodeJpeg in the seed's graph ignores it
// (features then match TF's); `ExifPolicy::apply` rotates as the EXIF tag says (as OpenCV does).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/decode_common.hpp"

namespace vecbench {

namespace detail {

// EXIF orientation 2-8 exactly as OpenCV 4.6's ApplyExifOrientation (loadsave.cpp).
inline void apply_orientation(cv::Mat& img, int orientation) {
  if (orientation < 2 || orientation > 8) return;
  if (orientation >= 5) {
    cv::Mat t;
    cv::transpose(img, t);
    img = t;
  }
  switch (orientation) {
    case 2:
    case 6:
      cv::flip(img, img, 1);
      break;
    case 3:
    case 7:
      cv::flip(img, img, -1);
      break;
    case 4:
    case 8:
      cv::flip(img, img, 0);
      break;
    default:
      break;
  }
}

// JPEG or PNG through codec.hpp (decode_direct_into), straight into a cv::Mat.
inline cv::Mat decode_direct(const std::vector<std::uint8_t>& bytes, const std::string& name, ImageFormat format,
                             const DecodeOptions& opt, int scale_denom, std::string* warning) {
  cv::Mat img;
  const std::string fmt = format_name(format);
  const DecodeResult r =
      decode_direct_into(bytes, name, format, opt, scale_denom, warning, [&img, &name, &fmt](int w, int h) {
        try {
          img.create(h, w, CV_8UC3);
        } catch (const cv::Exception& e) {
          throw InputError(name, "cannot allocate the " + fmt + " image (OpenCV: " + e.err + ")");
        }
        return img.data;
      });
  if (opt.exif == ExifPolicy::apply) apply_orientation(img, r.exif_orientation);
  return img;
}

}  // namespace detail

/// Decodes `bytes` (the content of `name`) into an RGB uint8 image (CV_8UC3). Grayscale is
/// replicated to 3 channels, alpha is dropped, 16-bit images are reduced to 8 bits (PNG: the high
/// byte, as OpenCV does). JPEG and PNG data warnings fail the file unless `opt.lenient`, which
/// returns the image and puts the warnings into `*warning` (cleared otherwise).
/// Throws InputError naming the file and the cause.
inline cv::Mat decode_rgb(const std::vector<std::uint8_t>& bytes, const std::string& name,
                          const DecodeOptions& opt = {}, std::string* warning = nullptr) {
  const DecodePlan p = plan_decode(bytes, name, opt, warning);
  const std::string fmt = p.name();
  if (p.direct()) return detail::decode_direct(bytes, name, p.format, opt, p.scale_denom, warning);
  int flags = cv::IMREAD_COLOR;
  if (opt.exif == ExifPolicy::ignore) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  cv::Mat img;
  try {
    img =
        cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data())), flags);
  } catch (const cv::Exception& e) {
    throw InputError(name, (fmt.empty() ? std::string("undecodable file") : "corrupt " + fmt + " data") +
                               " (OpenCV: " + e.err + ")");
  }
  if (img.empty()) {
    if (fmt.empty()) throw InputError(name, "not an image (unrecognized format)");
    throw InputError(name, "corrupt or truncated " + fmt + " data (OpenCV could not decode it)");
  }
  if (!p.have_header && opt.max_pixels != 0 && img.total() > opt.max_pixels)
    throw InputError(name, detail::too_large(static_cast<std::uint64_t>(img.cols), static_cast<std::uint64_t>(img.rows),
                                             opt.max_pixels));
  if (img.depth() != CV_8U) img.convertTo(img, CV_8U, img.depth() == CV_16U ? 1.0 / 257.0 : 255.0);
  cv::Mat rgb;
  cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

/// The resizer (image_files.hpp)'s view of a decoded image.
inline RgbView rgb_view(const cv::Mat& rgb) { return {rgb.data, rgb.rows, rgb.cols, rgb.step[0]}; }

}  // namespace vecbench
