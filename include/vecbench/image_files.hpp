// Image files as an ImageSource: read bytes, decode with OpenCV, resize into the batch buffer.
#pragma once
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vecbench/decode.hpp"
#include "vecbench/image_source.hpp"
#include "vecbench/resize.hpp"

namespace vecbench {

/// Reads a whole file; InputError if missing or unreadable.
inline std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "is a directory, not an image");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open (permission denied?)");
  std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(path, "read error");
  return b;
}

/// Image files decoded with OpenCV and resized with `mode`.
class FileSource : public ImageSource {
 public:
  FileSource(ImageList list, ResizeMode mode, DecodeOptions opt = {})
      : list_(std::move(list)), mode_(mode), opt_(opt) {}
  std::size_t size() const override { return list_.paths.size(); }
  std::string name(std::size_t i) const override { return list_.paths.at(i); }
  std::string kind() const override { return "files"; }
  std::filesystem::path root() const override { return list_.root; }
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    std::vector<std::uint8_t> bytes;
    {
      StageTimer timer(t, Stage::read);
      bytes = read_file_bytes(list_.paths.at(i));
    }
    cv::Mat rgb;
    {
      StageTimer timer(t, Stage::decode);
      DecodeOptions o = opt_;
      o.target_size = size;
      rgb = decode_rgb(bytes, list_.paths[i], o);
    }
    StageTimer timer(t, Stage::resize);
    resize_rgb_to_chw(rgb.data, rgb.rows, rgb.cols, rgb.step[0], size, mode_, dst);
  }

 private:
  ImageList list_;
  ResizeMode mode_;
  DecodeOptions opt_;
};

}  // namespace vecbench
