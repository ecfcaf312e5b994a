// Generated image sets: N images of given sizes and formats made deterministically from a seed
// out of real photos (by crop, scale and re-encode). Cached on disk, never committed.
#pragma once
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/input/imageset_spec.hpp"

namespace vecbench {

/// ImageNet-like sizes (width, height) used when an experiment gives none.
inline std::vector<std::pair<int, int>> default_imagenet_sizes() {
  return {{500, 375}, {375, 500}, {500, 333}, {500, 500}, {640, 480}, {400, 300}, {333, 500}, {800, 600}};
}

/// Makes (or finds in the cache) the set; returns its directory.
inline fs::path generate_image_set(const ImageSetSpec::Generate& g) {
  auto sizes = g.sizes.empty() ? default_imagenet_sizes() : g.sizes;
  std::string key =
      std::to_string(g.count) + "|" + std::to_string(g.seed) + "|" + g.from + "|" + std::to_string(g.jpeg_quality);
  for (auto& s : sizes) key += "|" + std::to_string(s.first) + "x" + std::to_string(s.second);
  for (const ImageFileFormat f : g.formats) key += std::string("|") + enum_name(f);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(key));
  const fs::path dir = cache_dir() / "imagesets" / hex;
  std::error_code ec;
  if (fs::exists(dir / ".complete", ec)) return dir;
  const ImageList photos = collect_images(g.from);
  std::vector<cv::Mat> decoded(photos.paths.size());
  std::mt19937 rng(g.seed);
  fs::create_directories(dir, ec);
  for (std::size_t i = 0; i < g.count; ++i) {
    const std::size_t pi = rng() % photos.paths.size();
    if (decoded[pi].empty()) {
      decoded[pi] = cv::imread(photos.paths[pi], cv::IMREAD_COLOR);
      if (decoded[pi].empty()) throw InputError(photos.paths[pi], "cannot decode source photo for the image set");
    }
    const cv::Mat& src = decoded[pi];
    const auto [w, h] = sizes[i % sizes.size()];
    // Random crop with the target aspect ratio covering 50..100% of the largest such crop.
    const double aspect = static_cast<double>(w) / h;
    int cw = src.cols, ch = static_cast<int>(cw / aspect);
    if (ch > src.rows) {
      ch = src.rows;
      cw = static_cast<int>(ch * aspect);
    }
    const double scale = 0.5 + 0.5 * (rng() % 1000) / 999.0;
    cw = std::max(8, static_cast<int>(cw * std::sqrt(scale)));
    ch = std::max(8, static_cast<int>(ch * std::sqrt(scale)));
    const int x = static_cast<int>(rng() % static_cast<unsigned>(src.cols - cw + 1));
    const int y = static_cast<int>(rng() % static_cast<unsigned>(src.rows - ch + 1));
    cv::Mat out;
    cv::resize(src(cv::Rect(x, y, cw, ch)), out, cv::Size(w, h), 0, 0, w < cw ? cv::INTER_AREA : cv::INTER_LINEAR);
    const ImageFileFormat format = g.formats[i % g.formats.size()];
    const std::string fmt = enum_name(format);
    std::vector<int> params;
    if (format == ImageFileFormat::jpg) params = {cv::IMWRITE_JPEG_QUALITY, g.jpeg_quality};
    if (format == ImageFileFormat::webp) params = {cv::IMWRITE_WEBP_QUALITY, g.jpeg_quality};
    std::vector<std::uint8_t> bytes;
    if (!cv::imencode("." + fmt, out, bytes, params)) throw Error("image set: cannot encode ." + fmt);
    char name[32];
    std::snprintf(name, sizeof name, "img_%05zu.%s", i, fmt.c_str());
    atomic_write(dir / name, bytes.data(), bytes.size());
  }
  atomic_write(dir / ".complete", key + "\n");
  return dir;
}

}  // namespace vecbench
