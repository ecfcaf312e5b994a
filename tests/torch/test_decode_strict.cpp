// Strict decoding (codec.hpp, decode.hpp): corrupt or cut data fails with the decoder's words (or,
// lenient, decodes with a warning); nothing is printed; the pixel limit is checked from the header
// before decoding; unsupported formats and unreadable files are named.
#include <gtest/gtest.h>

#include "decode_util.hpp"

using namespace vecbench;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using namespace decode_test;  // NOLINT: the shared helpers (decode_util.hpp)

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
