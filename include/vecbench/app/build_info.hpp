// What this binary was built from and how (compiled in at every build by tools/build_info.cmake,
// never read from the checkout at run time): a result names the commit of the binary that
// measured it, not whatever the source tree holds now.
#pragma once
#include <string>

namespace vecbench {

struct BuildInfo {
  std::string git_sha;         ///< short commit id, or "unknown" (not built from a git checkout)
  bool git_dirty = false;      ///< the work tree had uncommitted changes when it was built
  std::string build_type;      ///< CMAKE_BUILD_TYPE, e.g. "Release"
  std::string compiler_flags;  ///< CMAKE_CXX_FLAGS and those of the build type
};

/// This binary's build.
BuildInfo build_info();

}  // namespace vecbench
