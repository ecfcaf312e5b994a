// Where images come from: a list of inputs that a stage can load, by index, straight into a
// batch buffer (float CHW 0..255 at the model's input size). This header has the sources that
// need no OpenCV: pre-decoded .npy and synthetic; image files are in image_files.hpp.
#pragma once
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/stat.h>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/base/input_settings.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/core/run/metrics.hpp"
#include "vecbench/input/resize.hpp"

namespace vecbench {

/// A list of images. `load` is called concurrently from several threads.
class ImageSource {
 public:
  virtual ~ImageSource() = default;
  /// Number of inputs.
  virtual std::size_t size() const = 0;
  /// The input's name as reported (path of an image file, or "synthetic:7", "file.npy[3]").
  virtual std::string name(std::size_t i) const = 0;
  /// Kind of input.
  virtual SourceKind kind() const = 0;
  /// Writes image `i` as 3*S*S floats (CHW, RGB, 0..255) into `dst`; adds stage times to `t`.
  /// Throws InputError naming the input and the cause.
  virtual void load(std::size_t i, int size, float* dst, StageTimes& t) const = 0;
  /// With device decoding (`--decode gpu`): either puts the bytes of input `i` into `bytes` and
  /// returns true (a JPEG the device may decode; `bytes` is left empty otherwise), or loads it
  /// here as load() does and returns false. This default always loads.
  virtual bool load_or_encoded(std::size_t i, int size, float* dst, std::vector<std::uint8_t>& bytes,
                               StageTimes& t) const {
    bytes.clear();
    load(i, size, dst, t);
    return false;
  }
  /// Whether load_or_encoded may hand over JPEG bytes (device decoding on): the run then warms
  /// each replica's decoder up on a batch of its own inputs before the clock (RunSettings::decode_warmup).
  virtual bool hands_over_jpegs() const { return false; }
  /// How this source resizes (what a device decoder must do the same way).
  virtual ResizeMode resize_mode() const { return ResizeMode::tf_legacy; }
  /// The root the inputs' names are relative to (for output names); empty if none.
  virtual std::filesystem::path root() const { return {}; }
  /// What the decoder warned about while loading input `i` with lenient decoding (empty: nothing).
  /// Valid once `load(i)` has returned; the writer puts it into the manifest line.
  virtual std::string warning(std::size_t) const { return {}; }
  /// Entries of the input list dropped because they name an input already listed.
  virtual std::size_t duplicates_skipped() const { return 0; }
};

/// Deterministic synthetic images (smooth gradients plus a hashed texture), made on the fly.
class SyntheticSource : public ImageSource {
 public:
  explicit SyntheticSource(std::size_t count, std::uint32_t seed = 0) : count_(count), seed_(seed) {}
  std::size_t size() const override { return count_; }
  std::string name(std::size_t i) const override { return "synthetic:" + std::to_string(i); }
  SourceKind kind() const override { return SourceKind::synthetic; }
  std::uint32_t seed() const { return seed_; }
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
  SourceKind kind() const override { return SourceKind::predecoded; }
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

/// The image list of `--images`: a directory (scanned recursively for image extensions, sorted),
/// one image file (by its extension), or a text file with one path per line (relative paths are taken relative to the
/// list file's directory; blank lines and lines starting with '#' are skipped; a UTF-8 byte order mark and CRLF
/// line ends, as Windows editors save, are accepted). Every path is canonical (absolute,
/// symbolic links resolved once, no "." or ".."), so that how the list or the working directory is spelled never
/// changes an input's identity; an input named twice is kept once.
struct ImageList {
  std::vector<std::string> paths;
  std::filesystem::path root;  ///< directory the output names are made relative to (canonical)
  std::size_t duplicates = 0;  ///< entries dropped because an earlier entry names the same file
};

/// The canonical form of `p` (see ImageList); a path that cannot be resolved (a symbolic link
/// loop, a missing parent) stays absolute and lexically normal, and fails when it is read.
inline std::string canonical_input_path(const std::filesystem::path& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec).lexically_normal();
  const fs::path c = fs::weakly_canonical(abs, ec);
  return (ec ? abs : c).string();
}

/// canonical_input_path for the many paths of one list, at a million inputs' speed: each folder
/// is resolved once (symbolic links in it too) and each file only lstat'ed; a path that is not
/// plain (relative, with "." or ".." or "//"), or a file that is itself a symbolic link, is
/// resolved whole. The same strings as canonical_input_path (tested).
class InputPathResolver {
 public:
  std::string operator()(const std::string& p) {
    struct stat st {};
    if (!plain_absolute(p)) return canonical_input_path(p);
    if (::lstat(p.c_str(), &st) == 0 ? S_ISLNK(st.st_mode) : errno != ENOENT && errno != ENOTDIR)
      return canonical_input_path(p);  // a link, or a path that cannot be looked into (EACCES, ELOOP)
    const std::size_t slash = p.rfind('/');
    std::string parent = slash == 0 ? std::string("/") : p.substr(0, slash);
    auto it = folders_.find(parent);
    if (it == folders_.end()) {
      std::string c = canonical_input_path(parent);
      if (c.empty() || c.back() != '/') c += '/';
      it = folders_.emplace(std::move(parent), std::move(c)).first;
    }
    return it->second + p.substr(slash + 1);
  }

 private:
  /// Absolute, lexically normal and naming a file: no "//", "." or ".." component, no '/' at the end.
  static bool plain_absolute(const std::string& p) {
    if (p.size() < 2 || p[0] != '/' || p.back() == '/') return false;
    for (std::size_t i = 0; i < p.size();) {  // i: a component's first byte after its '/'
      std::size_t j = p.find('/', i + 1);
      if (j == std::string::npos) j = p.size();
      const std::size_t n = j - i - 1;
      if (n == 0 || (n == 1 && p[i + 1] == '.') || (n == 2 && p[i + 1] == '.' && p[i + 2] == '.')) return false;
      i = j;
    }
    return true;
  }
  std::unordered_map<std::string, std::string> folders_;
};

inline ImageList collect_images(const std::filesystem::path& spec) {
  namespace fs = std::filesystem;
  ImageList list;
  std::error_code ec;
  std::vector<std::string> found;
  if (fs::is_directory(spec, ec)) {
    list.root = canonical_input_path(spec);
    const fs::path from = fs::absolute(spec, ec);  // absolute names: InputPathResolver's quick way
    for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec) && has_image_extension(it->path())) found.push_back(it->path().string());
    std::sort(found.begin(), found.end());
    if (found.empty()) throw InputError(spec.string(), "directory holds no image files");
  } else if (has_image_extension(spec) && fs::is_regular_file(spec, ec)) {  // one image file
    list.root = fs::path(canonical_input_path(spec)).parent_path();
    found.push_back(spec.string());
  } else {
    std::ifstream in(spec);
    if (!in)
      throw InputError(spec.string(), fs::exists(spec, ec) ? "cannot read image list" : "no such file or directory");
    const fs::path base = spec.parent_path();
    list.root = canonical_input_path(base.empty() ? fs::path(".") : base);
    std::string line;
    for (bool first = true; std::getline(in, line); first = false) {
      if (first && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 byte order mark
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      found.push_back(line[0] == '/' ? line : (list.root / line).string());
    }
    if (found.empty()) throw InputError(spec.string(), "image list is empty");
  }
  std::unordered_set<std::string> seen(found.size());
  InputPathResolver canonical;
  for (const auto& f : found) {
    std::string c = canonical(f);
    if (seen.insert(c).second)
      list.paths.push_back(std::move(c));
    else
      ++list.duplicates;
  }
  return list;
}

}  // namespace vecbench
