// A small PNG writer for the tests of the PNG fast path (png_fast.hpp) and of its agreement with
// libpng: 8-bit samples, the filter of each row chosen by the test and applied as the PNG
// specification (section 9) defines it, libdeflate's zlib compressor, the IDAT data cut into chunks
// of a chosen size, and extra chunks before and after it. Written from the specification, apart
// from the decoders, so that a round trip checks their unfiltering. Needs libdeflate
// (VECBENCH_PNG_LIBDEFLATE); empty without it.
#pragma once
#ifdef VECBENCH_PNG_LIBDEFLATE
#include <libdeflate.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace vecbench::testing {

using PngBytes = std::vector<std::uint8_t>;

struct PngChunkSpec {
  std::string type;  ///< four letters
  PngBytes data;
};

/// An image to encode: `samples` holds height rows of width * channels 8-bit samples.
struct PngSpec {
  int width = 0;
  int height = 0;
  int color_type = 2;                                 ///< 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA
  PngBytes samples;                                   ///< palette images: indices
  PngBytes palette;                                   ///< 3 bytes an entry (color type 3)
  std::vector<int> filters;                           ///< filter type of row y: filters[y % size]; empty: y % 5
  std::size_t idat_chunk = 1 << 20;                   ///< bytes of zlib data per IDAT chunk
  std::vector<PngChunkSpec> before_idat, after_idat;  ///< extra chunks (after PLTE / before IEND)
};

inline int png_channels(int color_type) {
  switch (color_type) {
    case 0:
      return 1;
    case 2:
      return 3;
    case 3:
      return 1;
    case 4:
      return 2;
    case 6:
      return 4;
    default:
      throw std::invalid_argument("png_channels: colour type " + std::to_string(color_type));
  }
}

inline void png_put32(PngBytes& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

/// A w x h image of colour type `ct` (palette: 1-256 random entries): smooth areas
/// (back-references, small residuals) and noise.
inline PngSpec png_random_spec(int ct, int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  PngSpec s;
  s.width = w;
  s.height = h;
  s.color_type = ct;
  const int entries = 1 + static_cast<int>(rng() % 256);
  if (ct == 3)
    for (int i = 0; i < 3 * entries; ++i) s.palette.push_back(static_cast<std::uint8_t>(rng()));
  const std::size_t n = static_cast<std::size_t>(w) * h * png_channels(ct);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned v = (i / 7) % 3 == 0 ? rng() : static_cast<unsigned>(i * 3 + i / 97);
    s.samples.push_back(static_cast<std::uint8_t>(ct == 3 ? v % static_cast<unsigned>(entries) : v));
  }
  return s;
}

/// Appends a chunk (length, type, data, CRC).
inline void png_append_chunk(PngBytes& out, const std::string& type, const PngBytes& data) {
  png_put32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t at = out.size();
  out.insert(out.end(), type.begin(), type.end());
  out.insert(out.end(), data.begin(), data.end());
  png_put32(out, libdeflate_crc32(0, out.data() + at, out.size() - at));
}

/// The chunk length at byte `p` of a PNG file.
inline std::uint32_t png_chunk_length(const PngBytes& f, std::size_t p) {
  return (std::uint32_t{f[p]} << 24) | (std::uint32_t{f[p + 1]} << 16) | (std::uint32_t{f[p + 2]} << 8) | f[p + 3];
}

/// Rewrites the CRC of every chunk that the lengths reach within the file (after a test changed
/// its bytes, so that the change gets past the CRC check).
inline void png_fix_crcs(PngBytes& f) {
  for (std::size_t p = 8; p + 12 <= f.size();) {
    const std::uint32_t len = png_chunk_length(f, p);
    if (len > f.size() - p - 12) break;
    const std::uint32_t crc = libdeflate_crc32(0, f.data() + p + 4, 4 + std::size_t{len});
    for (int k = 0; k < 4; ++k) f[p + 8 + len + k] = static_cast<std::uint8_t>(crc >> (24 - 8 * k));
    p += 12 + len;
  }
}

/// The rows filtered as the specification says, each after its filter-type byte.
inline PngBytes png_filter_rows(const PngSpec& s) {
  const int b = png_channels(s.color_type);
  const std::size_t n = static_cast<std::size_t>(s.width) * b;
  PngBytes out;
  const PngBytes zero(n, 0);
  for (int y = 0; y < s.height; ++y) {
    const std::uint8_t* raw = s.samples.data() + y * n;
    const std::uint8_t* up = y == 0 ? zero.data() : raw - n;
    const int f = s.filters.empty() ? y % 5 : s.filters[static_cast<std::size_t>(y) % s.filters.size()];
    out.push_back(static_cast<std::uint8_t>(f));
    for (std::size_t i = 0; i < n; ++i) {
      const int a = i >= static_cast<std::size_t>(b) ? raw[i - b] : 0, u = up[i],
                c = i >= static_cast<std::size_t>(b) ? up[i - b] : 0;
      const int p = a + u - c, pa = std::abs(p - a), pb = std::abs(p - u), pc = std::abs(p - c);
      const int paeth = pa <= pb && pa <= pc ? a : pb <= pc ? u : c;
      const int pred = f == 1 ? a : f == 2 ? u : f == 3 ? (a + u) / 2 : f == 4 ? paeth : 0;
      out.push_back(static_cast<std::uint8_t>(raw[i] - pred));
    }
  }
  return out;
}

/// The zlib stream of `raw` (libdeflate, level 6).
inline PngBytes png_zlib(const PngBytes& raw) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  PngBytes z(libdeflate_zlib_compress_bound(c, raw.size()));
  const std::size_t n = libdeflate_zlib_compress(c, raw.data(), raw.size(), z.data(), z.size());
  libdeflate_free_compressor(c);
  if (n == 0) throw std::runtime_error("png_zlib: compression failed");
  z.resize(n);
  return z;
}

/// The zlib stream `z` with its header's CMF byte (compression method and window) set to `cmf`
/// and FLG's check bits made valid again.
inline PngBytes png_with_cmf(PngBytes z, std::uint8_t cmf) {
  z[0] = cmf;
  const int flg = z[1] & 0xE0;
  z[1] = static_cast<std::uint8_t>(flg + (31 - (cmf * 256 + flg) % 31) % 31);
  return z;
}

/// The PNG file of `s` with the zlib stream `z` as its image data.
inline PngBytes png_file(const PngSpec& s, const PngBytes& z) {
  PngBytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  PngBytes ihdr;
  png_put32(ihdr, static_cast<std::uint32_t>(s.width));
  png_put32(ihdr, static_cast<std::uint32_t>(s.height));
  ihdr.insert(ihdr.end(), {8, static_cast<std::uint8_t>(s.color_type), 0, 0, 0});
  png_append_chunk(out, "IHDR", ihdr);
  if (s.color_type == 3) png_append_chunk(out, "PLTE", s.palette);
  for (const auto& c : s.before_idat) png_append_chunk(out, c.type, c.data);
  for (std::size_t at = 0; at < z.size() || at == 0; at += s.idat_chunk) {
    const std::size_t end = std::min(z.size(), at + s.idat_chunk);
    png_append_chunk(
        out, "IDAT",
        PngBytes(z.begin() + static_cast<std::ptrdiff_t>(at), z.begin() + static_cast<std::ptrdiff_t>(end)));
    if (end == z.size()) break;
  }
  for (const auto& c : s.after_idat) png_append_chunk(out, c.type, c.data);
  png_append_chunk(out, "IEND", {});
  return out;
}

inline PngBytes png_encode(const PngSpec& s) { return png_file(s, png_zlib(png_filter_rows(s))); }

/// The RGB8 pixels libpng's transformations in codec.cpp give for `s` (alpha dropped, gray
/// replicated, palette looked up).
inline PngBytes png_expected_rgb(const PngSpec& s) {
  const int b = png_channels(s.color_type);
  const std::size_t pixels = static_cast<std::size_t>(s.width) * s.height;
  PngBytes rgb(pixels * 3);
  for (std::size_t i = 0; i < pixels; ++i) {
    const std::uint8_t* p = s.samples.data() + i * b;
    for (int c = 0; c < 3; ++c)
      rgb[i * 3 + c] = s.color_type == 3 ? s.palette[3 * std::size_t{p[0]} + c] : (b <= 2 ? p[0] : p[c]);
  }
  return rgb;
}

}  // namespace vecbench::testing

#endif  // VECBENCH_PNG_LIBDEFLATE
