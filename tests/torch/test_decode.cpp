// Strict, attributed decoding (codec.hpp, decode.hpp): the direct libjpeg/libpng decoders give
// exactly OpenCV 4.6's pixels for every kind of JPEG and PNG (and EXIF orientation, and reduced
// DCT scales); corrupt data fails with the decoder's words (or, lenient, decodes with a warning);
// nothing is printed; the pixel limit is checked from the header before decoding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vecbench/input/codec.hpp"
#include "vecbench/input/decode.hpp"
#include "vecbench/input/decode_basic.hpp"
#include "vecbench/input/image_files.hpp"
#include "vecbench/input/png_fast.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

const char* kSamples = "/usr/share/doc/opencv-doc/examples/data";

Bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Today's decode_rgb, the reference: cv::imdecode (reduced DCT scale chosen from the SOF and the
// target size, as decode.hpp does) then BGR->RGB.
cv::Mat opencv_rgb(const Bytes& b, const DecodeOptions& o = {}) {
  int flags = cv::IMREAD_COLOR;
  if (o.exif == ExifPolicy::ignore) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  ImageHeader h;
  if (o.fast && read_image_header(b, h) && h.format == ImageFormat::jpeg) {
    const std::uint64_t m = std::min(h.width, h.height), t = static_cast<std::uint64_t>(o.target_size);
    const int reduced = m >= 8 * t   ? cv::IMREAD_REDUCED_COLOR_8
                        : m >= 4 * t ? cv::IMREAD_REDUCED_COLOR_4
                        : m >= 2 * t ? cv::IMREAD_REDUCED_COLOR_2
                                     : cv::IMREAD_COLOR;
    flags = (flags & ~cv::IMREAD_COLOR) | reduced;
  }
  const cv::Mat bgr =
      cv::imdecode(cv::Mat(1, static_cast<int>(b.size()), CV_8U, const_cast<std::uint8_t*>(b.data())), flags);
  if (bgr.empty()) return bgr;
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

// decode_rgb and, for JPEG/PNG, the codec API directly, against OpenCV: same size, same bytes.
void expect_same_as_opencv(const Bytes& b, const std::string& what, const DecodeOptions& o = {}) {
  const cv::Mat want = opencv_rgb(b, o);
  ASSERT_FALSE(want.empty()) << what;
  cv::Mat got;
  std::string warning = "x";
  ASSERT_NO_THROW(got = decode_rgb(b, what, o, &warning)) << what;
  EXPECT_EQ(warning, "") << what;
  ASSERT_EQ(got.type(), CV_8UC3) << what;
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(cv::norm(got, want, cv::NORM_INF), 0.0) << what;
  // The plain-C++ API (RgbImage, apply_exif_orientation) gives the same.
  const ImageFormat fmt = sniff_format(b);
  if (fmt != ImageFormat::jpeg && fmt != ImageFormat::png) return;
  if (o.fast) return;  // the scale is chosen by decode_rgb, checked above
  CodecOptions co;
  DecodeResult r = fmt == ImageFormat::jpeg ? decode_jpeg(b.data(), b.size(), co) : decode_png(b.data(), b.size(), co);
  if (o.exif == ExifPolicy::apply) apply_exif_orientation(r.image, r.exif_orientation);
  ASSERT_EQ(r.image.width, want.cols) << what;
  ASSERT_EQ(r.image.height, want.rows) << what;
  EXPECT_TRUE(std::equal(r.image.pixels.begin(), r.image.pixels.end(), want.data)) << what;
}

cv::Mat photo(int w, int h, int seed = 0) {  // BGR, smooth structure plus noise in every channel
  cv::Mat m(h, w, CV_8UC3);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w), static_cast<uchar>(y * 255 / h),
                                        static_cast<uchar>((x + y + static_cast<int>(rng() % 32)) % 256));
  return m;
}

Bytes encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {}) {
  Bytes b;
  EXPECT_TRUE(cv::imencode(ext, m, b, params)) << ext;
  return b;
}

// ---- Writers for what cv::imwrite cannot make ----------------------------------------------

struct JpegSpec {
  int components = 3;                // 1, 3 or 4 input components
  J_COLOR_SPACE in = JCS_RGB;        // JCS_GRAYSCALE, JCS_RGB, JCS_CMYK
  J_COLOR_SPACE stored = JCS_YCbCr;  // JCS_GRAYSCALE, JCS_YCbCr, JCS_RGB, JCS_CMYK, JCS_YCCK
  int quality = 90;
  bool progressive = false, arithmetic = false;
  int restart_rows = 0;
  int h_samp = 2, v_samp = 2;  // luma sampling factors
};

Bytes libjpeg_encode(const std::vector<std::uint8_t>& px, int w, int h, const JpegSpec& s) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = s.components;
  c.in_color_space = s.in;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, s.stored);
  jpeg_set_quality(&c, s.quality, TRUE);
  if (s.stored == JCS_YCbCr || s.stored == JCS_YCCK) {
    c.comp_info[0].h_samp_factor = s.h_samp;
    c.comp_info[0].v_samp_factor = s.v_samp;
  }
  if (s.progressive) jpeg_simple_progression(&c);
  c.arith_code = s.arithmetic ? TRUE : FALSE;
  c.restart_in_rows = s.restart_rows;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(&px[static_cast<std::size_t>(c.next_scanline) * w * s.components]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(buf, buf + size);
  jpeg_destroy_compress(&c);
  std::free(buf);
  return out;
}

std::vector<std::uint8_t> pattern(int w, int h, int channels, unsigned seed) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * channels);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        px[(static_cast<std::size_t>(y) * w + x) * channels + c] =
            static_cast<std::uint8_t>((x * (c + 2) * 7 + y * (5 - c) * 3 + static_cast<int>(rng() % 24)) % 256);
  return px;
}

void png_write_cb(png_structp p, png_bytep d, png_size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(p));
  out->insert(out->end(), d, d + n);
}
void png_flush_cb(png_structp) {}

struct PngSpec {
  int depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlace = false;
  bool trns = false;
};

// A PNG of random samples (palette: full 2^depth palette, random colours and alphas).
Bytes libpng_encode(int w, int h, const PngSpec& s, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out;
  png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(p);
  if (setjmp(png_jmpbuf(p))) {
    ADD_FAILURE() << "libpng write failed";
    png_destroy_write_struct(&p, &info);
    return {};
  }
  png_set_write_fn(p, &out, png_write_cb, png_flush_cb);
  png_set_IHDR(p, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), s.depth, s.color_type,
               s.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette;
  std::vector<png_byte> alphas;
  png_color_16 trans{};
  if (s.color_type == PNG_COLOR_TYPE_PALETTE) {
    palette.resize(std::size_t{1} << s.depth);
    for (auto& c : palette)
      c = {static_cast<png_byte>(rng()), static_cast<png_byte>(rng()), static_cast<png_byte>(rng())};
    png_set_PLTE(p, info, palette.data(), static_cast<int>(palette.size()));
    if (s.trns) {
      alphas.resize(palette.size() / 2 + 1);
      for (auto& a : alphas) a = static_cast<png_byte>(rng());
      png_set_tRNS(p, info, alphas.data(), static_cast<int>(alphas.size()), nullptr);
    }
  } else if (s.trns) {
    const int mask = (1 << s.depth) - 1;
    trans.gray = static_cast<png_uint_16>(rng() & mask);
    trans.red = static_cast<png_uint_16>(rng() & mask);
    trans.green = static_cast<png_uint_16>(rng() & mask);
    trans.blue = static_cast<png_uint_16>(rng() & mask);
    png_set_tRNS(p, info, nullptr, 0, &trans);
  }
  png_write_info(p, info);
  const int channels = s.color_type == PNG_COLOR_TYPE_GRAY         ? 1
                       : s.color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                       : s.color_type == PNG_COLOR_TYPE_RGB        ? 3
                       : s.color_type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                                                                   : 1;
  const std::size_t row_bytes = (static_cast<std::size_t>(w) * channels * s.depth + 7) / 8;
  std::vector<png_byte> img(row_bytes * h);
  for (int y = 0; y < h; ++y)
    for (std::size_t x = 0; x < row_bytes; ++x)
      img[y * row_bytes + x] = static_cast<png_byte>(((x * 13 + y * 7) & 0xF0) | (rng() & 0x0F));
  std::vector<png_bytep> rows(h);
  for (int y = 0; y < h; ++y) rows[y] = &img[y * row_bytes];
  png_write_image(p, rows.data());
  png_write_end(p, info);
  png_destroy_write_struct(&p, &info);
  return out;
}

void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

Bytes png_chunk(const char* type, const Bytes& data) {
  Bytes c;
  put_be32(c, static_cast<std::uint32_t>(data.size()));
  Bytes td(type, type + 4);
  td.insert(td.end(), data.begin(), data.end());
  c.insert(c.end(), td.begin(), td.end());
  put_be32(c, static_cast<std::uint32_t>(crc32(0, td.data(), static_cast<uInt>(td.size()))));
  return c;
}

// `chunk` inserted right after IHDR (before the image data) or right before IEND.
Bytes with_png_chunk(const Bytes& png, const Bytes& chunk, bool at_end = false) {
  Bytes o = png;
  o.insert(o.begin() + static_cast<long>(at_end ? png.size() - 12 : 33), chunk.begin(), chunk.end());
  return o;
}

// A PNG made by hand: IHDR (any size), one IDAT holding `raw` deflated, IEND.
Bytes handmade_png(std::uint32_t w, std::uint32_t h, int depth, int color_type, const Bytes& raw) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {static_cast<std::uint8_t>(depth), static_cast<std::uint8_t>(color_type), 0, 0, 0});
  Bytes z(compressBound(static_cast<uLong>(raw.size())));
  uLongf zn = static_cast<uLongf>(z.size());
  compress(z.data(), &zn, raw.data(), static_cast<uLong>(raw.size()));
  z.resize(zn);
  for (const Bytes& c : {png_chunk("IHDR", ihdr), png_chunk("IDAT", z), png_chunk("IEND", {})})
    out.insert(out.end(), c.begin(), c.end());
  return out;
}

// A TIFF-format EXIF block with one SHORT Orientation entry.
Bytes exif_tiff(int orientation, bool big_endian = true) {
  const auto o = static_cast<std::uint8_t>(orientation);
  if (big_endian) return {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, o, 0, 0, 0, 0, 0, 0};
  return {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, o, 0, 0, 0, 0, 0, 0, 0};
}

Bytes with_app1(const Bytes& jpg, const Bytes& payload) {
  Bytes seg = {0xFF, 0xE1, static_cast<std::uint8_t>((payload.size() + 2) >> 8),
               static_cast<std::uint8_t>((payload.size() + 2) & 0xFF)};
  seg.insert(seg.end(), payload.begin(), payload.end());
  Bytes o = jpg;
  o.insert(o.begin() + 2, seg.begin(), seg.end());
  return o;
}

Bytes exif_app1_payload(const Bytes& tiff) {
  Bytes p(6 + tiff.size(), 0);
  std::memcpy(p.data(), "Exif", 4);
  std::copy(tiff.begin(), tiff.end(), p.begin() + 6);
  return p;
}

// Offset of the first byte after the SOS segment (start of the entropy-coded data).
std::size_t scan_start(const Bytes& j) {
  for (std::size_t i = 2; i + 3 < j.size();) {
    if (j[i] != 0xFF) return 0;
    const std::size_t len = (static_cast<std::size_t>(j[i + 2]) << 8) | j[i + 3];
    if (j[i + 1] == 0xDA) return i + 2 + len;
    i += 2 + len;
  }
  return 0;
}

std::string error_of(const Bytes& b, const std::string& name, const DecodeOptions& o = {}) {
  try {
    decode_rgb(b, name, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Decodes with stderr captured; returns what was printed.
std::string stderr_of_decode(const Bytes& b, const DecodeOptions& o, cv::Mat* out, std::string* warning,
                             std::string* error) {
  ::testing::internal::CaptureStderr();
  try {
    *out = decode_rgb(b, "x", o, warning);
  } catch (const InputError& e) {
    *error = e.what();
  }
  return ::testing::internal::GetCapturedStderr();
}

#define EXPECT_CONTAINS(hay, needle) EXPECT_NE(std::string(hay).find(needle), std::string::npos) << (hay)

}  // namespace

// ---- (a) bit-exact with OpenCV ---------------------------------------------------------------

TEST(DecodeExact, OpenCvSampleJpegsAndPngs) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  int jpegs = 0, pngs = 0;
  for (const auto& e : fs::directory_iterator(kSamples)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".jpg" && ext != ".png") continue;
    const Bytes b = read_all(e.path());
    (ext == ".jpg" ? jpegs : pngs)++;
    for (ExifPolicy p : {ExifPolicy::ignore, ExifPolicy::apply}) {
      DecodeOptions o;
      o.exif = p;
      expect_same_as_opencv(b, e.path().string(), o);
    }
    if (ext == ".jpg") {  // every reduced DCT scale (1/2, 1/4, 1/8) the image allows
      ImageHeader h;
      ASSERT_TRUE(read_image_header(b, h));
      const int m = static_cast<int>(std::min(h.width, h.height));
      for (int t : {m / 2, m / 4, m / 8}) {
        if (t < 1) continue;
        DecodeOptions o;
        o.fast = true;
        o.target_size = t;
        expect_same_as_opencv(b, e.path().string() + " fast " + std::to_string(t), o);
      }
    }
  }
  EXPECT_GE(jpegs, 20);
  EXPECT_GE(pngs, 20);
}

// decode_rgb_basic (no OpenCV) gives decode_rgb's pixels, bit for bit, on every sample photo,
// with both JPEG decoders, both EXIF policies and every reduced DCT scale.
TEST(DecodeBasic, SameAsDecodeRgbOnOpenCvSamples) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  int files = 0;
  auto same = [](const Bytes& b, const std::string& what, const DecodeOptions& o) {
    const cv::Mat want = decode_rgb(b, what, o);
    const BasicRgbImage got = decode_rgb_basic(b, what, o);
    ASSERT_EQ(got.width, want.cols) << what;
    ASSERT_EQ(got.height, want.rows) << what;
    ASSERT_EQ(got.stride, want.step[0]) << what;
    EXPECT_TRUE(std::equal(got.pixels.begin(), got.pixels.end(), want.data)) << what;
  };
  for (const auto& e : fs::directory_iterator(kSamples)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".jpg" && ext != ".png") continue;
    const Bytes b = read_all(e.path());
    ++files;
    for (JpegDecoder d : {JpegDecoder::exact, JpegDecoder::tf})
      for (ExifPolicy p : {ExifPolicy::ignore, ExifPolicy::apply}) {
        DecodeOptions o;
        o.jpeg_decoder = d;
        o.exif = p;
        same(b, e.path().string() + " " + to_string(d), o);
        if (ext == ".jpg" && p == ExifPolicy::ignore) {
          o.fast = true;
          o.target_size = 64;  // a reduced DCT scale for every sample larger than 128 pixels
          same(b, e.path().string() + " fast " + to_string(d), o);
        }
      }
  }
  EXPECT_GE(files, 40);
}

// The same errors and warnings as decode_rgb for corrupt and truncated data.
TEST(DecodeBasic, SameErrorsAndWarningsAsDecodeRgb) {
  const Bytes jpg = encode(".jpg", photo(320, 240, 1), {cv::IMWRITE_JPEG_QUALITY, 90});
  Bytes cut(jpg.begin(), jpg.begin() + static_cast<long>(jpg.size() * 6 / 10));
  const Bytes truncated = cut;
  cut.insert(cut.end(), {0xFF, 0xD9});
  const Bytes png = encode(".png", photo(64, 48, 2));
  const Bytes png_cut(png.begin(), png.begin() + static_cast<long>(png.size() / 2));
  auto error = [](auto decode, const Bytes& b, const DecodeOptions& o, std::string* warning) {
    try {
      decode(b, "x", o, warning);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto rgb = [](const Bytes& b, const std::string& n, const DecodeOptions& o, std::string* w) {
    return decode_rgb(b, n, o, w);
  };
  const auto basic = [](const Bytes& b, const std::string& n, const DecodeOptions& o, std::string* w) {
    return decode_rgb_basic(b, n, o, w);
  };
  DecodeOptions lenient;
  lenient.lenient = true;
  for (const Bytes* b : std::initializer_list<const Bytes*>{&cut, &truncated, &png_cut})
    for (const DecodeOptions& o : {DecodeOptions{}, lenient}) {
      std::string w1, w2;
      const std::string e1 = error(rgb, *b, o, &w1), e2 = error(basic, *b, o, &w2);
      EXPECT_EQ(e2, e1);
      EXPECT_EQ(w2, w1);
    }
  EXPECT_EQ(error(basic, truncated, {}, nullptr), "x: truncated JPEG (no end-of-image marker)");
}

TEST(DecodeExact, JpegKinds) {
  const int w = 83, h = 61;  // odd sizes: partial MCUs
  struct Case {
    const char* name;
    JpegSpec spec;
  };
  std::vector<Case> cases = {
      {"ycc 4:2:0", {}},
      {"ycc 4:4:4", {3, JCS_RGB, JCS_YCbCr, 95, false, false, 0, 1, 1}},
      {"ycc 4:2:2", {3, JCS_RGB, JCS_YCbCr, 80, false, false, 0, 2, 1}},
      {"ycc 4:4:0", {3, JCS_RGB, JCS_YCbCr, 80, false, false, 0, 1, 2}},
      {"progressive", {3, JCS_RGB, JCS_YCbCr, 90, true, false, 0, 2, 2}},
      {"arithmetic", {3, JCS_RGB, JCS_YCbCr, 90, false, true, 0, 2, 2}},
      {"restart markers", {3, JCS_RGB, JCS_YCbCr, 90, false, false, 1, 2, 2}},
      {"stored as RGB", {3, JCS_RGB, JCS_RGB, 90, false, false, 0, 1, 1}},
      {"gray", {1, JCS_GRAYSCALE, JCS_GRAYSCALE, 90, false, false, 0, 1, 1}},
      {"gray progressive", {1, JCS_GRAYSCALE, JCS_GRAYSCALE, 90, true, false, 0, 1, 1}},
      {"CMYK", {4, JCS_CMYK, JCS_CMYK, 90, false, false, 0, 1, 1}},
      {"YCCK", {4, JCS_CMYK, JCS_YCCK, 90, false, false, 0, 2, 2}},
      {"YCCK progressive", {4, JCS_CMYK, JCS_YCCK, 75, true, false, 0, 2, 2}},
  };
  for (const Case& c : cases) {
    const Bytes jpg = libjpeg_encode(pattern(w, h, c.spec.components, 7), w, h, c.spec);
    for (ExifPolicy p : {ExifPolicy::ignore, ExifPolicy::apply}) {
      DecodeOptions o;
      o.exif = p;
      expect_same_as_opencv(jpg, c.name, o);
      for (int orient = 1; orient <= 8; ++orient)
        expect_same_as_opencv(with_app1(jpg, exif_app1_payload(exif_tiff(orient, orient % 2 == 0))),
                              std::string(c.name) + " EXIF " + std::to_string(orient), o);
    }
  }
  // What cv::imwrite makes: baseline, progressive, gray, optimized Huffman, 4:4:4.
  const cv::Mat bgr = photo(97, 71, 3);
  cv::Mat gray;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  expect_same_as_opencv(encode(".jpg", bgr), "imwrite baseline");
  expect_same_as_opencv(encode(".jpg", bgr, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}), "imwrite progressive");
  expect_same_as_opencv(encode(".jpg", bgr, {cv::IMWRITE_JPEG_OPTIMIZE, 1, cv::IMWRITE_JPEG_QUALITY, 60}),
                        "imwrite optimized");
  expect_same_as_opencv(encode(".jpg", gray), "imwrite gray");
  expect_same_as_opencv(encode(".jpg", gray, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}), "imwrite gray progressive");
  // Motion-JPEG style: no DHT segment (the standard Huffman tables are implied).
  const Bytes j = encode(".jpg", bgr);
  Bytes mjpeg(j.begin(), j.begin() + 2);
  for (std::size_t i = 2; i + 3 < j.size();) {
    const std::size_t len = (static_cast<std::size_t>(j[i + 2]) << 8) | j[i + 3];
    if (j[i + 1] == 0xDA) {
      mjpeg.insert(mjpeg.end(), j.begin() + static_cast<long>(i), j.end());
      break;
    }
    if (j[i + 1] != 0xC4)
      mjpeg.insert(mjpeg.end(), j.begin() + static_cast<long>(i), j.begin() + static_cast<long>(i + 2 + len));
    i += 2 + len;
  }
  ASSERT_LT(mjpeg.size(), j.size());
  expect_same_as_opencv(mjpeg, "no DHT");
}

// --decode gpu hands a device decoder only JPEGs that libjpeg reads as YCbCr (or gray): an
// RGB-coded one (Adobe transform 0, which libjpeg writes for JCS_RGB) stays on the host.
TEST(DecodeGpuRouting, RgbCodedJpegsAreNotYcc) {
  const int w = 40, h = 30;
  EXPECT_TRUE(jpeg_colour_is_ycc(libjpeg_encode(pattern(w, h, 3, 1), w, h, JpegSpec{})));
  EXPECT_TRUE(jpeg_colour_is_ycc(
      libjpeg_encode(pattern(w, h, 1, 1), w, h, {1, JCS_GRAYSCALE, JCS_GRAYSCALE, 90, false, false, 0, 1, 1})));
  EXPECT_FALSE(
      jpeg_colour_is_ycc(libjpeg_encode(pattern(w, h, 3, 1), w, h, {3, JCS_RGB, JCS_RGB, 90, false, false, 0, 1, 1})));
  // opencv-doc's ellipses.jpg is gray with an Adobe marker of transform 0 (normal for gray): YCC
  // as far as the device decoder goes; every other photo there is YCbCr.
  for (const auto& f : fs::directory_iterator("/usr/share/doc/opencv-doc/examples/data"))
    if (f.path().extension() == ".jpg") {
      std::ifstream in(f.path(), std::ios::binary);
      const Bytes b((std::istreambuf_iterator<char>(in)), {});
      EXPECT_TRUE(jpeg_colour_is_ycc(b)) << f.path();
    }
}

TEST(DecodeExact, JpegFastDecodeEveryScale) {
  const cv::Mat bgr = photo(1300, 1240, 5);
  JpegSpec cmyk{4, JCS_CMYK, JCS_YCCK, 85, false, false, 0, 2, 2};
  const std::vector<std::pair<std::string, Bytes>> files = {
      {"baseline", encode(".jpg", bgr)},
      {"progressive", encode(".jpg", bgr, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
      {"YCCK", libjpeg_encode(pattern(1300, 1240, 4, 2), 1300, 1240, cmyk)},
  };
  for (const auto& [name, jpg] : files)
    for (int t : {600, 300, 150, 299}) {  // 1/2, 1/4, 1/8, 1/4
      for (ExifPolicy p : {ExifPolicy::ignore, ExifPolicy::apply}) {
        DecodeOptions o;
        o.fast = true;
        o.target_size = t;
        o.exif = p;
        expect_same_as_opencv(jpg, name + " fast " + std::to_string(t), o);
        expect_same_as_opencv(with_app1(jpg, exif_app1_payload(exif_tiff(6))), name + " EXIF 6 fast", o);
      }
    }
  DecodeOptions o;
  o.fast = true;
  EXPECT_EQ(decode_rgb(files[0].second, "big.jpg", o).size(), cv::Size(325, 310));
}

// djpeg's decode of `jpg` (`-dct fast` or `-dct int`, fancy upsampling, RGB PPM), or an empty
// image when djpeg cannot write it as PPM (CMYK files).
cv::Mat djpeg_rgb(const fs::path& jpg, const std::string& dct, const fs::path& ppm) {
  const std::string cmd = "djpeg -dct " + dct + " -outfile '" + ppm.string() + "' '" + jpg.string() + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return cv::Mat();
  const cv::Mat bgr = cv::imread(ppm.string(), cv::IMREAD_COLOR);
  if (bgr.empty()) return bgr;
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

// --decode tf: libjpeg's fast integer IDCT (TF's DecodeJpeg default), checked against libjpeg-turbo's
// own djpeg; exact stays the accurate IDCT; PNGs are unaffected. TF itself is the reference in
// tests/py/tf_fidelity.py.
TEST(DecodeTf, FastIdctAsDjpegAndExactUnchanged) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing (apt-get install opencv-doc)";
  if (std::system("command -v djpeg >/dev/null 2>&1") != 0) GTEST_SKIP() << "djpeg missing (libjpeg-turbo-progs)";
  vecbench::testing::ScopedTempDir tmp("vecbench-decode-tf");
  DecodeOptions tf;
  tf.jpeg_decoder = JpegDecoder::tf;
  int compared = 0, differ = 0, pngs = 0;
  for (const auto& e : fs::directory_iterator(kSamples)) {
    const std::string ext = e.path().extension().string(), what = e.path().string();
    if (!e.is_regular_file() || (ext != ".png" && ext != ".jpg")) continue;
    const Bytes b = read_all(e.path());
    if (ext == ".png" && pngs < 5) {
      ++pngs;
      EXPECT_EQ(cv::norm(decode_rgb(b, what, tf), decode_rgb(b, what), cv::NORM_INF), 0.0) << what;
    }
    if (ext != ".jpg") continue;
    const cv::Mat fast = djpeg_rgb(e.path(), "fast", tmp.path / "f.ppm");
    const cv::Mat accurate = djpeg_rgb(e.path(), "int", tmp.path / "a.ppm");
    if (fast.empty() || accurate.empty()) continue;
    ++compared;
    const cv::Mat got_tf = decode_rgb(b, what, tf), got_exact = decode_rgb(b, what);
    ASSERT_EQ(got_tf.size(), fast.size()) << what;
    EXPECT_EQ(cv::norm(got_tf, fast, cv::NORM_INF), 0.0) << what;
    EXPECT_EQ(cv::norm(got_exact, accurate, cv::NORM_INF), 0.0) << what;
    const double d = cv::norm(got_tf, got_exact, cv::NORM_INF);
    EXPECT_LE(d, 40.0) << what;  // a few levels apart, not another image
    if (d > 0) ++differ;
  }
  EXPECT_GE(compared, 20);
  EXPECT_GE(differ, compared / 2);  // the fast IDCT really is another arithmetic
}

TEST(DecodeExact, PngKinds) {
  const int w = 37, h = 23;
  std::vector<std::pair<int, std::vector<int>>> kinds = {{PNG_COLOR_TYPE_GRAY, {1, 2, 4, 8, 16}},
                                                         {PNG_COLOR_TYPE_GRAY_ALPHA, {8, 16}},
                                                         {PNG_COLOR_TYPE_RGB, {8, 16}},
                                                         {PNG_COLOR_TYPE_RGB_ALPHA, {8, 16}},
                                                         {PNG_COLOR_TYPE_PALETTE, {1, 2, 4, 8}}};
  unsigned seed = 1;
  int n = 0;
  for (const auto& [type, depths] : kinds)
    for (int depth : depths)
      for (bool interlace : {false, true})
        for (bool trns : {false, true}) {
          if (trns && (type & PNG_COLOR_MASK_ALPHA)) continue;
          const Bytes png = libpng_encode(w, h, {depth, type, interlace, trns}, seed++);
          const std::string name = "PNG type " + std::to_string(type) + " depth " + std::to_string(depth) +
                                   (interlace ? " interlaced" : "") + (trns ? " tRNS" : "");
          expect_same_as_opencv(png, name);
          // 8-bit, not interlaced: the libdeflate fast path (png_fast.hpp) made those pixels
          EXPECT_EQ(decode_png(png.data(), png.size()).png_libdeflate,
                    png_fast::available() && depth == 8 && !interlace)
              << name;
          ++n;
        }
  EXPECT_EQ(n, 2 * (5 * 2 + 2 + 2 * 2 + 2 + 4 * 2));
  // What cv::imwrite makes: 8/16-bit gray, BGR, BGRA.
  const cv::Mat bgr = photo(41, 29, 9);
  cv::Mat gray, bgra, b16, g16;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  cv::cvtColor(bgr, bgra, cv::COLOR_BGR2BGRA);
  bgra.at<cv::Vec4b>(3, 4)[3] = 0;
  bgr.convertTo(b16, CV_16U, 257.0, 77.0);  // low bytes matter: OpenCV keeps the high byte
  gray.convertTo(g16, CV_16U, 256.0, 200.0);
  for (const auto& [name, m] : std::vector<std::pair<std::string, cv::Mat>>{
           {"gray", gray}, {"bgr", bgr}, {"bgra", bgra}, {"bgr16", b16}, {"gray16", g16}}) {
    const Bytes png = encode(".png", m);
    expect_same_as_opencv(png, "imwrite " + name);
    EXPECT_EQ(decode_png(png.data(), png.size()).png_libdeflate, png_fast::available() && m.depth() == CV_8U) << name;
  }
  // eXIf orientation, before or after the image data, both byte orders, both policies.
  const Bytes png = encode(".png", bgr);
  for (int orient = 0; orient <= 9; ++orient)
    for (bool at_end : {false, true})
      for (ExifPolicy p : {ExifPolicy::ignore, ExifPolicy::apply}) {
        DecodeOptions o;
        o.exif = p;
        expect_same_as_opencv(with_png_chunk(png, png_chunk("eXIf", exif_tiff(orient, orient % 2 == 1)), at_end),
                              "PNG eXIf " + std::to_string(orient) + (at_end ? " after IDAT" : ""), o);
      }
}

TEST(DecodeExact, ExifOrientationReadLikeOpenCv) {
  // Random IFD0s (tags OpenCV parses and others, in-range and out-of-range offsets, both byte
  // orders, truncation, duplicates, other APP1 segments first) in JPEGs and PNGs: --exif apply
  // gives OpenCV's orientation every time.
  cv::Mat bgr(8, 16, CV_8UC3, cv::Scalar(0, 0, 0));
  for (int q = 0; q < 4; ++q)
    bgr(cv::Rect((q % 2) * 8, 0, 8, 8)).setTo(cv::Scalar(40 + 60 * q, 200 - 40 * q, 30 * q + (q == 3 ? 90 : 0)));
  const Bytes jpg = encode(".jpg", bgr, {cv::IMWRITE_JPEG_QUALITY, 100});
  const Bytes png = encode(".png", bgr);
  const std::uint16_t tags[] = {0x0100, 0x010E, 0x010F, 0x0110, 0x0112, 0x0112, 0x0112, 0x011A, 0x011B, 0x0128,
                                0x0131, 0x0132, 0x013E, 0x013F, 0x0211, 0x0213, 0x0214, 0x8298, 0x8769};
  std::mt19937 rng(12345);
  DecodeOptions o;
  o.exif = ExifPolicy::apply;
  int rotated = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const bool le = rng() % 2;
    Bytes t = le ? Bytes{'I', 'I', 42, 0} : Bytes{'M', 'M', 0, 42};
    if (rng() % 10 == 0) t[1] = 'X';
    const std::uint32_t ifd = 8 + 2 * (rng() % 3);
    const int entries = 1 + static_cast<int>(rng() % 5);
    auto put16 = [&](std::uint32_t v) {
      if (le)
        t.insert(t.end(), {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8)});
      else
        t.insert(t.end(), {static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)});
    };
    auto put32 = [&](std::uint32_t v) {
      if (le)
        put16(v & 0xFFFF), put16(v >> 16);
      else
        put16(v >> 16), put16(v & 0xFFFF);
    };
    put32(ifd);
    while (t.size() < ifd) t.push_back(0);
    put16(static_cast<std::uint32_t>(entries + (rng() % 8 == 0 ? 3 : 0)));
    const std::uint32_t total = ifd + 2 + 12 * entries + 4 + 24;
    for (int e = 0; e < entries; ++e) {
      const std::uint16_t tag = tags[rng() % (sizeof tags / sizeof tags[0])];
      put16(tag);
      put16(1 + rng() % 5);                                // type
      put32(rng() % 3 == 0 ? rng() % 40 : 1 + rng() % 4);  // count
      if (tag == 0x0112) {
        put16(rng() % 10), put16(rng() % 2 ? 0 : rng() % 9);  // value (16-bit read at +8)
      } else {
        put32(rng() % 2 ? total - 8 - rng() % 12 : rng() % (total + 16));  // value or offset
      }
    }
    put32(0);
    for (int k = 0; k < 24; ++k) t.push_back(static_cast<std::uint8_t>(rng()));
    if (rng() % 5 == 0) t.resize(t.size() - (rng() % (t.size() - 4)));  // truncated block
    Bytes j = with_app1(jpg, exif_app1_payload(t));
    if (rng() % 8 == 0) j = with_app1(j, Bytes{'h', 't', 't', 'p', ':', '/', '/', 'n', 's', 0, 'x', 'm', 'p'});
    if (rng() % 8 == 0) j = with_app1(j, exif_app1_payload(exif_tiff(static_cast<int>(rng() % 9))));
    const cv::Mat want = opencv_rgb(j, o);
    ::testing::internal::CaptureStderr();
    const cv::Mat got = decode_rgb(j, "exif.jpg", o);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "case " << iter;
    ASSERT_EQ(got.size(), want.size()) << "case " << iter;
    ASSERT_EQ(cv::norm(got, want, cv::NORM_INF), 0.0) << "case " << iter;
    rotated += cv::norm(got(cv::Rect(0, 0, 4, 4)), opencv_rgb(jpg)(cv::Rect(0, 0, 4, 4)), cv::NORM_INF) > 20;
    if (iter % 4 == 0 && t.size() >= 2) {
      const Bytes p = with_png_chunk(png, png_chunk("eXIf", t), iter % 8 == 0);
      ::testing::internal::CaptureStderr();
      const cv::Mat pw = opencv_rgb(p, o);  // may print "libpng warning: eXIf: ..."
      ::testing::internal::GetCapturedStderr();
      const cv::Mat pg = decode_rgb(p, "exif.png", o);
      ASSERT_EQ(pg.size(), pw.size()) << "PNG case " << iter;
      ASSERT_EQ(cv::norm(pg, pw, cv::NORM_INF), 0.0) << "PNG case " << iter;
    }
  }
  EXPECT_GT(rotated, 20);  // the cases do exercise orientations
}

// ---- (b)-(d) corrupt JPEG data ------------------------------------------------------------------

TEST(DecodeStrict, JpegCutAt60PercentWithEndMarker) {
  const Bytes jpg = encode(".jpg", photo(320, 240, 1), {cv::IMWRITE_JPEG_QUALITY, 90});
  Bytes cut(jpg.begin(), jpg.begin() + static_cast<long>(jpg.size() * 6 / 10));
  cut.insert(cut.end(), {0xFF, 0xD9});
  cv::Mat img;
  std::string warning, error;
  const std::string printed = stderr_of_decode(cut, {}, &img, &warning, &error);
  EXPECT_CONTAINS(error, "x: corrupt JPEG data (libjpeg: ");
  EXPECT_CONTAINS(error, "premature end of data segment");
  EXPECT_EQ(printed, "");
  // Lenient: OpenCV's (grey-filled) image, the decoder's words as the warning, nothing printed.
  DecodeOptions lenient;
  lenient.lenient = true;
  error.clear();
  EXPECT_EQ(stderr_of_decode(cut, lenient, &img, &warning, &error), "");
  EXPECT_EQ(error, "");
  ASSERT_EQ(img.size(), cv::Size(320, 240));
  EXPECT_EQ(warning.rfind("libjpeg: ", 0), 0u) << warning;
  EXPECT_CONTAINS(warning, "Corrupt JPEG data");
  ::testing::internal::CaptureStderr();
  const cv::Mat want = opencv_rgb(cut);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cv::norm(img, want, cv::NORM_INF), 0.0);
}

TEST(DecodeStrict, JpegScanDataChanged) {
  const Bytes jpg = encode(".jpg", photo(256, 192, 2), {cv::IMWRITE_JPEG_QUALITY, 90});
  Bytes bad = jpg;
  const std::size_t s = scan_start(jpg);
  ASSERT_GT(s, 0u);
  // A run of stuffed 0xFF bytes: all-ones bit strings are never a valid Huffman code.
  for (std::size_t i = s + (jpg.size() - s) / 2, k = 0; k < 64; ++k) bad[i + 2 * k] = 0xFF, bad[i + 2 * k + 1] = 0;
  EXPECT_CONTAINS(error_of(bad, "scan.jpg"), "scan.jpg: corrupt JPEG data (libjpeg: Corrupt JPEG data: ");
  DecodeOptions lenient;
  lenient.lenient = true;
  std::string warning;
  const cv::Mat img = decode_rgb(bad, "scan.jpg", lenient, &warning);
  EXPECT_EQ(img.size(), cv::Size(256, 192));
  EXPECT_CONTAINS(warning, "libjpeg: Corrupt JPEG data: ");
  ::testing::internal::CaptureStderr();
  const cv::Mat want = opencv_rgb(bad);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cv::norm(img, want, cv::NORM_INF), 0.0);
}

TEST(DecodeStrict, JunkBetweenHeaderSegmentsIsNotData) {
  // Bytes between two segments before the first scan: libjpeg skips them with "Corrupt JPEG data:
  // 3 extraneous bytes before marker 0xe0"; no pixel depends on them, so strict decoding accepts
  // them (OpenCV's pixels). The same junk inside the scan data is an error.
  const Bytes jpg = encode(".jpg", photo(64, 48, 8));
  Bytes junk = jpg;
  junk.insert(junk.begin() + 2, {0xFF, 0xFE, 0x00, 0x04, 'h', 'i', 1, 2, 3});  // a comment, then 3 bytes
  expect_same_as_opencv(junk, "header junk");
  Bytes scan_junk = jpg;
  scan_junk.insert(scan_junk.end() - 2, {0xFF, 0xD0, 1, 2, 3});  // an RST marker and junk before EOI
  EXPECT_CONTAINS(error_of(scan_junk, "j.jpg"), "j.jpg: corrupt JPEG data (libjpeg: ");
}

TEST(DecodeStrict, JpegSofHeightBeyondData) {
  const Bytes jpg = encode(".jpg", photo(128, 96, 3));
  Bytes tall = jpg;
  std::size_t i = 2;
  while (i + 8 < tall.size() && !(tall[i] == 0xFF && tall[i + 1] == 0xC0))
    i += 2 + ((static_cast<std::size_t>(tall[i + 2]) << 8) | tall[i + 3]);
  ASSERT_EQ(tall[i + 1], 0xC0);
  tall[i + 5] = 0x01;  // height 96 -> 352 + (96 & 0xFF)
  ImageHeader h;
  ASSERT_TRUE(read_image_header(tall, h));
  EXPECT_GT(h.height, 96u);
  EXPECT_CONTAINS(error_of(tall, "tall.jpg"), "tall.jpg: corrupt JPEG data (libjpeg: ");
  DecodeOptions lenient;
  lenient.lenient = true;
  std::string warning;
  EXPECT_EQ(decode_rgb(tall, "tall.jpg", lenient, &warning).rows, static_cast<int>(h.height));
  EXPECT_CONTAINS(warning, "libjpeg: ");
}

// ---- (e)-(f) PNG --------------------------------------------------------------------------------

TEST(DecodeStrict, PngMetadataWarningsAreSilent) {
  const cv::Mat bgr = photo(40, 30, 4);
  const Bytes png = encode(".png", bgr);
  // An iCCP profile libpng rejects, an sRGB chunk with a bad intent, a tEXt chunk with a bad CRC:
  // libpng warns ("iCCP: ...", "sRGB: ...", "tEXt: CRC error"); the pixels are untouched.
  Bytes icc(200, 0);
  icc[3] = 200;  // profile length
  Bytes iccp = {'s', 'R', 'G', 'B', 0, 0};
  Bytes z(compressBound(static_cast<uLong>(icc.size())));
  uLongf zn = static_cast<uLongf>(z.size());
  compress(z.data(), &zn, icc.data(), static_cast<uLong>(icc.size()));
  iccp.insert(iccp.end(), z.begin(), z.begin() + static_cast<long>(zn));
  Bytes text = png_chunk("tEXt", {'a', 0, 'b'});
  text.back() ^= 1;
  std::vector<Bytes> files = {with_png_chunk(png, png_chunk("iCCP", iccp)), with_png_chunk(png, png_chunk("sRGB", {9})),
                              with_png_chunk(png, text, true)};
  const char* icon = "/usr/share/icons/hicolor/16x16/apps/openjdk-17.png";  // "known incorrect sRGB profile"
  if (fs::exists(icon)) files.push_back(read_all(icon));
  for (const Bytes& f : files) {
    ::testing::internal::CaptureStderr();
    const cv::Mat want = opencv_rgb(f);
    EXPECT_CONTAINS(::testing::internal::GetCapturedStderr(), "libpng warning: ");  // what OpenCV prints
    cv::Mat img;
    std::string warning = "x", error;
    EXPECT_EQ(stderr_of_decode(f, {}, &img, &warning, &error), "");
    EXPECT_EQ(error, "");
    EXPECT_EQ(warning, "");
    ASSERT_EQ(img.size(), want.size());
    EXPECT_EQ(cv::norm(img, want, cv::NORM_INF), 0.0);
  }
}

TEST(DecodeStrict, PngTruncatedOrExtraData) {
  const Bytes png = encode(".png", photo(64, 48, 5));
  for (std::size_t keep : {std::size_t{60}, png.size() / 2, png.size() - 12, png.size() - 1}) {
    const Bytes cut(png.begin(), png.begin() + static_cast<long>(keep));
    cv::Mat img;
    std::string warning, error;
    EXPECT_EQ(stderr_of_decode(cut, {}, &img, &warning, &error), "");
    EXPECT_CONTAINS(error, "x: corrupt PNG data (libpng: ");
    EXPECT_CONTAINS(error, "truncated");
  }
  // Image data cut short inside a well-formed file (IDAT rewrapped, IEND kept).
  Bytes raw;
  for (int y = 0; y < 48; ++y) {
    raw.push_back(0);  // filter: none
    for (int x = 0; x < 64 * 3; ++x) raw.push_back(static_cast<std::uint8_t>(x + y));
  }
  const Bytes full = handmade_png(64, 48, 8, PNG_COLOR_TYPE_RGB, raw);
  const Bytes half = handmade_png(64, 48, 8, PNG_COLOR_TYPE_RGB, Bytes(raw.begin(), raw.begin() + 2000));
  EXPECT_CONTAINS(error_of(half, "half.png"), "half.png: corrupt PNG data (libpng: Not enough image data)");
  // Extra data after the image: OpenCV decodes it with a libpng warning. Strict: an error;
  // lenient: the image and the warning.
  Bytes more = raw;
  more.resize(raw.size() + 500, 0);
  const Bytes extra = handmade_png(64, 48, 8, PNG_COLOR_TYPE_RGB, more);
  EXPECT_CONTAINS(error_of(extra, "extra.png"), "extra.png: corrupt PNG data (libpng: IDAT: ");
  DecodeOptions lenient;
  lenient.lenient = true;
  std::string warning;
  const cv::Mat img = decode_rgb(extra, "extra.png", lenient, &warning);
  EXPECT_CONTAINS(warning, "libpng: IDAT: ");
  ::testing::internal::CaptureStderr();
  const cv::Mat want = opencv_rgb(extra);
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(img.size(), want.size());
  EXPECT_EQ(cv::norm(img, want, cv::NORM_INF), 0.0);
  expect_same_as_opencv(full, "handmade");
}

// ---- (g)-(h) size limit and formats -------------------------------------------------------------

TEST(DecodeLimits, OversizedImageRefusedFromItsHeader) {
  // 30000x30000 gray: the header says 900 million pixels; the file is tiny (its data is not even
  // complete: it is never decoded).
  const Bytes bomb = handmade_png(30000, 30000, 8, PNG_COLOR_TYPE_GRAY, Bytes(30001 * 4, 0));
  ImageHeader h;
  ASSERT_TRUE(read_image_header(bomb, h));
  EXPECT_EQ(h.format, ImageFormat::png);
  EXPECT_STREQ(format_name(h.format), "PNG");
  EXPECT_EQ(h.width, 30000u);
  EXPECT_EQ(h.height, 30000u);
  EXPECT_EQ(error_of(bomb, "bomb.png"),
            "bomb.png: image too large: 30000x30000 = 900000000 pixels, over the limit of 178956970 (--max-pixels)");
  // A custom limit refuses a normal photo, in every format whose header is read.
  const cv::Mat bgr = photo(64, 48);
  DecodeOptions small;
  small.max_pixels = 1000;
  for (const std::string ext : {".jpg", ".png", ".bmp", ".tiff", ".webp", ".ppm", ".pgm"}) {
    cv::Mat m = bgr;
    if (ext == ".pgm") cv::cvtColor(bgr, m, cv::COLOR_BGR2GRAY);
    const Bytes b = encode(ext, m);
    ASSERT_TRUE(read_image_header(b, h)) << ext;
    EXPECT_EQ(h.width, 64u) << ext;
    EXPECT_EQ(h.height, 48u) << ext;
    EXPECT_CONTAINS(error_of(b, "p" + ext, small),
                    "p" + ext + ": image too large: 64x48 = 3072 pixels, over the limit of 1000");
    DecodeOptions none;
    none.max_pixels = 0;
    EXPECT_EQ(decode_rgb(b, "p" + ext, none).size(), cv::Size(64, 48)) << ext;
  }
  // WebP lossless (VP8L) and extended (VP8X) headers too.
  const Bytes lossless = encode(".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 101});
  ASSERT_TRUE(read_image_header(lossless, h));
  EXPECT_EQ(h.width * 1000 + h.height, 64048u);
  Bytes vp8x = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E',  'B',  'P', 'V',  'P',  '8',
                'X', 10,  0,   0,   0, 0, 0, 0, 0,   0x2F, 0x75, 0,   0x1F, 0x4E, 0};  // 30000 x 20000
  ASSERT_TRUE(read_image_header(vp8x, h));
  EXPECT_EQ(h.width, 30000u);
  EXPECT_EQ(h.height, 20000u);
  EXPECT_CONTAINS(error_of(vp8x, "big.webp"), "big.webp: image too large: 30000x20000");
}

TEST(DecodeFormats, GifAndOtherUnsupportedFormats) {
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0,   0, 0, 255, 255,
                     255, ',', 0,   0,   0,   0,   1, 0, 1, 0, 0,    2, 2, 'D', 1, 0, ';'};
  EXPECT_EQ(error_of(gif, "anim.gif"), "anim.gif: unsupported format (GIF)");
  const Bytes heic = {0, 0, 0, 24, 'f', 't', 'y', 'p', 'h', 'e', 'i', 'c', 0, 0, 0, 0};
  EXPECT_EQ(error_of(heic, "p.heic"), "p.heic: unsupported format (HEIF)");
  const Bytes avif = {0, 0, 0, 24, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f', 0, 0, 0, 0};
  EXPECT_EQ(error_of(avif, "p.avif"), "p.avif: unsupported format (AVIF)");
  // An oversized JPEG is "too large", not "corrupt".
  Bytes huge = encode(".jpg", photo(16, 16));
  for (std::size_t i = 2; i + 8 < huge.size();) {
    if (huge[i + 1] == 0xC0) {
      huge[i + 5] = huge[i + 6] = huge[i + 7] = huge[i + 8] = 0xFF;
      break;
    }
    i += 2 + ((static_cast<std::size_t>(huge[i + 2]) << 8) | huge[i + 3]);
  }
  EXPECT_CONTAINS(error_of(huge, "huge.jpg"), "huge.jpg: image too large: 65535x65535");
}

// ---- (i) file errors and the FileSource warnings -------------------------------------------------

TEST(ImagesFiles, ReadFileBytesNamesTheCause) {
  const fs::path d = vecbench::testing::fresh_temp_dir("read_errors");
  fs::create_symlink(d / "b", d / "a");
  fs::create_symlink(d / "a", d / "b");
  auto cause = [](const fs::path& p) {
    try {
      read_file_bytes(p.string());
    } catch (const InputError& e) {
      return e.cause;
    }
    return std::string("ok");
  };
  EXPECT_EQ(cause(d / "a"), "symbolic link loop");
  fs::create_symlink(d / "missing", d / "dangling");
  EXPECT_EQ(cause(d / "dangling"), "broken symbolic link (its target does not exist)");
  EXPECT_EQ(cause(d / "nothing.jpg"), "no such file");
  EXPECT_EQ(cause(d), "is a directory, not an image");
  { std::ofstream(d / "f.bin", std::ios::binary) << std::string(200000, 'z'); }
  EXPECT_EQ(read_file_bytes((d / "f.bin").string()).size(), 200000u);
  EXPECT_EQ(cause(d / "f.bin" / "x"), "no such file (a parent is not a directory)");
  if (::geteuid() != 0) {  // root reads anything
    { std::ofstream(d / "secret.jpg") << "x"; }
    fs::permissions(d / "secret.jpg", fs::perms::none);
    EXPECT_EQ(cause(d / "secret.jpg"), "permission denied");
  }
  fs::remove_all(d);
}

TEST(ImagesFiles, FileSourceReportsLenientWarnings) {
  const fs::path d = vecbench::testing::fresh_temp_dir("lenient_source");
  const Bytes jpg = encode(".jpg", photo(120, 90, 6));
  Bytes cut(jpg.begin(), jpg.begin() + static_cast<long>(jpg.size() * 6 / 10));
  cut.insert(cut.end(), {0xFF, 0xD9});
  std::ofstream(d / "good.jpg", std::ios::binary).write(reinterpret_cast<const char*>(jpg.data()), jpg.size());
  std::ofstream(d / "cut.jpg", std::ios::binary).write(reinterpret_cast<const char*>(cut.data()), cut.size());
  ImageList list;
  list.paths = {(d / "cut.jpg").string(), (d / "good.jpg").string()};
  list.root = d;
  std::vector<float> buf(3 * 299 * 299);
  StageTimes t{};
  FileSource strict(list, ResizeMode::tf_legacy);
  EXPECT_THROW(strict.load(0, 299, buf.data(), t), InputError);
  DecodeOptions o;
  o.lenient = true;
  FileSource lenient(list, ResizeMode::tf_legacy, o);
  lenient.load(0, 299, buf.data(), t);
  lenient.load(1, 299, buf.data(), t);
  EXPECT_CONTAINS(lenient.warning(0), "libjpeg: Corrupt JPEG data");
  EXPECT_EQ(lenient.warning(1), "");
  fs::remove_all(d);
}
