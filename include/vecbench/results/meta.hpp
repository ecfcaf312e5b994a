// Result metadata: where and with what a result was measured.
#pragma once
#include <unistd.h>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/run/device.hpp"
#include "vecbench/core/system/host.hpp"
#include "vecbench/core/system/machine_load.hpp"

namespace vecbench {

inline std::string utc_now_iso() { return utc_stamp("%Y-%m-%dT%H:%M:%SZ"); }

/// The common part of "meta"; the caller adds versions of its backends, the model and the
/// environment record. `git_sha` and `git_dirty` are the binary's own (compiled in at build time:
/// app/build_info.hpp), never read from the checkout, which may hold another commit by now.
inline nlohmann::json base_meta(int argc, char** argv, const std::string& version, const std::string& git_sha,
                                bool git_dirty) {
  nlohmann::json m;
  m["argv"] = std::vector<std::string>(argv, argv + argc);
  m["vecbench_version"] = version;
  m["git_sha"] = git_sha;
  m["git_dirty"] = git_dirty;
  m["date_utc"] = utc_now_iso();
  m["host"] = host_name();
  m["cpu_model"] = cpu_model();
  m["cpu_cores"] = hardware_cores();
  return m;
}

}  // namespace vecbench
