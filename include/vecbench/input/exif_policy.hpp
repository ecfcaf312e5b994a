// What the decoder does with a photo's EXIF orientation tag (no OpenCV here, so that the CLI
// can check the setting in any build).
#pragma once
#include <string>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// ignore: as TF's DecodeJpeg in the seed's graph (features then match TF's); apply: rotate and
/// flip as the tag says, as OpenCV does.
enum class ExifPolicy { ignore, apply };

inline const char* to_string(ExifPolicy p) { return p == ExifPolicy::apply ? "apply" : "ignore"; }

inline ExifPolicy parse_exif_policy(const std::string& s) {
  if (s == "ignore") return ExifPolicy::ignore;
  if (s == "apply") return ExifPolicy::apply;
  throw ConfigError("exif", "unknown EXIF policy '" + s + "' (use ignore or apply)");
}

}  // namespace vecbench
