// Exact decoding (codec.hpp, decode.hpp): the direct libjpeg/libpng decoders give exactly OpenCV
// 4.6's pixels for every kind of JPEG and PNG (and EXIF orientation, and reduced DCT scales), as
// decode_basic and TF's fast IDCT do theirs. Corrupt data, limits and formats:
// test_decode_strict.cpp.
#include <gtest/gtest.h>

#include "decode_util.hpp"

using namespace vecbench;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using namespace decode_test;  // NOLINT: the shared helpers (decode_util.hpp)

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
