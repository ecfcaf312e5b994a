// What vectorize writes per input: the closed set of output formats.
#pragma once
#include <string>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// The output format of the vectors.
enum class OutputFormat {
  vc,      ///< one text file per input, the seed's np.savetxt format
  npy,     ///< one float32 .npy per input
  shards,  ///< [rows, dim] float32 .npy shards with the manifest naming each row
  none,    ///< nothing written (benchmarks)
};

inline const char* to_string(OutputFormat f) {
  switch (f) {
    case OutputFormat::vc:
      return "vc";
    case OutputFormat::npy:
      return "npy";
    case OutputFormat::shards:
      return "shards";
    case OutputFormat::none:
      return "none";
  }
  return "none";
}

/// ConfigError naming `key` for an unknown name.
inline OutputFormat parse_output_format(const std::string& s, const std::string& key = "format") {
  for (OutputFormat f : {OutputFormat::vc, OutputFormat::npy, OutputFormat::shards, OutputFormat::none})
    if (s == to_string(f)) return f;
  throw ConfigError(key, "unknown output format '" + s + "' (use vc, npy, shards or none)");
}

}  // namespace vecbench
