// This binary's build (include/vecbench/app/build_info.hpp), from the fragment that
// tools/build_info.cmake regenerates at every build.
#include "vecbench/app/build_info.hpp"

namespace vecbench {
namespace {
#include "build_info.inc"
}  // namespace

BuildInfo build_info() { return {kBuildGitSha, kBuildGitDirty, kBuildType, kBuildFlags}; }

}  // namespace vecbench
