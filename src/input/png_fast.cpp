// The PNG fast path; see png_fast.hpp. The rules that send a file back to libpng follow libpng
// 1.6's pngrutil.c/pngrread.c as codec.cpp drives them (png_read_info, the transformations,
// png_read_image, png_read_end), so that a file taken here is one libpng reads with no error and
// no kept warning, and gets the same pixels:
// - signature, then IHDR (13 bytes; width and height 1..1,000,000, libpng's default user limits;
//   8-bit; compression, filter method 0; not interlaced); every chunk type four ASCII letters;
//   every chunk within the file and at most 8,000,000 bytes (libpng's default chunk limit: an
//   unprefixed warning or an error over it); every chunk's CRC (libpng: fatal for critical chunks,
//   a dropped warning otherwise);
// - critical chunks IHDR (once), PLTE (palette images only, once, before IDAT, 1-256 entries),
//   IDAT (consecutive, 2 bytes at least), IEND (empty); any other critical chunk is libpng's
//   "unknown critical chunk"; ancillary chunks: those that change no pixel under strip_alpha and
//   whose warnings libpng prefixes with the chunk's name (dropped by codec.cpp), and those libpng
//   does not know (read_chunk);
// - the zlib stream: deflate with a 32 KiB window, or a smaller one no smaller than the image's
//   bytes (libpng takes the window from the header, and zlib refuses a distance past it; libdeflate
//   does not look), no preset dictionary, exactly the image's bytes, its Adler-32, and no data
//   after its end;
// - filter bytes 0-4, palette indices below the palette's length.
// One difference is left: libdeflate decodes a few deflate streams that zlib refuses, which use
// codes the format reserves (more than 286 length or 30 distance codes in a block's header, length
// symbols 286-287, distance codes 30-31). No encoder writes them; a crafted file with them is
// decoded here where libpng would fail it.
#include "vecbench/input/png_fast.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#ifdef VECBENCH_PNG_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace vecbench::png_fast {

// The pixel stores below put bytes through 32-bit values: little-endian hosts only (x86-64, ARM64).
#if defined(VECBENCH_PNG_LIBDEFLATE) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VECBENCH_PNG_FAST 1
#endif

#ifdef VECBENCH_PNG_FAST

namespace {

constexpr std::uint32_t kUserLimit = 1000000;        // PNG_USER_WIDTH_MAX / PNG_USER_HEIGHT_MAX
constexpr std::uint32_t kChunkLimit = 8000000;       // PNG_USER_CHUNK_MALLOC_MAX
constexpr std::size_t kMaxRawBytes = 256u << 20;     // bigger images stream through libpng
constexpr std::size_t kKeepBufferBytes = 64u << 20;  // a thread keeps buffers up to this size

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}
bool letter(std::uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
std::uint32_t tag(const char* s) { return be32(reinterpret_cast<const std::uint8_t*>(s)); }

/// A thread's scratch buffer, uninitialized, kept between images up to kKeepBufferBytes.
class Scratch {
 public:
  /// n bytes, or nullptr when there is no memory for them (libpng's path streams rows instead).
  std::uint8_t* get(std::size_t n) {
    if (n > size_) {
      buf_.reset(new (std::nothrow) std::uint8_t[n]);
      size_ = buf_ ? n : 0;
    }
    return buf_.get();
  }
  void trim() {
    if (size_ > kKeepBufferBytes) {
      buf_.reset();
      size_ = 0;
    }
  }

 private:
  std::unique_ptr<std::uint8_t[]> buf_;
  std::size_t size_ = 0;
};

struct Freer {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

bool read_ihdr(const std::uint8_t* d, std::uint32_t len, Layout& l) {
  if (len != 13) return false;
  l.width = be32(d);
  l.height = be32(d + 4);
  const int depth = d[8];
  l.color_type = d[9];
  if (l.width == 0 || l.height == 0 || l.width > kUserLimit || l.height > kUserLimit || depth != 8) return false;
  if (d[10] != 0 || d[11] != 0 || d[12] != 0) return false;  // compression, filter method, interlace
  switch (l.color_type) {
    case 0:
      l.channels = 1;
      break;
    case 2:
      l.channels = 3;
      break;
    case 3:
      l.channels = 1;
      break;
    case 4:
      l.channels = 2;
      break;
    case 6:
      l.channels = 4;
      break;
    default:
      return false;
  }
  return true;
}

/// Where parse() is: IEND read; IDAT chunks seen and then another chunk.
struct ParseState {
  bool ended = false;
  bool idat_closed = false;
};

/// One chunk after IHDR; false: leave the file to libpng.
bool read_chunk(std::uint32_t type, const std::uint8_t* d, std::uint32_t len, Layout& l, ParseState& st) {
  if (type == tag("IDAT")) {
    if (st.idat_closed) return false;                               // IDAT chunks apart
    if (l.color_type == 3 && l.palette_entries == 0) return false;  // "Missing PLTE before IDAT"
    l.idat.emplace_back(d, len);
    l.idat_bytes += len;
    return true;
  }
  if (!l.idat.empty()) st.idat_closed = true;
  if (type == tag("IEND")) {
    st.ended = true;
    return len == 0 && !l.idat.empty();
  }
  if (type == tag("PLTE")) {
    if (l.color_type != 3 || l.palette_entries != 0 || !l.idat.empty() || len == 0 || len % 3 != 0 || len > 768)
      return false;
    std::memcpy(l.palette, d, len);
    l.palette_entries = static_cast<int>(len / 3);
    return true;
  }
  const bool critical = (type >> 29 & 1) == 0;  // first letter upper case
  if (critical) return false;                   // another IHDR, or a critical chunk libpng does not know
  // libpng reads these ancillary chunks with no warning but prefixed ones ("gAMA: ...", dropped by
  // codec.cpp) and changes no pixel of ours with them.
  for (const char* ok : {"bKGD", "cHRM", "gAMA", "iCCP", "pHYs", "sBIT", "sRGB", "tEXt"})
    if (type == tag(ok)) return true;
  // png_set_tIME and png_set_tRNS warn without the chunk's name (kept warnings): "Ignoring invalid
  // time value", "tRNS chunk has out-of-range samples for bit_depth" (gray and RGB, 8 bits).
  if (type == tag("tIME"))
    return len == 7 && d[2] >= 1 && d[2] <= 12 && d[3] >= 1 && d[3] <= 31 && d[4] <= 23 && d[5] <= 59 && d[6] <= 60;
  if (type == tag("tRNS")) {
    if (l.color_type == 0) return len == 2 && d[0] == 0;
    if (l.color_type == 2) return len == 6 && d[0] == 0 && d[2] == 0 && d[4] == 0;
    return true;
  }
  // The others libpng knows: eXIf (EXIF orientation, read on libpng's path), APNG's (Debian's
  // libpng reads them), sPLT (its handler can warn unprefixed) and the rarely seen hIST, oFFs,
  // pCAL, sCAL, iTXt and zTXt. A chunk libpng does not know it discards silently.
  for (const char* known : {"eXIf", "acTL", "fcTL", "fdAT", "sPLT", "hIST", "oFFs", "pCAL", "sCAL", "iTXt", "zTXt"})
    if (type == tag(known)) return false;
  return true;
}

// ---- Unfiltering (PNG specification, section 9) ---------------------------------------------------

int paeth(int a, int b, int c) {
  const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

#ifdef __SSE2__
// Paeth for 3 and 4 bytes per pixel, the pixel's channels side by side in 16-bit lanes (the
// predictor's choice made per channel, as the scalar code does it): ~3x the scalar loop.
// Pixel i's B bytes in the low lanes: one 4-byte load where the row has the byte after them (for
// B = 3 that byte rides along in lane 3, never stored), else B bytes.
template <int B>
std::uint32_t load_px(const std::uint8_t* p, std::size_t i, std::size_t n) {
  std::uint32_t v = 0;
  if (i + 4 <= n)
    std::memcpy(&v, p + i, 4);
  else
    std::memcpy(&v, p + i, B);
  return v;
}
template <int B>
void paeth_sse2(std::uint8_t* row, const std::uint8_t* prior, std::size_t n) {
  const __m128i zero = _mm_setzero_si128();
  __m128i a = zero, c = zero;
  for (std::size_t i = 0; i + B <= n; i += B) {
    const __m128i b = _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(load_px<B>(prior, i, n))), zero);
    const __m128i x = _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(load_px<B>(row, i, n))), zero);
    __m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);  // p - a = b - c, p - b = a - c
    __m128i pc = _mm_add_epi16(pa, pb);                          // p - c
    pa = _mm_max_epi16(pa, _mm_sub_epi16(zero, pa));
    pb = _mm_max_epi16(pb, _mm_sub_epi16(zero, pb));
    pc = _mm_max_epi16(pc, _mm_sub_epi16(zero, pc));
    const __m128i least = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
    const __m128i use_a = _mm_cmpeq_epi16(pa, least), use_b = _mm_andnot_si128(use_a, _mm_cmpeq_epi16(pb, least));
    const __m128i use_c = _mm_andnot_si128(_mm_or_si128(use_a, use_b), _mm_set1_epi16(-1));
    const __m128i pred =
        _mm_or_si128(_mm_or_si128(_mm_and_si128(use_a, a), _mm_and_si128(use_b, b)), _mm_and_si128(use_c, c));
    a = _mm_and_si128(_mm_add_epi16(x, pred), _mm_set1_epi16(0xFF));
    c = b;
    const std::uint32_t v = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(a, zero)));
    std::memcpy(row + i, &v, B);
  }
}
#endif

/// Reverses filter `type` on `row` (n bytes, B bytes per pixel) given the unfiltered `prior` row.
template <int B>
bool unfilter(int type, std::uint8_t* row, const std::uint8_t* prior, std::size_t n) {
  switch (type) {
    case 0:
      return true;
    case 1:
      for (std::size_t i = B; i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + row[i - B]);
      return true;
    case 2:
      for (std::size_t i = 0; i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + prior[i]);
      return true;
    case 3:
      for (std::size_t i = 0; i < B && i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + (prior[i] >> 1));
      for (std::size_t i = B; i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + ((row[i - B] + prior[i]) >> 1));
      return true;
    case 4:
#ifdef __SSE2__
      if (B >= 3) {
        paeth_sse2<B>(row, prior, n);
        return true;
      }
#endif
      for (std::size_t i = 0; i < B && i < n; ++i) row[i] = static_cast<std::uint8_t>(row[i] + prior[i]);
      for (std::size_t i = B; i < n; ++i)
        row[i] = static_cast<std::uint8_t>(row[i] + paeth(row[i - B], prior[i], prior[i - B]));
      return true;
    default:
      return false;  // libpng: "bad adaptive filter value"
  }
}

bool unfilter_row(int channels, int type, std::uint8_t* row, const std::uint8_t* prior, std::size_t n) {
  switch (channels) {
    case 1:
      return unfilter<1>(type, row, prior, n);
    case 2:
      return unfilter<2>(type, row, prior, n);
    case 3:
      return unfilter<3>(type, row, prior, n);
    default:
      return unfilter<4>(type, row, prior, n);
  }
}

/// Writes 3 bytes of pixel x from a 4-byte value whose first three bytes are R, G, B: a 4-byte
/// store where the row has room for it (the next pixel overwrites the 4th byte).
inline void put_rgb(std::uint8_t* o, std::size_t x, std::size_t w, std::uint32_t v) {
  if (x + 1 < w)
    std::memcpy(o + 3 * x, &v, 4);
  else
    std::memcpy(o + 3 * x, &v, 3);
}

/// One unfiltered row of `l`'s samples to packed RGB8, as libpng's transformations give it;
/// `palette4`: the palette, 4 bytes an entry.
void row_to_rgb(const Layout& l, const std::uint32_t* palette4, const std::uint8_t* s, std::uint8_t* o) {
  const std::size_t w = l.width;
  std::uint32_t v = 0;
  switch (l.color_type) {
    case 0:
      for (std::size_t x = 0; x < w; ++x) put_rgb(o, x, w, s[x] * 0x010101u);
      break;
    case 2:
      std::memcpy(o, s, 3 * w);
      break;
    case 3:
      for (std::size_t x = 0; x < w; ++x) put_rgb(o, x, w, palette4[s[x]]);
      break;
    case 4:
      for (std::size_t x = 0; x < w; ++x) put_rgb(o, x, w, s[2 * x] * 0x010101u);
      break;
    default:
      for (std::size_t x = 0; x < w; ++x) {
        std::memcpy(&v, s + 4 * x, 4);
        put_rgb(o, x, w, v);
      }
  }
}

/// Inflates `l`'s IDAT data into `raw` (l.raw_bytes()): exactly that many bytes, all input used.
bool inflate(const Layout& l, std::uint8_t* raw, Scratch& joined) {
  if (l.idat_bytes < 2) return false;
  const std::uint8_t* in = l.idat.front().first;
  if (l.idat.size() > 1) {
    std::uint8_t* j = joined.get(l.idat_bytes);
    if (!j) return false;
    std::size_t at = 0;
    for (const auto& c : l.idat) {
      if (c.second > 0) std::memcpy(j + at, c.first, c.second);
      at += c.second;
    }
    in = j;
  }
  // Deflate with a window libpng (which takes it from the header) could not have exceeded: 32 KiB,
  // or one at least as large as the whole image (libpng's writer picks such small windows).
  const int cinfo = in[0] >> 4;
  if ((in[0] & 15) != 8 || cinfo > 7 || (cinfo < 7 && l.raw_bytes() > (std::size_t{1} << (cinfo + 8)))) return false;
  thread_local std::unique_ptr<libdeflate_decompressor, Freer> d(libdeflate_alloc_decompressor());
  if (!d) return false;
  std::size_t used = 0;
  const auto rc = libdeflate_zlib_decompress_ex(d.get(), in, l.idat_bytes, raw, static_cast<std::size_t>(l.raw_bytes()),
                                                &used, nullptr);
  return rc == LIBDEFLATE_SUCCESS && used == l.idat_bytes;
}

}  // namespace

bool available() { return true; }

bool parse(const std::uint8_t* data, std::size_t size, Layout& l) {
  static const std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  l = Layout{};
  if (!data || size < 8 || std::memcmp(data, kSignature, 8) != 0) return false;
  ParseState st;
  for (std::size_t p = 8; !st.ended;) {
    if (size - p < 12) return false;  // truncated: libpng's error
    const std::uint32_t len = be32(data + p), type = be32(data + p + 4);
    if (len > kChunkLimit || len > size - p - 12) return false;
    for (int i = 0; i < 4; ++i)
      if (!letter(data[p + 4 + i])) return false;
    const std::uint8_t* body = data + p + 8;
    if (libdeflate_crc32(0, data + p + 4, 4 + std::size_t{len}) != be32(body + len)) return false;
    if (p == 8) {
      if (type != tag("IHDR") || !read_ihdr(body, len, l)) return false;
    } else if (!read_chunk(type, body, len, l, st)) {
      return false;
    }
    p += 12 + std::size_t{len};
  }
  return l.idat_bytes >= 2 && l.raw_bytes() <= kMaxRawBytes;
}

bool decode_rgb(const Layout& l, const std::function<std::uint8_t*(int, int)>& allocate) {
  thread_local Scratch raw_buf, joined_buf, zero_buf;
  struct Trim {  // large buffers go back to the system after each image
    ~Trim() {
      raw_buf.trim();
      joined_buf.trim();
    }
  } trim;
  std::uint8_t* raw = raw_buf.get(static_cast<std::size_t>(l.raw_bytes()));
  std::uint8_t* zeros = zero_buf.get(std::size_t{l.width} * l.channels);
  if (!raw || !zeros || !inflate(l, raw, joined_buf)) return false;
  const std::size_t n = std::size_t{l.width} * l.channels, stride = n + 1, out_stride = 3 * std::size_t{l.width};
  for (std::size_t y = 0; y < l.height; ++y)
    if (raw[y * stride] > 4) return false;  // libpng: "bad adaptive filter value"
  std::memset(zeros, 0, n);
  const auto unfilter_at = [&](std::size_t y) {
    std::uint8_t* row = raw + y * stride;
    unfilter_row(l.channels, row[0], row + 1, y == 0 ? zeros : row - stride + 1, n);
    return row + 1;
  };
  std::uint32_t palette4[256] = {};
  for (int i = 0; i < l.palette_entries; ++i)
    palette4[i] =
        l.palette[3 * i] | (std::uint32_t{l.palette[3 * i + 1]} << 8) | (std::uint32_t{l.palette[3 * i + 2]} << 16);
  if (l.color_type == 3) {  // every index checked before the first pixel is written
    int max_index = 0;
    for (std::size_t y = 0; y < l.height; ++y) {
      const std::uint8_t* row = unfilter_at(y);
      max_index = std::max(max_index, static_cast<int>(*std::max_element(row, row + n)));
    }
    if (max_index >= l.palette_entries) return false;  // libpng warns
    std::uint8_t* out = allocate(static_cast<int>(l.width), static_cast<int>(l.height));
    for (std::size_t y = 0; y < l.height; ++y) row_to_rgb(l, palette4, raw + y * stride + 1, out + y * out_stride);
    return true;
  }
  std::uint8_t* out = allocate(static_cast<int>(l.width), static_cast<int>(l.height));
  for (std::size_t y = 0; y < l.height; ++y) row_to_rgb(l, palette4, unfilter_at(y), out + y * out_stride);
  return true;
}

#else  // built without libdeflate (or big-endian): every PNG goes through libpng

bool available() { return false; }
bool parse(const std::uint8_t*, std::size_t, Layout&) { return false; }
bool decode_rgb(const Layout&, const std::function<std::uint8_t*(int, int)>&) { return false; }

#endif

}  // namespace vecbench::png_fast
