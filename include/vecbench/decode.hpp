// Decoding image bytes with OpenCV into RGB uint8, with clear errors for bad input.
// EXIF orientation policy: ignored by default, as TF's DecodeJpeg in the seed's graph ignores it
// (features then match TF's); `ExifPolicy::apply` rotates as the EXIF tag says.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vecbench/error.hpp"

namespace vecbench {

enum class ExifPolicy { ignore, apply };

inline ExifPolicy parse_exif_policy(const std::string& s) {
  if (s == "ignore") return ExifPolicy::ignore;
  if (s == "apply") return ExifPolicy::apply;
  throw ConfigError("exif", "unknown EXIF policy '" + s + "' (use ignore or apply)");
}

/// Decoder settings.
struct DecodeOptions {
  ExifPolicy exif = ExifPolicy::ignore;  ///< EXIF orientation: ignore (TF-like) or apply
  bool fast = false;                     ///< decode large JPEGs at a reduced DCT scale (1/2, 1/4, 1/8)
  int target_size = 299;                 ///< the size the image is resized to (for choosing the DCT scale)
};

/// Names the container format from its magic bytes ("" if unknown).
inline std::string sniff_format(const std::vector<std::uint8_t>& b) {
  auto starts = [&](const char* m, std::size_t n) { return b.size() >= n && std::memcmp(b.data(), m, n) == 0; };
  if (starts("\xFF\xD8\xFF", 3)) return "JPEG";
  if (starts("\x89PNG\r\n\x1a\n", 8)) return "PNG";
  if (starts("BM", 2)) return "BMP";
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return "TIFF";
  if (b.size() >= 12 && starts("RIFF", 4) && std::memcmp(b.data() + 8, "WEBP", 4) == 0) return "WebP";
  if (starts("GIF8", 4)) return "GIF";
  if (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') return "PNM";
  return "";
}

/// Width and height from a JPEG's SOF marker; false if not found.
inline bool jpeg_dimensions(const std::vector<std::uint8_t>& b, int& w, int& h) {
  std::size_t i = 2;
  while (i + 9 < b.size()) {
    if (b[i] != 0xFF) return false;
    const std::uint8_t m = b[i + 1];
    if (m == 0xFF) {
      ++i;
      continue;
    }
    const std::size_t len = (static_cast<std::size_t>(b[i + 2]) << 8) | b[i + 3];
    if ((m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      h = (b[i + 5] << 8) | b[i + 6];
      w = (b[i + 7] << 8) | b[i + 8];
      return w > 0 && h > 0;
    }
    i += 2 + len;
  }
  return false;
}

/// True when a JPEG stream has its end-of-image marker (trailing padding allowed).
inline bool jpeg_complete(const std::vector<std::uint8_t>& b) {
  const std::size_t tail = b.size() > 4096 ? b.size() - 4096 : 0;
  for (std::size_t i = b.size(); i-- > tail + 1;)
    if (b[i - 1] == 0xFF && b[i] == 0xD9) return true;
  return false;
}

/// Decodes `bytes` (the content of `name`) into an RGB uint8 image (CV_8UC3). Grayscale is
/// replicated to 3 channels, alpha is dropped, 16-bit images are scaled to 8 bits.
/// Throws InputError naming the file and the cause.
inline cv::Mat decode_rgb(const std::vector<std::uint8_t>& bytes, const std::string& name,
                          const DecodeOptions& opt = {}) {
  if (bytes.empty()) throw InputError(name, "empty file");
  const std::string fmt = sniff_format(bytes);
  int flags = cv::IMREAD_COLOR;
  if (opt.exif == ExifPolicy::ignore) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  if (fmt == "JPEG") {
    if (!jpeg_complete(bytes)) throw InputError(name, "truncated JPEG (no end-of-image marker)");
    int w = 0, h = 0;
    if (opt.fast && jpeg_dimensions(bytes, w, h)) {
      const int m = std::min(w, h);
      if (m >= 8 * opt.target_size)
        flags = (flags & ~cv::IMREAD_COLOR) | cv::IMREAD_REDUCED_COLOR_8;
      else if (m >= 4 * opt.target_size)
        flags = (flags & ~cv::IMREAD_COLOR) | cv::IMREAD_REDUCED_COLOR_4;
      else if (m >= 2 * opt.target_size)
        flags = (flags & ~cv::IMREAD_COLOR) | cv::IMREAD_REDUCED_COLOR_2;
    }
  }
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
  if (img.depth() != CV_8U) img.convertTo(img, CV_8U, img.depth() == CV_16U ? 1.0 / 257.0 : 255.0);
  cv::Mat rgb;
  cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

}  // namespace vecbench
