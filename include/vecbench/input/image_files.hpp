// Image files as an ImageSource: read bytes, decode (decode_basic.hpp: JPEG and PNG directly,
// other formats through OpenCV, loaded only when one comes), resize into the batch buffer.
#pragma once
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "vecbench/input/decode_basic.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/input/input_layout.hpp"
#include "vecbench/input/resize.hpp"

namespace vecbench {

namespace detail {

// "no such file", "permission denied", "symbolic link loop", ... for an errno from stat/open.
inline std::string open_error(int err) {
  switch (err) {
    case ENOENT:
      return "no such file";
    case ENOTDIR:
      return "no such file (a parent is not a directory)";
    case EACCES:
    case EPERM:
      return "permission denied";
    case ELOOP:
      return "symbolic link loop";
    case ENAMETOOLONG:
      return "file name too long";
    case EISDIR:
      return "is a directory, not an image";
    default:
      return "cannot open (" + std::generic_category().message(err) + ")";
  }
}

}  // namespace detail

/// Reads a whole file; InputError naming the cause (no such file, broken symbolic link,
/// symbolic link loop, permission denied, directory, read error).
inline std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      std::error_code ec2;
      if (fs::is_symlink(fs::symlink_status(path, ec2)))
        throw InputError(path, "broken symbolic link (its target does not exist)");
    }
    throw InputError(path, ec.category() == std::generic_category() || ec.category() == std::system_category()
                               ? detail::open_error(ec.value())
                               : ec.message());
  }
  if (fs::is_directory(st)) throw InputError(path, "is a directory, not an image");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, detail::open_error(errno));
  std::vector<std::uint8_t> b;
  std::error_code size_ec;
  const std::uintmax_t expected = fs::is_regular_file(st) ? fs::file_size(path, size_ec) : 0;
  b.resize(!size_ec && expected > 0 ? static_cast<std::size_t>(expected) : 1 << 16);
  std::size_t got = 0;
  for (;;) {  // the expected size, then whatever follows (a file that grew, a pipe)
    got += std::fread(b.data() + got, 1, b.size() - got, f);
    if (got < b.size()) break;
    const int c = std::fgetc(f);
    if (c == EOF) break;
    b.resize(b.size() * 2);
    b[got++] = static_cast<std::uint8_t>(c);
  }
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) throw InputError(path, "read error (" + std::generic_category().message(err) + ")");
  b.resize(got);
  return b;
}

/// Image files decoded (decode.hpp or decode_basic.hpp: strictness, pixel limit and EXIF policy from `opt`) and
/// resized with `mode`. With lenient decoding, `warning(i)` says what the decoder warned about.
/// With `where` gpu, load_or_encoded hands over the bytes of the JPEGs a device decoder may take.
/// With a `layout` (several encoders, one decode: input_layout.hpp), each image is decoded once and
/// resized into every part of it (then `size` must be the layout's side; `mode` is not used).
class FileSource : public ImageSource {
 public:
  FileSource(ImageList list, ResizeMode mode, DecodeOptions opt = {}, DecodeWhere where = DecodeWhere::cpu,
             InputLayout layout = {})
      : list_(std::move(list)),
        mode_(mode),
        opt_(opt),
        where_(where),
        layout_(std::move(layout)),
        warnings_(list_.paths.size()) {}
  std::size_t size() const override { return list_.paths.size(); }
  std::string name(std::size_t i) const override { return list_.paths.at(i); }
  SourceKind kind() const override { return SourceKind::files; }
  ResizeMode resize_mode() const override { return mode_; }
  bool hands_over_jpegs() const override { return where_ == DecodeWhere::gpu; }
  std::filesystem::path root() const override { return list_.root; }
  std::string warning(std::size_t i) const override { return warnings_.at(i); }
  std::size_t duplicates_skipped() const override { return list_.duplicates; }
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    warnings_.at(i).clear();
    std::vector<std::uint8_t> bytes;
    {
      StageTimer timer(t, Stage::read);
      bytes = read_file_bytes(list_.paths.at(i));
    }
    decode_into(i, bytes, size, dst, t);
  }
  bool load_or_encoded(std::size_t i, int size, float* dst, std::vector<std::uint8_t>& bytes,
                       StageTimes& t) const override {
    if (where_ != DecodeWhere::gpu) return ImageSource::load_or_encoded(i, size, dst, bytes, t);
    warnings_.at(i).clear();
    {
      StageTimer timer(t, Stage::read);
      bytes = read_file_bytes(list_.paths.at(i));
    }
    if (device_may_decode(bytes)) return true;
    decode_into(i, bytes, size, dst, t);
    bytes.clear();
    return false;
  }

 private:
  void decode_into(std::size_t i, const std::vector<std::uint8_t>& bytes, int size, float* dst, StageTimes& t) const {
    DecodeOptions o = opt_;
    o.target_size = size;
    const auto decode = [&] {
      StageTimer timer(t, Stage::decode);
      return decode_rgb_basic(bytes, list_.paths[i], o, &warnings_[i]);
    };
    const auto rgb = decode();
    const RgbView v = rgb_view(rgb);
    StageTimer timer(t, Stage::resize);
    if (layout_.empty()) return resize_rgb_to_chw(v.data, v.rows, v.cols, v.step, size, mode_, dst);
    if (size != layout_.side())
      throw Error("FileSource: a composite input is " + std::to_string(layout_.side()) + " per side, not " +
                  std::to_string(size));
    for (std::size_t k = 0; k < layout_.parts.size(); ++k)
      resize_rgb_to_chw(v.data, v.rows, v.cols, v.step, layout_.parts[k].size, layout_.parts[k].mode,
                        dst + layout_.offset(k));
  }
  /// A complete YCbCr (or grayscale) JPEG whose header reads, within the pixel limit, with nothing
  /// the device decoder would do differently (RGB-coded JPEGs, EXIF orientation applied,
  /// reduced-DCT decode):
  /// everything else (and every error message) goes through the host decoder.
  bool device_may_decode(const std::vector<std::uint8_t>& bytes) const {
    if (opt_.exif == ExifPolicy::apply || opt_.fast || sniff_format(bytes) != ImageFormat::jpeg ||
        !jpeg_complete(bytes) || !jpeg_colour_is_ycc(bytes))
      return false;
    ImageHeader h;
    if (!read_image_header(bytes, h)) return false;
    return opt_.max_pixels == 0 || h.width * h.height <= opt_.max_pixels;
  }

 private:
  ImageList list_;
  ResizeMode mode_;
  DecodeOptions opt_;
  DecodeWhere where_;
  InputLayout layout_;                         ///< several encoders' parts (empty: one input of `mode_`)
  mutable std::vector<std::string> warnings_;  ///< per input; each index written by the thread loading it
};

}  // namespace vecbench
