// How the processes of one job (MPI ranks) share the inputs: a closed set, parsed once at the
// command line (no MPI or LibTorch here, so that the CLI can check it in any build).
#pragma once
#include <string>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// static_share: rank r takes every R-th input, fixed before the run ("static").
/// dynamic_chunks: rank 0 hands out chunks of inputs on request ("dynamic"; needs MPI).
enum class DistributionMode { static_share, dynamic_chunks };

/// "static" or "dynamic", as on the command line and in result files.
template <>
struct EnumNames<DistributionMode> {
  static constexpr const char* what = "mode";
  static constexpr std::array<std::pair<DistributionMode, const char*>, 2> names = {
      {{DistributionMode::static_share, "static"}, {DistributionMode::dynamic_chunks, "dynamic"}}};
};

inline const char* to_string(DistributionMode m) { return enum_name(m); }

inline DistributionMode parse_distribution_mode(const std::string& s) {
  return parse_enum<DistributionMode>(s, "--distribution");
}

}  // namespace vecbench
