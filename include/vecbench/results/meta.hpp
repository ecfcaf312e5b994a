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

/// Output of a shell command, or "" if it fails.
inline std::string shell_output(const std::string& cmd) {
  std::FILE* f = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!f) return "";
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  if (::pclose(f) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

/// Whether the source tree has uncommitted changes (null if git or the tree is not there).
inline nlohmann::json git_dirty(const std::string& source_dir) {
  std::FILE* f =
      ::popen(("git -C '" + source_dir + "' status --porcelain --untracked-files=no 2>/dev/null").c_str(), "r");
  if (!f) return nullptr;
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int rc = ::pclose(f);
  if (rc != 0) return nullptr;
  return !out.empty();
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
