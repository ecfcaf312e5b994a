// What the decoding tests share (tests/torch/test_decode*.cpp): images encoded by OpenCV, libjpeg
// and libpng, made by hand or edited byte by byte, and OpenCV 4.6's decode as the reference.
#pragma once
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

namespace decode_test {
using namespace vecbench;  // NOLINT: test helpers
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

inline const char* const kSamples = "/usr/share/doc/opencv-doc/examples/data";

inline Bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Today's decode_rgb, the reference: cv::imdecode (reduced DCT scale chosen from the SOF and the
// target size, as decode.hpp does) then BGR->RGB.
inline cv::Mat opencv_rgb(const Bytes& b, const DecodeOptions& o = {}) {
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
inline void expect_same_as_opencv(const Bytes& b, const std::string& what, const DecodeOptions& o = {}) {
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

inline cv::Mat photo(int w, int h, int seed = 0) {  // BGR, smooth structure plus noise in every channel
  cv::Mat m(h, w, CV_8UC3);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w), static_cast<uchar>(y * 255 / h),
                                        static_cast<uchar>((x + y + static_cast<int>(rng() % 32)) % 256));
  return m;
}

inline Bytes encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {}) {
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

inline Bytes libjpeg_encode(const std::vector<std::uint8_t>& px, int w, int h, const JpegSpec& s) {
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

inline std::vector<std::uint8_t> pattern(int w, int h, int channels, unsigned seed) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * channels);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        px[(static_cast<std::size_t>(y) * w + x) * channels + c] =
            static_cast<std::uint8_t>((x * (c + 2) * 7 + y * (5 - c) * 3 + static_cast<int>(rng() % 24)) % 256);
  return px;
}

inline void png_write_cb(png_structp p, png_bytep d, png_size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(p));
  out->insert(out->end(), d, d + n);
}
inline void png_flush_cb(png_structp) {}

struct PngSpec {
  int depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlace = false;
  bool trns = false;
};

// A PNG of random samples (palette: full 2^depth palette, random colours and alphas).
inline Bytes libpng_encode(int w, int h, const PngSpec& s, unsigned seed) {
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

inline void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

inline Bytes png_chunk(const char* type, const Bytes& data) {
  Bytes c;
  put_be32(c, static_cast<std::uint32_t>(data.size()));
  Bytes td(type, type + 4);
  td.insert(td.end(), data.begin(), data.end());
  c.insert(c.end(), td.begin(), td.end());
  put_be32(c, static_cast<std::uint32_t>(crc32(0, td.data(), static_cast<uInt>(td.size()))));
  return c;
}

// `chunk` inserted right after IHDR (before the image data) or right before IEND.
inline Bytes with_png_chunk(const Bytes& png, const Bytes& chunk, bool at_end = false) {
  Bytes o = png;
  o.insert(o.begin() + static_cast<long>(at_end ? png.size() - 12 : 33), chunk.begin(), chunk.end());
  return o;
}

// A PNG made by hand: IHDR (any size), one IDAT holding `raw` deflated, IEND.
inline Bytes handmade_png(std::uint32_t w, std::uint32_t h, int depth, int color_type, const Bytes& raw) {
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
inline Bytes exif_tiff(int orientation, bool big_endian = true) {
  const auto o = static_cast<std::uint8_t>(orientation);
  if (big_endian) return {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, o, 0, 0, 0, 0, 0, 0};
  return {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, o, 0, 0, 0, 0, 0, 0, 0};
}

inline Bytes with_app1(const Bytes& jpg, const Bytes& payload) {
  Bytes seg = {0xFF, 0xE1, static_cast<std::uint8_t>((payload.size() + 2) >> 8),
               static_cast<std::uint8_t>((payload.size() + 2) & 0xFF)};
  seg.insert(seg.end(), payload.begin(), payload.end());
  Bytes o = jpg;
  o.insert(o.begin() + 2, seg.begin(), seg.end());
  return o;
}

inline Bytes exif_app1_payload(const Bytes& tiff) {
  Bytes p(6 + tiff.size(), 0);
  std::memcpy(p.data(), "Exif", 4);
  std::copy(tiff.begin(), tiff.end(), p.begin() + 6);
  return p;
}

// Offset of the first byte after the SOS segment (start of the entropy-coded data).
inline std::size_t scan_start(const Bytes& j) {
  for (std::size_t i = 2; i + 3 < j.size();) {
    if (j[i] != 0xFF) return 0;
    const std::size_t len = (static_cast<std::size_t>(j[i + 2]) << 8) | j[i + 3];
    if (j[i + 1] == 0xDA) return i + 2 + len;
    i += 2 + len;
  }
  return 0;
}

inline std::string error_of(const Bytes& b, const std::string& name, const DecodeOptions& o = {}) {
  try {
    decode_rgb(b, name, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Decodes with stderr captured; returns what was printed.
inline std::string stderr_of_decode(const Bytes& b, const DecodeOptions& o, cv::Mat* out, std::string* warning,
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

}  // namespace decode_test
