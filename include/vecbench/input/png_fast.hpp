// The PNG fast path (src/input/png_fast.cpp): the common PNG, 8 bits per sample and not interlaced,
// inflated whole by libdeflate (~4.5x zlib's inflate on the benchmark's photos) and unfiltered here,
// with the same RGB pixels as libpng's path in codec.cpp (strip alpha, palette and gray expanded).
// It takes a file only when libpng would read it without an error or a warning that is kept:
// anything else (another bit depth, interlacing, eXIf, APNG chunks, a chunk out of order or over
// libpng's length limit, a CRC or Adler-32 mismatch, extra or missing image data, a bad filter
// byte, a palette index past the palette) is left to libpng, whose errors and warnings stay the
// ones the user sees (one exception: a crafted deflate stream with codes the format reserves,
// which libdeflate decodes and zlib refuses; png_fast.cpp). Built where CMake finds libdeflate
// (VECBENCH_PNG_LIBDEFLATE), on little-endian hosts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace vecbench::png_fast {

/// What parse() read: the image's size and colour type, its palette and where its IDAT data is.
struct Layout {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int color_type = 0;  ///< 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA (8 bits per sample)
  int channels = 0;    ///< samples per pixel in the file: 1, 3, 1, 2, 4
  int palette_entries = 0;
  std::uint8_t palette[256 * 3] = {};
  std::vector<std::pair<const std::uint8_t*, std::size_t>> idat;  ///< the IDAT chunks' data, in order
  std::size_t idat_bytes = 0;
  /// Bytes of the inflated image: height rows of one filter byte and width * channels samples (in
  /// 64 bits: parse() refuses more than 256 MiB).
  std::uint64_t raw_bytes() const {
    return std::uint64_t{height} * (1 + std::uint64_t{width} * static_cast<std::uint64_t>(channels));
  }
};

/// True where the fast path is built in (libdeflate found at build time).
bool available();

/// Reads the chunk structure of a whole PNG file (signature, IHDR first, critical chunks' CRCs,
/// IDAT chunks together, IEND): false when the file is anything the fast path leaves to libpng.
bool parse(const std::uint8_t* data, std::size_t size, Layout& layout);

/// Inflates and unfilters `layout`'s image; only then calls `allocate(width, height)` once and
/// writes the RGB8 pixels, rows packed, into the buffer it returns. False, without calling
/// `allocate`, when the data is anything the fast path leaves to libpng (see the top).
bool decode_rgb(const Layout& layout, const std::function<std::uint8_t*(int width, int height)>& allocate);

}  // namespace vecbench::png_fast
