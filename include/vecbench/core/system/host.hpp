// Where and when: the host name and UTC time stamps, for result metadata, lock holders and the
// output folder's records; the running executable's path, for what is installed beside it.
#pragma once
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>

namespace vecbench {

/// The running executable's path (/proc/self/exe), empty if it cannot be read. Its folder's
/// parent is an installed binary's prefix (P/bin/vecbench: P/lib/vecbench, P/share/vecbench).
inline std::filesystem::path running_executable() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe;
}

/// This machine's host name ("unknown" if it cannot be had).
inline std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// The current UTC time formatted with strftime's `format`; the default is the compact stamp of
/// file names ("20261201T081500Z").
inline std::string utc_stamp(const char* format = "%Y%m%dT%H%M%SZ") {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char ts[48];
  std::strftime(ts, sizeof ts, format, &tm);
  return ts;
}

}  // namespace vecbench
