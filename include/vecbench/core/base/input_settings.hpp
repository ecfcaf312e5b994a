// The input side's closed settings with their names: the resize mode and the kind of source. A
// result file records both (its params' "resize" and "input"), so they live here, where the
// results layer, which sees only core, can read them; the input layer does the work they name.
#pragma once
#include <array>
#include <string>
#include <utility>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/resize_mode.hpp"

namespace vecbench {

template <>
struct EnumNames<ResizeMode> {
  static constexpr const char* what = "resize mode";
  static constexpr std::array<std::pair<ResizeMode, const char*>, 7> names = {
      {{ResizeMode::tf_legacy, "tf-legacy"},
       {ResizeMode::bilinear, "bilinear"},
       {ResizeMode::pil_bicubic, "pil-bicubic"},
       {ResizeMode::pil_bicubic_u8, "pil-bicubic-u8"},
       {ResizeMode::torch_bicubic_aa, "torch-bicubic-aa"},
       {ResizeMode::center_crop_pil_bicubic_u8, "center-crop-pil-bicubic-u8"},
       {ResizeMode::pil_bicubic_u8_short_side_crop, "pil-bicubic-u8-short-side-crop"}}};
};
inline ResizeMode parse_resize_mode(const std::string& s) { return parse_enum<ResizeMode>(s, "resize"); }
inline std::string to_string(ResizeMode m) { return enum_name(m); }

/// What an image source holds (a result file's params "input", the fingerprint's "source").
enum class SourceKind {
  files,       ///< image files (a folder, a list file, a glob)
  predecoded,  ///< pixels decoded before the run (an image set in memory)
  synthetic,   ///< generated pixels (benchmarks, tests)
};
template <>
struct EnumNames<SourceKind> {
  static constexpr const char* what = "source kind";
  static constexpr std::array<std::pair<SourceKind, const char*>, 3> names = {
      {{SourceKind::files, "files"}, {SourceKind::predecoded, "predecoded"}, {SourceKind::synthetic, "synthetic"}}};
};
inline const char* to_string(SourceKind k) { return enum_name(k); }

}  // namespace vecbench
