// How the processes of one job (MPI ranks) share the inputs: a closed set, parsed once at the
// command line (no MPI or LibTorch here, so that the CLI can check it in any build).
#pragma once
#include <string>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// static_share: rank r takes every R-th input, fixed before the run ("static").
/// dynamic_chunks: rank 0 hands out chunks of inputs on request ("dynamic"; needs MPI).
enum class DistributionMode { static_share, dynamic_chunks };

/// "static" or "dynamic", as on the command line and in result files.
inline const char* to_string(DistributionMode m) {
  return m == DistributionMode::dynamic_chunks ? "dynamic" : "static";
}

inline DistributionMode parse_distribution_mode(const std::string& s) {
  if (s == "static") return DistributionMode::static_share;
  if (s == "dynamic") return DistributionMode::dynamic_chunks;
  throw ConfigError("--distribution", "unknown mode '" + s + "' (use static or dynamic)");
}

}  // namespace vecbench
