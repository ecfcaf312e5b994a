// The PNG fast path (png_fast.hpp) on its own: every colour type and filter round-trips through
// the specification's writer (testing/png_writer.hpp) to the pixels libpng's transformations give,
// and every file it must leave to libpng is refused before a pixel is written (also under
// ASan/UBSan: tools/sanitizers.sh builds this file). That the files it takes decode as libpng
// decodes them, errors and warnings included, is tested in test_decode_basic.cpp.
#ifdef VECBENCH_PNG_LIBDEFLATE
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "vecbench/input/png_fast.hpp"
#include "vecbench/testing/png_writer.hpp"

using namespace vecbench;
using namespace vecbench::testing;

namespace {

/// png_fast's pixels, or nothing when it leaves the file to libpng; `allocate` must be called
/// once, with the image's size, exactly when it takes the file.
std::optional<PngBytes> fast(const PngBytes& file) {
  png_fast::Layout l;
  if (!png_fast::parse(file.data(), file.size(), l)) return std::nullopt;
  PngBytes out;
  int calls = 0;
  const bool ok = png_fast::decode_rgb(l, [&](int w, int h) {
    ++calls;
    EXPECT_EQ(w, static_cast<int>(l.width));
    EXPECT_EQ(h, static_cast<int>(l.height));
    out.assign(static_cast<std::size_t>(w) * h * 3, 0xAB);
    return out.data();
  });
  EXPECT_EQ(calls, ok ? 1 : 0);
  if (!ok) return std::nullopt;
  return out;
}

/// The byte offset of the first chunk of `type` (its length field).
std::size_t chunk_at(const PngBytes& f, const std::string& type) {
  for (std::size_t p = 8; p + 12 <= f.size();) {
    const std::uint32_t len = png_chunk_length(f, p);
    if (std::string(f.begin() + static_cast<std::ptrdiff_t>(p + 4), f.begin() + static_cast<std::ptrdiff_t>(p + 8)) ==
        type)
      return p;
    p += 12 + len;
  }
  ADD_FAILURE() << "no " << type << " chunk";
  return 0;
}

/// Rewrites the CRC of the chunk at `p` after its bytes were changed.
void fix_crc(PngBytes& f, std::size_t p) {
  const std::uint32_t len = png_chunk_length(f, p);
  const std::uint32_t crc = libdeflate_crc32(0, f.data() + p + 4, 4 + std::size_t{len});
  for (int i = 0; i < 4; ++i) f[p + 8 + len + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
}

}  // namespace

TEST(PngFast, EveryColourTypeAndFilterGivesLibpngsPixels) {
  ASSERT_TRUE(png_fast::available());
  for (int ct : {0, 2, 3, 4, 6})
    for (int filter = -1; filter <= 4; ++filter)
      for (auto [w, h] : {std::pair{1, 1}, {2, 3}, {31, 17}, {64, 40}}) {
        PngSpec s = png_random_spec(ct, w, h, static_cast<unsigned>(ct * 100 + filter * 10 + w));
        if (filter >= 0) s.filters = {filter};  // else every filter, row by row
        SCOPED_TRACE("colour type " + std::to_string(ct) + ", filter " + std::to_string(filter) + ", " +
                     std::to_string(w) + "x" + std::to_string(h));
        const auto px = fast(png_encode(s));
        ASSERT_TRUE(px.has_value());
        EXPECT_EQ(*px, png_expected_rgb(s));
      }
}

TEST(PngFast, ManyIdatChunksAndAncillaryChunksAreRead) {
  PngSpec s = png_random_spec(6, 50, 30, 7);
  s.idat_chunk = 1;  // one byte of zlib data per IDAT chunk
  s.before_idat = {{"pHYs", PngBytes(9, 1)}, {"tEXt", {'k', 0, 'v'}}, {"gAMA", {0, 0, 0xB1, 0x8F}}, {"prVt", {1, 2}}};
  s.after_idat = {{"tEXt", {'k', 0}}, {"zzZz", {}}};  // zzZz: a chunk libpng does not know
  const auto px = fast(png_encode(s));
  ASSERT_TRUE(px.has_value());
  EXPECT_EQ(*px, png_expected_rgb(s));
  // tRNS changes no RGB value under strip_alpha
  PngSpec p = png_random_spec(3, 20, 20, 8);
  p.before_idat = {{"tRNS", {0, 128, 255}}};
  EXPECT_EQ(fast(png_encode(p)), png_expected_rgb(p));
}

TEST(PngFast, LeavesToLibpngWhatItDoesNotTake) {
  const PngSpec s = png_random_spec(2, 40, 20, 9);
  const PngBytes good = png_encode(s);
  ASSERT_TRUE(fast(good).has_value());
  const auto edit = [&](const std::string& type, std::size_t offset, std::uint8_t value, bool crc) {
    PngBytes f = good;
    const std::size_t p = chunk_at(f, type);
    f[p + 8 + offset] = value;
    if (crc) fix_crc(f, p);
    return f;
  };
  EXPECT_FALSE(fast(edit("IHDR", 12, 1, true))) << "interlaced";
  EXPECT_FALSE(fast(edit("IHDR", 8, 16, true))) << "16-bit";
  EXPECT_FALSE(fast(edit("IHDR", 9, 5, true))) << "colour type 5";
  EXPECT_FALSE(fast(edit("IHDR", 0, 0x10, true))) << "width over 1,000,000";
  EXPECT_FALSE(fast(edit("IDAT", 3, 0x55, false))) << "IDAT CRC";
  EXPECT_FALSE(fast(PngBytes(good.begin(), good.end() - 1))) << "truncated";
  EXPECT_FALSE(fast(PngBytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(chunk_at(good, "IEND")))))
      << "no IEND";
  PngBytes z = png_zlib(png_filter_rows(s));
  ASSERT_EQ(z[0], 0x78);
  // The zlib window in the header (libpng takes it from there): below the image's 2,420 bytes, left
  // to libpng (zlib refuses a distance past it); at least as large, taken.
  const auto window = [&](std::uint8_t cmf) {
    const PngBytes w = png_with_cmf(z, cmf);
    EXPECT_EQ((w[0] * 256 + w[1]) % 31, 0);
    return png_file(s, w);
  };
  EXPECT_FALSE(fast(window(0x38))) << "2 KiB zlib window";
  EXPECT_EQ(fast(window(0x48)), png_expected_rgb(s)) << "4 KiB zlib window";
  EXPECT_FALSE(fast(window(0x88))) << "CINFO 8";
  EXPECT_FALSE(fast(window(0x79))) << "compression method 9";
  z.back() ^= 1;  // Adler-32
  EXPECT_FALSE(fast(png_file(s, z))) << "Adler-32";
  z.back() ^= 1;
  z.push_back(0);
  EXPECT_FALSE(fast(png_file(s, z))) << "data after the zlib stream";
  PngSpec bad_filter = s;
  bad_filter.filters = {0};
  PngBytes raw = png_filter_rows(bad_filter);
  raw[raw.size() / 2 / 121 * 121] = 5;  // a filter byte (rows of 1 + 120 bytes)
  EXPECT_FALSE(fast(png_file(s, png_zlib(raw)))) << "filter type 5";
  PngBytes short_raw = png_filter_rows(s);
  short_raw.pop_back();
  EXPECT_FALSE(fast(png_file(s, png_zlib(short_raw)))) << "not enough image data";
  short_raw.push_back(0);
  short_raw.push_back(0);
  EXPECT_FALSE(fast(png_file(s, png_zlib(short_raw)))) << "too much image data";
}

TEST(PngFast, LeavesUnusualChunksToLibpng) {
  const auto with = [](PngSpec s, std::vector<PngChunkSpec> before, std::vector<PngChunkSpec> after = {}) {
    s.before_idat = std::move(before);
    s.after_idat = std::move(after);
    return fast(png_encode(s));
  };
  const PngSpec s = png_random_spec(6, 12, 9, 10);
  EXPECT_TRUE(with(s, {{"tEXt", {'a', 0}}}).has_value());
  EXPECT_FALSE(with(s, {{"eXIf", {'M', 'M', 0, 42}}})) << "EXIF orientation: libpng's path reads it";
  EXPECT_FALSE(with(s, {}, {{"eXIf", {'I', 'I', 42, 0}}})) << "eXIf after the image";
  EXPECT_FALSE(with(s, {{"acTL", PngBytes(8, 0)}})) << "APNG";
  EXPECT_FALSE(with(s, {{"ABCD", {}}})) << "unknown critical chunk";
  EXPECT_FALSE(with(s, {{"IHDR", PngBytes(13, 1)}})) << "second IHDR";
  EXPECT_FALSE(with(s, {{"PLTE", {1, 2, 3}}})) << "PLTE in an RGBA image";
  EXPECT_FALSE(with(s, {{"te1t", {}}})) << "chunk type not letters";
  // Ancillary chunks whose libpng handlers can warn without the chunk's name (kept warnings)
  EXPECT_FALSE(with(s, {}, {{"tIME", PngBytes(7, 0)}})) << "tIME (month 0: 'Ignoring invalid time value')";
  EXPECT_TRUE(with(s, {}, {{"tIME", {0x07, 0xE8, 12, 3, 23, 59, 60}}}).has_value()) << "a valid tIME";
  EXPECT_FALSE(with(s, {{"sPLT", {'p', 0, 8}}})) << "sPLT";
  EXPECT_FALSE(with(s, {{"zTXt", {'k', 0, 0, 1}}})) << "zTXt";
  PngSpec rgb = png_random_spec(2, 5, 4, 14);
  EXPECT_FALSE(with(rgb, {{"tRNS", {1, 0, 0, 0, 0, 0}}})) << "tRNS in an RGB image (sample 256)";
  EXPECT_TRUE(with(rgb, {{"tRNS", {0, 255, 0, 0, 0, 7}}}).has_value()) << "tRNS in an RGB image, in range";
  EXPECT_TRUE(with(rgb, {{"gAMA", {0, 0, 0xB1, 0x8F}}, {"sRGB", {9}}, {"bKGD", {1, 2, 3, 4, 5, 6}}}).has_value());
  EXPECT_TRUE(with(s, {}, {{"IDAT", {}}}).has_value()) << "an empty IDAT chunk last";
  EXPECT_FALSE(with(s, {}, {{"tEXt", {'a', 0}}, {"IDAT", {}}})) << "IDAT chunks apart";
  PngSpec p = png_random_spec(3, 8, 8, 11);
  p.palette.resize(3);  // one entry
  std::fill(p.samples.begin(), p.samples.end(), 0);
  p.samples[5] = 1;
  EXPECT_FALSE(fast(png_encode(p))) << "palette index past the palette";
  p.samples[5] = 0;
  EXPECT_TRUE(fast(png_encode(p)).has_value());
  p.palette.clear();
  EXPECT_FALSE(fast(png_encode(p))) << "no PLTE";
  // IDAT chunks with no data at all (not even a zlib header): nothing to read, never a null buffer
  PngSpec empty = s;
  empty.after_idat = {{"IDAT", {}}};
  EXPECT_FALSE(fast(png_file(empty, {}))) << "two empty IDAT chunks";
  EXPECT_FALSE(fast(png_file(s, {}))) << "one empty IDAT chunk";
  // a bad CRC on an ancillary chunk: libpng drops it with a warning; left to libpng all the same
  PngSpec t = s;
  t.before_idat = {{"tEXt", {'a', 0, 'b'}}};
  PngBytes f = png_encode(t);
  f[chunk_at(f, "tEXt") + 10] ^= 1;
  EXPECT_FALSE(fast(f));
}

TEST(PngFast, MutatedFilesNeverWriteOutOfBounds) {
  // Bytes changed anywhere, CRCs fixed so that the changes reach the parser and the inflater:
  // each file is taken or left, never read or written out of bounds (ASan), `allocate` called
  // only for a taken file (fast()).
  const PngSpec s = png_random_spec(2, 33, 21, 12);
  const PngBytes good = png_encode(s);
  std::mt19937 rng(13);
  int taken = 0;
  for (int i = 0; i < 400; ++i) {
    PngBytes f = good;
    const std::size_t at = 8 + rng() % (f.size() - 8);
    f[at] = static_cast<std::uint8_t>(rng());
    png_fix_crcs(f);
    if (fast(f)) ++taken;
  }
  EXPECT_GT(taken, 0);
  EXPECT_LT(taken, 400);
}

#endif  // VECBENCH_PNG_LIBDEFLATE
