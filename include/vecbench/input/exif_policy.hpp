// What the decoder does with a photo's EXIF orientation tag (no OpenCV here, so that the CLI
// can check the setting in any build).
#pragma once
#include <string>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// ignore: as TF's DecodeJpeg in the seed's graph (features then match TF's); apply: rotate and
/// flip as the tag says, as OpenCV does.
enum class ExifPolicy { ignore, apply };

template <>
struct EnumNames<ExifPolicy> {
  static constexpr const char* what = "EXIF policy";
  static constexpr std::array<std::pair<ExifPolicy, const char*>, 2> names = {
      {{ExifPolicy::ignore, "ignore"}, {ExifPolicy::apply, "apply"}}};
};

inline const char* to_string(ExifPolicy p) { return enum_name(p); }

inline ExifPolicy parse_exif_policy(const std::string& s) { return parse_enum<ExifPolicy>(s, "exif"); }

}  // namespace vecbench
