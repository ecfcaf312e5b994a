// Decoding without OpenCV (decode_basic.hpp, the build where OpenCV's C++ library is missing):
// JPEG and PNG decode; other formats are refused naming the file; the checks before decoding say
// what decode_rgb says. (That its pixels are decode_rgb's, bit for bit, is checked in
// tests/torch/test_decode.cpp, which has OpenCV.) Not in VECBENCH_CORE_ONLY builds (no codec).
#ifdef VECBENCH_WITH_CODEC
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "vecbench/input/codec.hpp"
#include "vecbench/input/decode_basic.hpp"
#include "vecbench/input/image_files.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/testing/png_writer.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

const char* kSamples = "/usr/share/doc/opencv-doc/examples/data";

Bytes read_all(const fs::path& p) { return read_file_bytes(p.string()); }

std::string error_of(const Bytes& b, const std::string& name, const DecodeOptions& o = {}) {
  try {
    decode_rgb_basic(b, name, o);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file, name);
    return e.what();
  }
  return "";
}

// The first few sample photos with this extension.
std::vector<fs::path> samples(const std::string& ext, std::size_t n) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(kSamples))
    if (e.path().extension() == ext) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace

TEST(DecodeBasic, JpegAndPngDecodeAtTheirHeaderSize) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  for (const std::string ext : {".jpg", ".png"}) {
    const auto files = samples(ext, 4);
    ASSERT_FALSE(files.empty()) << ext;
    for (const auto& f : files) {
      const Bytes b = read_all(f);
      ImageHeader h;
      ASSERT_TRUE(read_image_header(b, h)) << f;
      for (JpegDecoder d : {JpegDecoder::exact, JpegDecoder::tf}) {
        DecodeOptions o;
        o.jpeg_decoder = d;
        std::string warning = "x";
        const BasicRgbImage img = decode_rgb_basic(b, f.string(), o, &warning);
        EXPECT_EQ(warning, "") << f;
        EXPECT_EQ(static_cast<std::uint64_t>(img.width), h.width) << f;
        EXPECT_EQ(static_cast<std::uint64_t>(img.height), h.height) << f;
        EXPECT_EQ(img.stride, static_cast<std::size_t>(img.width) * 3) << f;
        EXPECT_EQ(img.pixels.size(), img.stride * static_cast<std::size_t>(img.height)) << f;
        const RgbView v = rgb_view(img);
        EXPECT_EQ(v.data, img.pixels.data());
        EXPECT_EQ(v.rows, img.height);
        EXPECT_EQ(v.cols, img.width);
      }
    }
  }
}

TEST(DecodeBasic, OtherFormatsNameTheFileAndSayJpegAndPngOnly) {
  const std::string only = " here: this vecbench was built without OpenCV, so it decodes JPEG and PNG only";
  Bytes bmp = {'B', 'M'};
  bmp.resize(64, 0);
  EXPECT_EQ(error_of(bmp, "a.bmp"), "a.bmp: cannot decode BMP" + only);
  const Bytes tiff = {'I', 'I', '*', 0, 8, 0, 0, 0, 0, 0};
  EXPECT_EQ(error_of(tiff, "b.tif"), "b.tif: cannot decode TIFF" + only);
  const Bytes webp = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '};
  EXPECT_EQ(error_of(webp, "c.webp"), "c.webp: cannot decode WebP" + only);
  const Bytes pnm = {'P', '6', '\n', '1', ' ', '1', '\n', '2', '5', '5', '\n', 1, 2, 3};
  EXPECT_EQ(error_of(pnm, "d.ppm"), "d.ppm: cannot decode PNM" + only);
  // As decode_rgb says: formats no build decodes, unrecognized data, an empty file.
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  EXPECT_EQ(error_of(gif, "e.gif"), "e.gif: unsupported format (GIF)");
  EXPECT_EQ(error_of(Bytes{'h', 'e', 'l', 'l', 'o'}, "f.txt"), "f.txt: not an image (unrecognized format)");
  EXPECT_EQ(error_of({}, "g.jpg"), "g.jpg: empty file");
}

TEST(DecodeBasic, HeaderChecksAsDecodeRgb) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  const auto jpg = samples(".jpg", 1).at(0);
  const Bytes b = read_all(jpg);
  const Bytes cut(b.begin(), b.begin() + static_cast<long>(b.size() / 2));
  EXPECT_EQ(error_of(cut, "cut.jpg"), "cut.jpg: truncated JPEG (no end-of-image marker)");
  ImageHeader h;
  ASSERT_TRUE(read_image_header(b, h));
  DecodeOptions o;
  o.max_pixels = h.width * h.height - 1;
  EXPECT_EQ(error_of(b, "big.jpg"), "");
  EXPECT_EQ(error_of(b, "big.jpg", o), "big.jpg: " + detail::too_large(h.width, h.height, o.max_pixels));
  // Corrupt scan data: strict fails with libjpeg's words; lenient decodes and says them.
  Bytes bad = b;
  for (std::size_t i = bad.size() / 2; i < bad.size() / 2 + 64; ++i) bad[i] = static_cast<std::uint8_t>(i * 37);
  const std::string e = error_of(bad, "bad.jpg");
  EXPECT_EQ(e.rfind("bad.jpg: corrupt JPEG data (libjpeg: ", 0), 0u) << e;
  DecodeOptions lenient;
  lenient.lenient = true;
  std::string warning;
  EXPECT_NO_THROW(decode_rgb_basic(bad, "bad.jpg", lenient, &warning));
  EXPECT_EQ(warning.rfind("libjpeg: ", 0), 0u) << warning;
}

TEST(DecodeBasic, ExifOrientationAppliedOnlyWhenAsked) {
  // A sample JPEG with an EXIF APP1 segment saying orientation 6 (rotate 90 degrees clockwise).
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  const Bytes b = read_all(samples(".jpg", 1).at(0));
  const Bytes tiff = {'I', 'I', '*', 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0};
  Bytes app1 = {0xFF, 0xE1, 0, static_cast<std::uint8_t>(2 + 6 + tiff.size()), 'E', 'x', 'i', 'f', 0, 0};
  app1.insert(app1.end(), tiff.begin(), tiff.end());
  Bytes j(b.begin(), b.begin() + 2);
  j.insert(j.end(), app1.begin(), app1.end());
  j.insert(j.end(), b.begin() + 2, b.end());
  const BasicRgbImage n = decode_rgb_basic(j, "x.jpg");
  DecodeOptions apply;
  apply.exif = ExifPolicy::apply;
  const BasicRgbImage a = decode_rgb_basic(j, "x.jpg", apply);
  ASSERT_EQ(a.width, n.height);
  ASSERT_EQ(a.height, n.width);
  // Orientation 6: out(y, x) = in(H - 1 - x, y).
  for (int y : {0, a.height / 3, a.height - 1})
    for (int x : {0, a.width / 2, a.width - 1})
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(a.pixels[y * a.stride + x * 3 + c], n.pixels[(n.height - 1 - x) * n.stride + y * 3 + c])
            << y << "," << x;
}

TEST(DecodeBasic, FileSourceReadsJpegAndPngWithoutOpenCv) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  vecbench::testing::ScopedTempDir dir("decode_basic");
  const fs::path list = dir.path / "list.txt";
  {
    std::ofstream out(list);
    out << samples(".jpg", 1).at(0).string() << "\n" << samples(".png", 1).at(0).string() << "\n";
  }
  const auto src = make_source(list.string());
  ASSERT_EQ(src->kind(), SourceKind::files);
  ASSERT_EQ(src->size(), 2u);
  std::vector<float> px(3 * 299 * 299);
  StageTimes t;
  for (std::size_t i = 0; i < 2; ++i) {
    std::fill(px.begin(), px.end(), -7.0f);
    ASSERT_NO_THROW(src->load(i, 299, px.data(), t)) << src->name(i);
    EXPECT_EQ(std::count(px.begin(), px.end(), -7.0f), 0) << src->name(i);
  }
}

#ifdef VECBENCH_PNG_LIBDEFLATE
// The PNG fast path (png_fast.hpp) against libpng alone (CodecOptions::png_libdeflate = false):
// for every file, the same pixels, or the same error, and the same warnings.
namespace {

using vecbench::testing::PngBytes;

/// What decode_png makes of `f`: the error, or the size, warnings and pixels; `fast`: whether the
/// fast path decoded it.
std::string png_outcome(const PngBytes& f, bool libdeflate, bool* fast = nullptr) {
  CodecOptions o;
  o.png_libdeflate = libdeflate;
  try {
    const DecodeResult r = decode_png(f.data(), f.size(), o);
    if (fast) *fast = r.png_libdeflate;
    std::string s = std::to_string(r.image.width) + "x" + std::to_string(r.image.height) + " warnings " +
                    std::to_string(r.warning_count) + ":";
    for (const auto& w : r.warnings) s += " [" + w + "]";
    return s + " pixels " + std::string(r.image.pixels.begin(), r.image.pixels.end());
  } catch (const CodecError& e) {
    if (fast) *fast = false;
    return std::string("CodecError: ") + e.what();
  }
}

}  // namespace

TEST(DecodeBasic, PngFastPathDecodesTheSamplePhotosAsLibpng) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  int fast_count = 0;
  for (const auto& f : samples(".png", 1000)) {
    const Bytes b = read_all(f);
    CodecOptions on, off;
    off.png_libdeflate = false;
    const DecodeResult a = decode_png(b.data(), b.size(), on), c = decode_png(b.data(), b.size(), off);
    EXPECT_FALSE(c.png_libdeflate);
    fast_count += a.png_libdeflate;
    EXPECT_EQ(a.image.width, c.image.width) << f;
    EXPECT_EQ(a.image.height, c.image.height) << f;
    EXPECT_TRUE(a.image.pixels == c.image.pixels) << f;
    EXPECT_EQ(a.warnings, c.warnings) << f;
  }
  EXPECT_GE(fast_count, 20) << "the fast path took too few of the sample PNGs";
}

TEST(DecodeBasic, PngFastPathAgreesWithLibpngOnBrokenFiles) {
  // Every kind of file the fast path leaves to libpng, and files with a byte changed (CRCs fixed,
  // so the change reaches the image data): decode_png says what libpng alone says.
  using namespace vecbench::testing;
  int fast = 0, left = 0, failed = 0;
  std::mt19937 rng(21);
  for (int ct : {0, 2, 3, 4, 6}) {
    const PngSpec s = png_random_spec(ct, 23, 11, static_cast<unsigned>(ct));
    const PngBytes good = png_encode(s);
    for (int i = 0; i < 80; ++i) {
      PngBytes f = good;
      f[8 + rng() % (f.size() - 8)] = static_cast<std::uint8_t>(rng());
      if (i % 4 != 0) png_fix_crcs(f);  // 1 in 4 keeps its bad CRC
      bool took = false;
      const std::string want = png_outcome(f, false), got = png_outcome(f, true, &took);
      ASSERT_EQ(got.substr(0, 300), want.substr(0, 300)) << "colour type " << ct << ", mutation " << i;
      ASSERT_TRUE(got == want) << "colour type " << ct << ", mutation " << i;
      (took ? fast : want.rfind("CodecError", 0) == 0 ? failed : left) += 1;
    }
  }
  // The mutations reach all three outcomes: taken by the fast path, errors, and left to libpng.
  EXPECT_GT(fast, 0);
  EXPECT_GT(failed, 0);
  EXPECT_GT(left, 0);
}

TEST(DecodeBasic, PngFastPathAgreesWithLibpngOnAncillaryChunksAndOddStreams) {
  using namespace vecbench::testing;
  // Ancillary chunks, valid and not (libpng reads some with warnings it prefixes with the chunk's
  // name, which are dropped, and some, such as tIME's and tRNS's range checks, without), empty IDAT
  // chunks, a small zlib window: decode_png says what libpng alone says, fast path or not.
  const PngSpec rgb = png_random_spec(2, 9, 7, 30), gray = png_random_spec(0, 9, 7, 31),
                pal = png_random_spec(3, 9, 7, 32);
  std::vector<std::pair<PngSpec, std::vector<PngChunkSpec>>> cases = {
      {rgb, {{"tIME", {0x07, 0xE8, 1, 2, 3, 4, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 13, 2, 3, 4, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 0, 2, 3, 4, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 12, 0, 3, 4, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 12, 31, 24, 4, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 12, 31, 23, 60, 5}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 12, 31, 23, 59, 60}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 12, 31, 23, 59, 61}}}},
      {rgb, {{"tIME", {0x07, 0xE8, 1, 2, 3, 4}}}},
      {rgb, {{"tRNS", {0, 1, 0, 2, 0, 3}}}},
      {rgb, {{"tRNS", {1, 1, 0, 2, 0, 3}}}},
      {gray, {{"tRNS", {1, 0}}}},
      {gray, {{"tRNS", {0, 255}}}},
      {gray, {{"tRNS", {0, 255, 0}}}},
      {pal, {{"tRNS", {1, 2, 3}}}},
      {pal, {{"tRNS", PngBytes(40, 9)}}},
      {rgb, {{"sPLT", {'p', 0, 8}}}},
      {rgb, {{"pHYs", PngBytes(9, 1)}}},
      {rgb, {{"pHYs", PngBytes(5, 1)}}},
      {rgb, {{"gAMA", {0, 0, 0, 0}}}},
      {rgb, {{"cHRM", PngBytes(32, 0)}}},
      {rgb, {{"sRGB", {9}}}},
      {rgb, {{"iCCP", {'x', 0, 0, 1, 2, 3}}}},
      {rgb, {{"bKGD", {1, 0, 0, 0, 0, 0}}}},
      {gray, {{"bKGD", {1, 0}}}},
      {rgb, {{"sBIT", {9, 9, 9}}}},
      {rgb, {{"tEXt", {}}}},
      {rgb, {{"zTXt", {'k', 0, 0, 1, 2}}}},
      {rgb, {{"vpAg", {1}}}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    PngSpec s = cases[i].first;
    s.before_idat = cases[i].second;
    const PngBytes f = png_encode(s);
    EXPECT_EQ(png_outcome(f, true), png_outcome(f, false)) << "case " << i << ": " << s.before_idat[0].type;
  }
  PngSpec two_empty = rgb;
  two_empty.after_idat = {{"IDAT", {}}};
  EXPECT_EQ(png_outcome(png_file(two_empty, {}), true), png_outcome(png_file(two_empty, {}), false));
  const PngBytes z = png_with_cmf(png_zlib(png_filter_rows(rgb)), 0x48);  // a 4 KiB window over 196 bytes of image
  bool small_window = false;
  EXPECT_EQ(png_outcome(png_file(rgb, z), true, &small_window), png_outcome(png_file(rgb, z), false));
  EXPECT_TRUE(small_window);
  // A palette index past the palette (libpng 1.6.39 reads it as black, without a warning): left to
  // libpng, same pixels.
  PngSpec p = png_random_spec(3, 8, 8, 5);
  p.palette.resize(3 * 4);
  p.samples[0] = 4;
  bool took = true;
  const std::string w = png_outcome(png_encode(p), true, &took);
  EXPECT_FALSE(took);
  EXPECT_EQ(w, png_outcome(png_encode(p), false));
}
#endif  // VECBENCH_PNG_LIBDEFLATE

#endif  // VECBENCH_WITH_CODEC
