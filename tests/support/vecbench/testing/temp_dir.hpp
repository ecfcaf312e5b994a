// A fresh, empty scratch directory for a test (removed first if a previous run left it).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace vecbench::testing {

/// $TMPDIR/vecbench_test_<name>_<pid>, emptied and created.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("vecbench_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// fresh_temp_dir(tag), removed again when it goes out of scope.
struct ScopedTempDir {
  std::filesystem::path path;
  explicit ScopedTempDir(const std::string& tag) : path(fresh_temp_dir(tag)) {}
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
};

}  // namespace vecbench::testing
