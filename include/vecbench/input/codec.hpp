// Direct JPEG (libjpeg-turbo) and PNG (libpng 1.6) decoding into 8-bit RGB, with the decoders'
// warnings returned to the caller instead of printed, and image headers read without decoding.
// The pixels are bit-identical to OpenCV 4.6's `cv::imdecode(..., IMREAD_COLOR)` followed by
// BGR->RGB (same library calls, same colour conversions, same EXIF orientation reading).
// Plain C++ types only: no OpenCV, libjpeg or libpng in this header (src/input/codec.cpp has them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vecbench {

/// An image container format, as its magic bytes (decode_common.hpp's sniff_format) or its header
/// say. A value, compared as one: its name is for messages only (format_name).
enum class ImageFormat { unknown, jpeg, png, bmp, tiff, webp, gif, heif, avif, jpeg_xl, pnm };

/// The format's name in messages: "JPEG", "PNG", "BMP", "TIFF", "WebP", "GIF", "HEIF", "AVIF",
/// "JPEG XL", "PNM"; "" for unknown.
inline const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::gif:
      return "GIF";
    case ImageFormat::heif:
      return "HEIF";
    case ImageFormat::avif:
      return "AVIF";
    case ImageFormat::jpeg_xl:
      return "JPEG XL";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::unknown:
      break;
  }
  return "";
}

/// Format and size of an image, read from its header without decoding it.
struct ImageHeader {
  ImageFormat format = ImageFormat::unknown;  ///< JPEG, PNG, BMP, TIFF, WebP, PNM or GIF
  std::uint64_t width = 0;                    ///< pixels (for JPEG: of the first frame, at full scale)
  std::uint64_t height = 0;                   ///< pixels
};

/// Reads the size from the header of a JPEG (SOF), PNG (IHDR), BMP, WebP (VP8, VP8L, VP8X),
/// TIFF (IFD0 ImageWidth/ImageLength), PNM (P1-P6) or GIF (logical screen); false when the
/// format is not one of those or the header is incomplete or names a zero size.
bool read_image_header(const std::uint8_t* data, std::size_t size, ImageHeader& header);
inline bool read_image_header(const std::vector<std::uint8_t>& bytes, ImageHeader& header) {
  return read_image_header(bytes.data(), bytes.size(), header);
}

/// A fatal decoder error; what() is the decoder's own words (e.g. "Not a JPEG file: starts with
/// 0x89 0x50", "IDAT: CRC error").
struct CodecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The image's size is over `CodecOptions::max_pixels` (found before any pixel is decoded).
struct ImageTooLargeError : std::runtime_error {
  ImageTooLargeError(std::uint64_t w, std::uint64_t h, std::uint64_t limit)
      : std::runtime_error("image too large: " + std::to_string(w) + "x" + std::to_string(h) + " = " +
                           std::to_string(w * h) + " pixels, over the limit of " + std::to_string(limit)),
        width(w),
        height(h),
        max_pixels(limit) {}
  std::uint64_t width, height, max_pixels;
};

/// Decoder settings.
struct CodecOptions {
  int scale_denom = 1;  ///< JPEG only: decode at 1/1, 1/2, 1/4 or 1/8 scale (libjpeg DCT scaling)
  /// JPEG only: libjpeg's fast integer inverse DCT (JDCT_IFAST), as TensorFlow's DecodeJpeg uses by
  /// default; false: the accurate one (JDCT_ISLOW), as OpenCV and PIL use.
  bool fast_idct = false;
  std::uint64_t max_pixels = 0;  ///< refuse images with more output pixels (0: no limit)
  /// PNG only: the libdeflate fast path (png_fast.hpp) for the files it takes, with the same pixels;
  /// false: libpng for every file (the tests compare the two).
  bool png_libdeflate = true;
  /// Where the pixels go: called once, after the header and before any pixel is decoded, with
  /// the output size; returns `width * height * 3` bytes (rows packed) that outlive the call.
  /// Empty: into DecodeResult::image.pixels.
  std::function<std::uint8_t*(int width, int height)> allocate;
};

/// A decoded image: `width * height * 3` bytes, RGB, rows packed without padding (`pixels` stays
/// empty when CodecOptions::allocate provided the buffer).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;
};

/// The result of a decode: the image and the decoder's data warnings, in its own words, in the
/// order emitted (libjpeg's `format_message` text; libpng's warning text). libpng warnings about
/// ancillary (metadata) chunks ("iCCP: known incorrect sRGB profile", "tEXt: CRC error", ...) do
/// not affect pixels and are dropped, as are libjpeg's "unknown JFIF revision number" and its
/// "N extraneous bytes before marker" for junk between the segments before the first scan.
struct DecodeResult {
  RgbImage image;
  std::vector<std::string> warnings;  ///< distinct warnings, at most 8
  std::size_t warning_count = 0;      ///< all data warnings, duplicates included
  int exif_orientation = 0;           ///< EXIF orientation as OpenCV 4.6 reads it (0: none); not applied
  bool png_libdeflate = false;        ///< a PNG decoded by the fast path (png_fast.hpp), not libpng
};

/// Decodes a JPEG (baseline, progressive, arithmetic; gray, YCbCr, RGB, CMYK, YCCK) into RGB.
/// Throws CodecError (fatal libjpeg error) or ImageTooLargeError.
DecodeResult decode_jpeg(const std::uint8_t* data, std::size_t size, const CodecOptions& opt = {});

/// Decodes a PNG (any bit depth and colour type, tRNS, interlaced) into RGB: 16-bit samples keep
/// their high byte, alpha is dropped, gray and palette are expanded. The common 8-bit PNG goes
/// through the libdeflate fast path where it is built in (`png_libdeflate`), everything else
/// (and every error and warning) through libpng. Throws CodecError or ImageTooLargeError.
DecodeResult decode_png(const std::uint8_t* data, std::size_t size, const CodecOptions& opt = {});

/// The orientation (1-8, or another value as stored; 0 when absent or unreadable) in a TIFF-format
/// EXIF block (starting at "II"/"MM"), read exactly as OpenCV 4.6's ExifReader reads it: IFD0
/// only, the first orientation entry, its value as a 16-bit number at the entry's value field,
/// and nothing when a tag before it (a string or rational tag OpenCV parses) points outside.
int exif_orientation(const std::uint8_t* tiff, std::size_t size);

/// Flips/rotates `img` for EXIF orientation 2-8 as OpenCV 4.6 does (other values: unchanged);
/// `img.pixels` must hold the image.
void apply_exif_orientation(RgbImage& img, int orientation);

}  // namespace vecbench
