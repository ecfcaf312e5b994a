// Decoding and resizing: every format OpenCV reads, every bad-input kind, and the resize modes
// against an independent per-pixel implementation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vecbench/input/decode.hpp"
#include "vecbench/input/image_files.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

inline fs::path tmpdir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

cv::Mat photo(int w, int h) {  // BGR test image with structure in every channel
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w), static_cast<uchar>(y * 255 / h),
                                        static_cast<uchar>((x + y) % 256));
  return m;
}

std::string error_of(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  try {
    decode_rgb(bytes, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Independent reference: TF1 ResizeBilinear, one output pixel at a time, in double.
double tf_legacy_pixel(const cv::Mat& rgb, int out, int oy, int ox, int c) {
  const double sy = static_cast<double>(rgb.rows) / out, sx = static_cast<double>(rgb.cols) / out;
  const double iy = oy * sy, ix = ox * sx;
  const int y0 = static_cast<int>(iy), x0 = static_cast<int>(ix);
  const int y1 = std::min(y0 + 1, rgb.rows - 1), x1 = std::min(x0 + 1, rgb.cols - 1);
  const double fy = iy - y0, fx = ix - x0;
  auto p = [&](int y, int x) { return static_cast<double>(rgb.at<cv::Vec3b>(y, x)[c]); };
  const double top = p(y0, x0) * (1 - fx) + p(y0, x1) * fx;
  const double bot = p(y1, x0) * (1 - fx) + p(y1, x1) * fx;
  return top * (1 - fy) + bot * fy;
}

}  // namespace

TEST(Decode, EveryFormatGivesTheSameRgb) {
  const cv::Mat bgr = photo(64, 48);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  for (const std::string ext : {".png", ".bmp", ".tiff", ".webp", ".ppm"}) {
    std::vector<std::uint8_t> bytes;
    std::vector<int> params;
    if (ext == ".webp") params = {cv::IMWRITE_WEBP_QUALITY, 101};  // lossless
    ASSERT_TRUE(cv::imencode(ext, bgr, bytes, params)) << ext;
    const cv::Mat got = decode_rgb(bytes, "x" + ext);
    ASSERT_EQ(got.type(), CV_8UC3) << ext;
    EXPECT_EQ(cv::norm(got, rgb, cv::NORM_INF), 0.0) << ext;
  }
}

// What a run decodes with (decode_rgb_basic: JPEG and PNG directly, other formats through
// libvecbench_opencv.so, opened on first use) gives decode_rgb's pixels and errors in every format.
TEST(Decode, TheRunsDecoderGivesOpenCvsPixelsInEveryFormatThroughTheLoadedLibrary) {
  const cv::Mat bgr = photo(64, 48);
  for (const std::string ext : {".jpg", ".png", ".bmp", ".tiff", ".webp", ".ppm"}) {
    std::vector<std::uint8_t> bytes;
    ASSERT_TRUE(cv::imencode(ext, bgr, bytes)) << ext;
    const cv::Mat want = decode_rgb(bytes, "x" + ext);
    const BasicRgbImage got = decode_rgb_basic(bytes, "x" + ext);
    ASSERT_EQ(got.width, want.cols) << ext;
    ASSERT_EQ(got.height, want.rows) << ext;
    for (int y = 0; y < want.rows; ++y)
      ASSERT_EQ(0, std::memcmp(got.pixels.data() + got.stride * y, want.ptr(y), want.cols * 3u)) << ext << " row " << y;
  }
  EXPECT_TRUE(opencv_plugin_loaded());  // the BMP, TIFF, WebP and PPM files opened it
  const std::vector<std::uint8_t> junk = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  try {
    decode_rgb_basic(junk, "junk.bmp");
    ADD_FAILURE() << "junk decoded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), error_of(junk, "junk.bmp"));
  }
}

TEST(Decode, JpegBaselineProgressiveGrayAlpha16Bit) {
  const cv::Mat bgr = photo(80, 60);
  std::vector<std::uint8_t> base, prog;
  cv::imencode(".jpg", bgr, base, {cv::IMWRITE_JPEG_QUALITY, 95});
  cv::imencode(".jpg", bgr, prog, {cv::IMWRITE_JPEG_QUALITY, 95, cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const cv::Mat a = decode_rgb(base, "b.jpg"), b = decode_rgb(prog, "p.jpg");
  EXPECT_EQ(a.size(), cv::Size(80, 60));
  EXPECT_LT(cv::norm(a, b, cv::NORM_L1) / a.total(), 3.0);  // same picture
  // Grayscale PNG: replicated into 3 equal channels.
  cv::Mat gray;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  std::vector<std::uint8_t> g;
  cv::imencode(".png", gray, g);
  const cv::Mat gg = decode_rgb(g, "g.png");
  ASSERT_EQ(gg.channels(), 3);
  EXPECT_EQ(gg.at<cv::Vec3b>(10, 10)[0], gray.at<uchar>(10, 10));
  EXPECT_EQ(gg.at<cv::Vec3b>(10, 10)[2], gray.at<uchar>(10, 10));
  // RGBA PNG: alpha dropped, colour kept.
  cv::Mat bgra;
  cv::cvtColor(bgr, bgra, cv::COLOR_BGR2BGRA);
  bgra.at<cv::Vec4b>(5, 5)[3] = 0;
  std::vector<std::uint8_t> ga;
  cv::imencode(".png", bgra, ga);
  const cv::Mat ra = decode_rgb(ga, "a.png");
  EXPECT_EQ(ra.channels(), 3);
  EXPECT_EQ(ra.at<cv::Vec3b>(5, 5)[0], bgr.at<cv::Vec3b>(5, 5)[2]);
  // 16-bit PNG: scaled to 8 bits.
  cv::Mat b16;
  bgr.convertTo(b16, CV_16U, 257.0);
  std::vector<std::uint8_t> p16;
  cv::imencode(".png", b16, p16);
  const cv::Mat r16 = decode_rgb(p16, "d.png");
  EXPECT_EQ(r16.depth(), CV_8U);
  EXPECT_NEAR(r16.at<cv::Vec3b>(7, 9)[2], bgr.at<cv::Vec3b>(7, 9)[0], 1);
}

TEST(Decode, BadInputsNameTheFileAndCause) {
  EXPECT_NE(error_of({}, "empty.jpg").find("empty.jpg: empty file"), std::string::npos);
  const std::string text = "hello, this is not an image at all";
  EXPECT_NE(error_of({text.begin(), text.end()}, "notes.jpg").find("notes.jpg: not an image"), std::string::npos);
  std::vector<std::uint8_t> jpg;
  cv::imencode(".jpg", photo(64, 64), jpg);
  std::vector<std::uint8_t> cut(jpg.begin(), jpg.begin() + static_cast<long>(jpg.size() / 2));
  EXPECT_NE(error_of(cut, "cut.jpg").find("cut.jpg: truncated JPEG"), std::string::npos);
  std::vector<std::uint8_t> png;
  cv::imencode(".png", photo(64, 64), png);
  std::vector<std::uint8_t> pcut(png.begin(), png.begin() + 60);
  EXPECT_NE(error_of(pcut, "cut.png").find("cut.png: corrupt PNG data (libpng: "), std::string::npos);
  std::vector<std::uint8_t> garbage = {0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4, 5, 0xFF, 0xD9};
  EXPECT_NE(error_of(garbage, "junk.jpg").find("junk.jpg: corrupt"), std::string::npos);
  try {
    read_file_bytes("/nonexistent/x.jpg");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.jpg: no such file");
  }
}

TEST(Decode, ExifOrientationPolicy) {
  // A JPEG with an EXIF orientation of 6 (rotate 90 CW): 'ignore' keeps the stored 40x20,
  // 'apply' gives 20x40.
  std::vector<std::uint8_t> jpg;
  cv::imencode(".jpg", photo(40, 20), jpg);
  const std::uint8_t exif[] = {0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0, 0x2A, 0, 0, 0, 8, 0,
                               1,    0x01, 0x12, 0,    3,   0,   0,   0,   1, 0, 6,   0,   0, 0,    0, 0, 0, 0, 0};
  jpg.insert(jpg.begin() + 2, std::begin(exif), std::end(exif));
  DecodeOptions o;
  EXPECT_EQ(decode_rgb(jpg, "e.jpg", o).size(), cv::Size(40, 20));
  o.exif = ExifPolicy::apply;
  EXPECT_EQ(decode_rgb(jpg, "e.jpg", o).size(), cv::Size(20, 40));
}

TEST(Decode, FastModeUsesReducedDct) {
  std::vector<std::uint8_t> jpg;
  cv::imencode(".jpg", photo(1300, 1240), jpg);
  DecodeOptions o;
  o.fast = true;
  o.target_size = 299;
  EXPECT_EQ(decode_rgb(jpg, "big.jpg", o).size(), cv::Size(325, 310));  // 1/4 scale keeps >= 299
  o.fast = false;
  EXPECT_EQ(decode_rgb(jpg, "big.jpg", o).size(), cv::Size(1300, 1240));
}

TEST(Resize, TfLegacyMatchesIndependentImplementation) {
  cv::Mat rgb;
  cv::cvtColor(photo(517, 383), rgb, cv::COLOR_BGR2RGB);
  std::vector<float> out(3 * 299 * 299);
  resize_rgb_to_chw(rgb.data, rgb.rows, rgb.cols, rgb.step[0], 299, ResizeMode::tf_legacy, out.data());
  double max_err = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 299; y += 7)
      for (int x = 0; x < 299; x += 5)
        max_err = std::max(max_err, std::fabs(out[static_cast<std::size_t>(c) * 299 * 299 + y * 299 + x] -
                                              tf_legacy_pixel(rgb, 299, y, x, c)));
  EXPECT_LT(max_err, 1e-2);  // TF computes the scale in float32; the reference in double
  // The check is sensitive: half-pixel centres are far off this reference.
  std::vector<float> half(3 * 299 * 299);
  resize_rgb_to_chw(rgb.data, rgb.rows, rgb.cols, rgb.step[0], 299, ResizeMode::bilinear, half.data());
  double max_half = 0;
  for (int y = 0; y < 299; y += 7)
    for (int x = 0; x < 299; x += 5)
      max_half = std::max(max_half, std::fabs(half[y * 299 + x] - tf_legacy_pixel(rgb, 299, y, x, 0)));
  EXPECT_GT(max_half, 0.5);
  // Not rounded to 8 bits: some values are fractional.
  std::size_t fractional = 0;
  for (float v : out) fractional += v != std::round(v);
  EXPECT_GT(fractional, out.size() / 4);
}

TEST(Resize, BilinearHalfPixelMatchesOpenCvLinearClosely) {
  cv::Mat rgb;
  cv::cvtColor(photo(400, 300), rgb, cv::COLOR_BGR2RGB);
  std::vector<float> out(3 * 299 * 299);
  resize_rgb_to_chw(rgb.data, rgb.rows, rgb.cols, rgb.step[0], 299, ResizeMode::bilinear, out.data());
  cv::Mat f, ref;
  rgb.convertTo(f, CV_32FC3);
  cv::resize(f, ref, cv::Size(299, 299), 0, 0, cv::INTER_LINEAR);  // half-pixel centres, float
  double max_err = 0;
  for (int y = 0; y < 299; ++y)
    for (int x = 0; x < 299; ++x)
      for (int c = 0; c < 3; ++c)
        max_err =
            std::max(max_err, static_cast<double>(std::fabs(out[static_cast<std::size_t>(c) * 299 * 299 + y * 299 + x] -
                                                            ref.at<cv::Vec3f>(y, x)[c])));
  EXPECT_LT(max_err, 1e-2);
}

TEST(Inputs, DirectoryListAndFileSource) {
  const fs::path d = tmpdir("inputs");
  fs::create_directories(d / "sub");
  cv::imwrite((d / "b.png").string(), photo(30, 20));
  cv::imwrite((d / "sub" / "a.jpg").string(), photo(30, 20));
  std::ofstream(d / "README.txt") << "not an image";
  const ImageList l = collect_images(d);
  ASSERT_EQ(l.paths.size(), 2u);  // README.txt skipped by extension
  EXPECT_EQ(fs::path(l.paths[0]).filename(), "b.png");
  std::ofstream(d / "list.txt") << "# comment\nb.png\n\nsub/a.jpg\nmissing.jpg\n";
  const ImageList l2 = collect_images(d / "list.txt");
  ASSERT_EQ(l2.paths.size(), 3u);
  FileSource src(l2, ResizeMode::tf_legacy);
  std::vector<float> buf(3 * 16 * 16);
  StageTimes t;
  src.load(0, 16, buf.data(), t);
  EXPECT_GT(t[Stage::read] + t[Stage::decode] + t[Stage::resize], 0.0);
  EXPECT_THROW(src.load(2, 16, buf.data(), t), InputError);
  EXPECT_THROW(collect_images(d / "nope"), InputError);
  fs::remove_all(d);
}
