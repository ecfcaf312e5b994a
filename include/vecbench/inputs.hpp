// Turns an `--images` argument into an ImageSource: a directory or list file of images
// (needs OpenCV), a pre-decoded `.npy`, or `synthetic:N[:SEED]`.
#pragma once
#include <memory>
#include <string>

#include "vecbench/image_source.hpp"
#ifdef VECBENCH_WITH_OPENCV
#include "vecbench/image_files.hpp"
#endif

namespace vecbench {

/// How file inputs are decoded and resized.
struct InputOptions {
  ResizeMode resize = ResizeMode::tf_legacy;  ///< resize mode for image files
  bool fast_decode = false;                   ///< reduced-DCT JPEG decode for large images
  std::string exif = "ignore";                ///< EXIF orientation: ignore (TF-like) or apply
};

inline bool opencv_available() {
#ifdef VECBENCH_WITH_OPENCV
  return true;
#else
  return false;
#endif
}

inline std::unique_ptr<ImageSource> make_source(const std::string& spec, const InputOptions& opt = {}) {
  if (spec.rfind("synthetic:", 0) == 0) {
    const std::string rest = spec.substr(10);
    const auto colon = rest.find(':');
    try {
      const std::size_t n = std::stoull(rest.substr(0, colon));
      const auto seed =
          colon == std::string::npos ? 0u : static_cast<std::uint32_t>(std::stoul(rest.substr(colon + 1)));
      return std::make_unique<SyntheticSource>(n, seed);
    } catch (const std::logic_error&) {
      throw ConfigError("images", "bad synthetic spec '" + spec + "' (use synthetic:N or synthetic:N:SEED)");
    }
  }
  if (spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0) return std::make_unique<PredecodedSource>(spec);
#ifdef VECBENCH_WITH_OPENCV
  DecodeOptions d;
  d.fast = opt.fast_decode;
  d.exif = parse_exif_policy(opt.exif);
  return std::make_unique<FileSource>(collect_images(spec), opt.resize, d);
#else
  (void)opt;
  throw ConfigError("images", "'" + spec +
                                  "': this vecbench was built without OpenCV, so it cannot decode image "
                                  "files; use a pre-decoded .npy or synthetic:N");
#endif
}

}  // namespace vecbench
