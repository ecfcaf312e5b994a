// Turns an `--images` argument into an ImageSource: a directory or list file of images
// (needs libjpeg and libpng; OpenCV for other formats than JPEG and PNG), a pre-decoded `.npy`, or
// `synthetic:N[:SEED]`.
#pragma once
#include <memory>
#include <string>

#include "vecbench/input/image_source.hpp"
#include "vecbench/input/input_layout.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#ifdef VECBENCH_WITH_CODEC
#include "vecbench/input/image_files.hpp"
#endif

namespace vecbench {

/// How file inputs are decoded and resized.
struct InputOptions {
  ResizeMode resize = ResizeMode::tf_legacy;      ///< resize mode for image files
  bool fast_decode = false;                       ///< reduced-DCT JPEG decode for large images
  ExifPolicy exif = ExifPolicy::ignore;           ///< EXIF orientation: ignore (TF-like) or apply
  JpegDecoder jpeg_decoder = JpegDecoder::exact;  ///< JPEG arithmetic: exact (PIL/OpenCV) or tf (TF's DecodeJpeg)
  DecodeWhere decode_where = DecodeWhere::cpu;    ///< gpu: JPEGs decoded on the replica's CUDA device (nvJPEG)
  bool lenient_decode = false;                    ///< accept JPEG/PNG decoder data warnings (reported)
  std::uint64_t max_pixels = 178956970;           ///< refuse larger images (0: no limit)
  InputLayout layout{};  ///< several encoders from one decode (image files only; empty: one input of `resize`)
};

inline bool opencv_available() {
#ifdef VECBENCH_WITH_OPENCV
  return true;
#else
  return false;
#endif
}

inline std::unique_ptr<ImageSource> make_source(const std::string& spec, const InputOptions& opt = {}) {
  if (!opt.layout.empty() &&
      (spec.rfind("synthetic:", 0) == 0 || (spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0)))
    throw ConfigError("--encoders", "'" + spec + "': several encoders from one decode need image files");
  if (spec.rfind("synthetic:", 0) == 0) {
    const std::string rest = spec.substr(10);
    const auto colon = rest.find(':');
    const std::string n_text = rest.substr(0, colon);
    const std::string seed_text = colon == std::string::npos ? "0" : rest.substr(colon + 1);
    auto digits = [](const std::string& t) {
      return !t.empty() && t.size() <= 12 && t.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(n_text) || !digits(seed_text) || std::stoull(n_text) == 0 || std::stoull(seed_text) > 0xffffffffull)
      throw ConfigError("--images", "bad synthetic spec '" + spec +
                                        "' (use synthetic:N or synthetic:N:SEED, N >= 1 images, SEED 0..4294967295)");
    return std::make_unique<SyntheticSource>(std::stoull(n_text), static_cast<std::uint32_t>(std::stoull(seed_text)));
  }
  if (spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0) return std::make_unique<PredecodedSource>(spec);
#ifdef VECBENCH_WITH_CODEC
  DecodeOptions d;
  d.fast = opt.fast_decode;
  d.jpeg_decoder = opt.jpeg_decoder;
  d.exif = opt.exif;
  d.lenient = opt.lenient_decode;
  d.max_pixels = opt.max_pixels;
  return std::make_unique<FileSource>(collect_images(spec), opt.resize, d, opt.decode_where, opt.layout);
#else
  (void)opt;
  throw ConfigError("images", "'" + spec +
                                  "': this vecbench was built without libjpeg and libpng, so it cannot "
                                  "decode image files; use a pre-decoded .npy or synthetic:N");
#endif
}

}  // namespace vecbench
