// What decoding image bytes needs without OpenCV (decode.hpp adds OpenCV, decode_basic.hpp does
// without): the options, format sniffing and JPEG header probes, the checks made before any pixel
// is decoded (empty file, unsupported format, the `max_pixels` limit from the header, truncated
// JPEG, the `--fast-decode` DCT scale), and the strict, attributed JPEG/PNG decode through
// codec.hpp into a caller's buffer. EXIF orientation is left to the caller.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/codec.hpp"
#include "vecbench/input/exif_policy.hpp"
#include "vecbench/input/jpeg_decoder.hpp"

namespace vecbench {

/// Decoder settings.
struct DecodeOptions {
  ExifPolicy exif = ExifPolicy::ignore;           ///< EXIF orientation: ignore (TF-like) or apply
  bool fast = false;                              ///< decode large JPEGs at a reduced DCT scale (1/2, 1/4, 1/8)
  JpegDecoder jpeg_decoder = JpegDecoder::exact;  ///< exact (PIL/OpenCV) or tf (TF's fast IDCT)
  int target_size = 299;                          ///< the size the image is resized to (for choosing the DCT scale)
  /// Accept files with decoder data warnings (corrupt or truncated JPEG/PNG data that still
  /// decodes), reporting the warnings through decode_rgb's `warning`; strict (false): they fail.
  bool lenient = false;
  /// Refuse images with more pixels than this (from the header, before decoding; PIL's
  /// decompression-bomb limit); 0: no limit.
  std::uint64_t max_pixels = 178956970;
};

/// The container format from its magic bytes (unknown if none matches).
inline ImageFormat sniff_format(const std::vector<std::uint8_t>& b) {
  auto starts = [&](const char* m, std::size_t n) { return b.size() >= n && std::memcmp(b.data(), m, n) == 0; };
  if (starts("\xFF\xD8\xFF", 3)) return ImageFormat::jpeg;
  if (starts("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::png;
  if (starts("BM", 2)) return ImageFormat::bmp;
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return ImageFormat::tiff;
  if (b.size() >= 12 && starts("RIFF", 4) && std::memcmp(b.data() + 8, "WEBP", 4) == 0) return ImageFormat::webp;
  if (starts("GIF8", 4)) return ImageFormat::gif;
  if (b.size() >= 12 && std::memcmp(b.data() + 4, "ftyp", 4) == 0) {  // ISO base media: HEIF, AVIF
    const std::string brand(reinterpret_cast<const char*>(b.data() + 8), 4);
    if (brand == "avif" || brand == "avis") return ImageFormat::avif;
    if (brand == "heic" || brand == "heix" || brand == "hevc" || brand == "heim" || brand == "heis" ||
        brand == "mif1" || brand == "msf1")
      return ImageFormat::heif;
  }
  if (starts("\xFF\x0A", 2) || starts("\0\0\0\x0CJXL \r\n\x87\n", 12)) return ImageFormat::jpeg_xl;
  if (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') return ImageFormat::pnm;
  return ImageFormat::unknown;
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

/// True when a 3-component JPEG's colour is YCbCr as libjpeg reads it (the usual case), false
/// where libjpeg takes it as RGB: an Adobe APP14 marker with transform 0, or SOF component ids
/// 'R', 'G', 'B' without JFIF. Grayscale and 4-component streams say true here (other checks
/// handle them). A device decoder that assumes YCbCr must leave the others to the host.
inline bool jpeg_colour_is_ycc(const std::vector<std::uint8_t>& b) {
  bool jfif = false;
  int adobe = -1;  // the APP14 Adobe marker's transform, -1 without one
  std::size_t i = 2;
  while (i + 4 < b.size()) {
    if (b[i] != 0xFF) return true;  // not a marker: leave it to the decoders' own checks
    const std::uint8_t m = b[i + 1];
    if (m == 0xFF) {
      ++i;
      continue;
    }
    const std::size_t len = (static_cast<std::size_t>(b[i + 2]) << 8) | b[i + 3];
    if (len < 2 || i + 2 + len > b.size()) return true;
    const std::uint8_t* seg = b.data() + i + 4;  // segment payload, len - 2 bytes
    if (m == 0xE0 && len >= 7 && std::memcmp(seg, "JFIF", 4) == 0) jfif = true;
    if (m == 0xEE && len >= 14 && std::memcmp(seg, "Adobe", 5) == 0) adobe = seg[11];  // its colour transform
    if ((m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      if (len < 8 || seg[5] != 3 || len < 8 + 3 * 3) return true;  // gray (Adobe transform 0 is usual there), CMYK
      if (adobe >= 0) return adobe != 0;
      return jfif || !(seg[6] == 'R' && seg[9] == 'G' && seg[12] == 'B');
    }
    if (m == 0xDA) return true;  // start of scan before any SOF: leave it to the decoders
    i += 2 + len;
  }
  return true;
}

/// True when a JPEG stream has its end-of-image marker (trailing padding allowed).
inline bool jpeg_complete(const std::vector<std::uint8_t>& b) {
  const std::size_t tail = b.size() > 4096 ? b.size() - 4096 : 0;
  for (std::size_t i = b.size(); i-- > tail + 1;)
    if (b[i - 1] == 0xFF && b[i] == 0xD9) return true;
  return false;
}

/// True for formats sniff_format names that OpenCV 4.6 (Debian's build) cannot decode.
inline bool unsupported_format(ImageFormat f) {
  return f == ImageFormat::gif || f == ImageFormat::heif || f == ImageFormat::avif || f == ImageFormat::jpeg_xl;
}

namespace detail {

inline std::string too_large(std::uint64_t w, std::uint64_t h, std::uint64_t limit) {
  return "image too large: " + std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(w * h) +
         " pixels, over the limit of " + std::to_string(limit) + " (--max-pixels)";
}

// The decoder's warnings as one line: "libjpeg: A; B (5 warnings)".
inline std::string warning_text(const char* lib, const DecodeResult& r) {
  std::string s = lib;
  s += ": ";
  for (std::size_t i = 0; i < r.warnings.size(); ++i) s += (i ? "; " : "") + r.warnings[i];
  if (r.warning_count > r.warnings.size()) s += " (" + std::to_string(r.warning_count) + " warnings)";
  return s;
}

}  // namespace detail

/// What the checks before decoding found: the format, the header (if it reads) and, for JPEG,
/// the DCT scale denominator to decode at.
struct DecodePlan {
  ImageFormat format = ImageFormat::unknown;  ///< sniff_format's
  bool have_header = false;                   ///< `header` was read (read_image_header)
  ImageHeader header;
  int scale_denom = 1;  ///< JPEG: 1, 2, 4 or 8 (--fast-decode)
  /// JPEG and PNG go through codec.hpp (decode_direct_into).
  bool direct() const { return format == ImageFormat::jpeg || format == ImageFormat::png; }
  /// The format's name for messages ("" unknown).
  std::string name() const { return format_name(format); }
};

/// The checks every decode makes before touching a pixel (clearing `*warning`): empty file,
/// a format OpenCV cannot decode either, the pixel limit from the header, a JPEG without its
/// end-of-image marker; and the reduced DCT scale for `opt.fast`. Throws InputError.
inline DecodePlan plan_decode(const std::vector<std::uint8_t>& bytes, const std::string& name, const DecodeOptions& opt,
                              std::string* warning) {
  if (warning) warning->clear();
  if (bytes.empty()) throw InputError(name, "empty file");
  DecodePlan p;
  p.format = sniff_format(bytes);
  if (unsupported_format(p.format)) throw InputError(name, "unsupported format (" + p.name() + ")");
  p.have_header = read_image_header(bytes, p.header);
  if (p.have_header && opt.max_pixels != 0 && p.header.width * p.header.height > opt.max_pixels)
    throw InputError(name, detail::too_large(p.header.width, p.header.height, opt.max_pixels));
  if (p.format == ImageFormat::jpeg) {
    if (!jpeg_complete(bytes)) throw InputError(name, "truncated JPEG (no end-of-image marker)");
    if (opt.fast && p.have_header) {
      const std::uint64_t m = std::min(p.header.width, p.header.height),
                          t = static_cast<std::uint64_t>(opt.target_size);
      p.scale_denom = m >= 8 * t ? 8 : m >= 4 * t ? 4 : m >= 2 * t ? 2 : 1;
    }
  }
  return p;
}

namespace detail {

// JPEG or PNG (`fmt`) through codec.hpp into the buffer `allocate` returns (empty: into the
// result's image.pixels), strict unless `opt.lenient` (then the warnings go into `*warning`).
// EXIF orientation is not applied: the result's exif_orientation says it. An exception that
// `allocate` throws passes through unchanged.
inline DecodeResult decode_direct_into(const std::vector<std::uint8_t>& bytes, const std::string& name,
                                       ImageFormat format, const DecodeOptions& opt, int scale_denom,
                                       std::string* warning, std::function<std::uint8_t*(int, int)> allocate) {
  const bool jpeg = format == ImageFormat::jpeg;
  const std::string fmt = format_name(format);
  const char* lib = jpeg ? "libjpeg" : "libpng";
  CodecOptions co;
  co.scale_denom = scale_denom;
  co.fast_idct = opt.jpeg_decoder == JpegDecoder::tf;
  co.max_pixels = opt.max_pixels;
  co.allocate = std::move(allocate);
  DecodeResult r;
  try {
    r = jpeg ? decode_jpeg(bytes.data(), bytes.size(), co) : decode_png(bytes.data(), bytes.size(), co);
  } catch (const ImageTooLargeError& e) {
    throw InputError(name, too_large(e.width, e.height, e.max_pixels));
  } catch (const CodecError& e) {
    throw InputError(name, "corrupt " + fmt + " data (" + lib + ": " + e.what() + ")");
  } catch (const std::bad_alloc&) {
    throw InputError(name, "out of memory decoding the " + fmt + " image");
  }
  if (!r.warnings.empty() || r.warning_count > 0) {
    if (!opt.lenient) throw InputError(name, "corrupt " + fmt + " data (" + warning_text(lib, r) + ")");
    if (warning) *warning = warning_text(lib, r);
  }
  return r;
}

}  // namespace detail

/// A decoded RGB8 image's pixels as the resizer reads them: `rows` rows of `cols` interleaved
/// RGB pixels, `step` bytes apart.
struct RgbView {
  const std::uint8_t* data = nullptr;
  int rows = 0;
  int cols = 0;
  std::size_t step = 0;
};

}  // namespace vecbench
