// What vectorize writes per input: the closed set of output formats.
#pragma once
#include <string>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// The output format of the vectors.
enum class OutputFormat {
  vc,      ///< one text file per input, the seed's np.savetxt format
  npy,     ///< one float32 .npy per input
  shards,  ///< [rows, dim] float32 .npy shards with the manifest naming each row
  none,    ///< nothing written (benchmarks)
};

template <>
struct EnumNames<OutputFormat> {
  static constexpr const char* what = "output format";
  static constexpr std::array<std::pair<OutputFormat, const char*>, 4> names = {{{OutputFormat::vc, "vc"},
                                                                                 {OutputFormat::npy, "npy"},
                                                                                 {OutputFormat::shards, "shards"},
                                                                                 {OutputFormat::none, "none"}}};
};

inline const char* to_string(OutputFormat f) { return enum_name(f); }

/// ConfigError naming `key` for an unknown name.
inline OutputFormat parse_output_format(const std::string& s, const std::string& key = "format") {
  return parse_enum<OutputFormat>(s, key);
}

}  // namespace vecbench
