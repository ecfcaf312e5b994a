// `vecbench merge`: output folders' manifests (dist/merge_manifests.hpp) or shards' result
// files (dist/merge_results.hpp) into one; implemented in src/app/merge_command.cpp.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "vecbench/dist/merge_manifests.hpp"
#include "vecbench/dist/merge_results.hpp"

namespace vecbench {

/// `vecbench merge`: with `results`, merges those result files into the file `out`; otherwise
/// merges the manifests of each directory of `dirs` in place, or of all of them into `out`
/// (`out` alone: that directory in place). Prints what it did on `info`; returns the exit status.
int merge_command(const std::vector<std::string>& dirs, const std::vector<std::string>& results, const std::string& out,
                  std::ostream& info, std::ostream& log);

}  // namespace vecbench
