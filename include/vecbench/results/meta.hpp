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

#include "vecbench/core/device.hpp"
#include "vecbench/core/host.hpp"
#include "vecbench/core/subprocess.hpp"

namespace vecbench {

inline std::string utc_now_iso() { return utc_stamp("%Y-%m-%dT%H:%M:%SZ"); }

inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown";
}

/// Output of a shell command (trailing blanks cut), or "" if it fails.
inline std::string shell_output(const std::string& cmd) {
  CommandResult r = run_command(cmd, Stderr::discard);
  if (!r.ok()) return "";
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
  return r.output;
}

/// Whether the source tree has uncommitted changes (null if git or the tree is not there).
inline nlohmann::json git_dirty(const std::string& source_dir) {
  const CommandResult r =
      run_command("git -C '" + source_dir + "' status --porcelain --untracked-files=no", Stderr::discard);
  if (!r.ok()) return nullptr;
  return !r.output.empty();
}

/// The common part of "meta"; the caller adds versions of its backends and the model.
inline nlohmann::json base_meta(int argc, char** argv, const std::string& version, const std::string& git_sha,
                                const std::string& source_dir) {
  nlohmann::json m;
  m["argv"] = std::vector<std::string>(argv, argv + argc);
  m["vecbench_version"] = version;
  const std::string live = shell_output("git -C '" + source_dir + "' rev-parse --short=12 HEAD");
  m["git_sha"] = live.empty() ? git_sha : live;
  m["git_dirty"] = git_dirty(source_dir);
  m["date_utc"] = utc_now_iso();
  m["host"] = host_name();
  m["cpu_model"] = cpu_model();
  m["cpu_cores"] = hardware_cores();
  return m;
}

}  // namespace vecbench
