// Where images come from: a list of inputs that a stage can load, by index, straight into a
// batch buffer (float CHW 0..255 at the model's input size). This header has the sources that
// need no OpenCV: pre-decoded .npy and synthetic; image files are in image_files.hpp.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "vecbench/error.hpp"
#include "vecbench/metrics.hpp"
#include "vecbench/npy.hpp"
#include "vecbench/resize.hpp"

namespace vecbench {

/// A list of images. `load` is called concurrently from several threads.
class ImageSource {
 public:
  virtual ~ImageSource() = default;
  /// Number of inputs.
  virtual std::size_t size() const = 0;
  /// The input's name as reported (path of an image file, or "synthetic:7", "file.npy[3]").
  virtual std::string name(std::size_t i) const = 0;
  /// Kind of input: "files", "predecoded" or "synthetic".
  virtual std::string kind() const = 0;
  /// Writes image `i` as 3*S*S floats (CHW, RGB, 0..255) into `dst`; adds stage times to `t`.
  /// Throws InputError naming the input and the cause.
  virtual void load(std::size_t i, int size, float* dst, StageTimes& t) const = 0;
  /// The root the inputs' names are relative to (for output names); empty if none.
  virtual std::filesystem::path root() const { return {}; }
};

/// Deterministic synthetic images (smooth gradients plus a hashed texture), made on the fly.
class SyntheticSource : public ImageSource {
 public:
  explicit SyntheticSource(std::size_t count, std::uint32_t seed = 0) : count_(count), seed_(seed) {}
  std::size_t size() const override { return count_; }
  std::string name(std::size_t i) const override { return "synthetic:" + std::to_string(i); }
  std::string kind() const override { return "synthetic"; }
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    StageTimer timer(t, Stage::decode);
    const std::size_t plane = static_cast<std::size_t>(size) * size;
    std::uint32_t h = seed_ * 2654435761u + static_cast<std::uint32_t>(i) * 40503u + 1u;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < size; ++y)
        for (int x = 0; x < size; ++x) {
          h ^= h << 13;
          h ^= h >> 17;
          h ^= h << 5;
          const int v = (x * (c + 1) + y * (3 - c) + static_cast<int>(i) * 37) % 256;
          dst[c * plane + static_cast<std::size_t>(y) * size + x] =
              static_cast<float>((v * 3 + static_cast<int>(h % 64)) % 256);
        }
  }

 private:
  std::size_t count_;
  std::uint32_t seed_;
};

/// Pre-decoded images: an .npy of uint8 [N, S, S, 3] (RGB), as `vecbench predecode` writes.
class PredecodedSource : public ImageSource {
 public:
  explicit PredecodedSource(const std::filesystem::path& path) : path_(path) {
    arr_ = npy::load(path);
    if (arr_.descr != "|u1" || arr_.shape.size() != 4 || arr_.shape[3] != 3 || arr_.shape[1] != arr_.shape[2])
      throw InputError(path.string(), "pre-decoded input must be a uint8 .npy of shape [N,S,S,3]");
  }
  std::size_t size() const override { return arr_.shape[0]; }
  std::string name(std::size_t i) const override { return path_.string() + "[" + std::to_string(i) + "]"; }
  std::string kind() const override { return "predecoded"; }
  int image_size() const { return static_cast<int>(arr_.shape[1]); }
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    const int s = image_size();
    const std::size_t bytes = static_cast<std::size_t>(s) * s * 3;
    const std::uint8_t* src;
    {
      StageTimer timer(t, Stage::read);
      src = arr_.data.data() + i * bytes;
    }
    StageTimer timer(t, Stage::resize);
    resize_rgb_to_chw(src, s, s, static_cast<std::size_t>(s) * 3, size, ResizeMode::bilinear, dst);
  }

 private:
  std::filesystem::path path_;
  npy::Array arr_;
};

/// File extensions a directory scan takes as images (a list file may name anything).
inline bool has_image_extension(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* exts[] = {".jpg", ".jpeg", ".jpe", ".png", ".bmp", ".dib", ".tif", ".tiff", ".webp", ".pbm",
                               ".pgm", ".ppm",  ".pnm", ".jp2", ".sr",  ".ras", ".exr", ".hdr",  ".pic"};
  return std::any_of(std::begin(exts), std::end(exts), [&](const char* x) { return e == x; });
}

/// The image list of `--images`: a directory (scanned recursively for image extensions, sorted)
/// or a text file with one path per line (relative paths are taken relative to the list file's
/// directory; blank lines and lines starting with '#' are skipped).
struct ImageList {
  std::vector<std::string> paths;
  std::filesystem::path root;  ///< directory the output names are made relative to
};

inline ImageList collect_images(const std::filesystem::path& spec) {
  namespace fs = std::filesystem;
  ImageList list;
  std::error_code ec;
  if (fs::is_directory(spec, ec)) {
    list.root = spec;
    for (auto it = fs::recursive_directory_iterator(spec, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec) && has_image_extension(it->path())) list.paths.push_back(it->path().string());
    std::sort(list.paths.begin(), list.paths.end());
    if (list.paths.empty()) throw InputError(spec.string(), "directory holds no image files");
    return list;
  }
  std::ifstream in(spec);
  if (!in)
    throw InputError(spec.string(), fs::exists(spec, ec) ? "cannot read image list" : "no such file or directory");
  list.root = spec.parent_path();
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    fs::path p(line);
    if (p.is_relative()) p = list.root / p;
    list.paths.push_back(p.lexically_normal().string());
  }
  if (list.paths.empty()) throw InputError(spec.string(), "image list is empty");
  return list;
}

}  // namespace vecbench
