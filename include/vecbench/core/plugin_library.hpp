// Opening one of vecbench's own shared libraries on first use (dlopen): the parts that need a
// heavy third-party library (LibTorch: engine/torch_plugin.hpp; OpenCV: input/opencv_plugin.hpp)
// live in a library of their own, so that a process that never needs them never loads them
// (loading LibTorch and OpenCV's shared libraries took 1.0 s of every start on 2 cores).
// Where a library NAME is looked for, first found wins: $ENV_VAR (a file: nothing else is
// tried); the running executable's folder, its parent (a build folder's tests/ and bench/), and
// <parent>/lib/vecbench; `build_dir` (the build folder that compiled the caller).
#pragma once
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// Where the library `name` is looked for, in order (see above).
inline std::vector<std::string> plugin_library_candidates(const std::string& name, const char* env_var,
                                                          const std::string& build_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> c;
  if (const char* env = std::getenv(env_var); env && *env) return {env};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    c.push_back((exe.parent_path() / name).string());
    c.push_back((exe.parent_path().parent_path() / name).string());
    c.push_back((exe.parent_path().parent_path() / "lib" / "vecbench" / name).string());
  }
  if (!build_dir.empty()) c.push_back((fs::path(build_dir) / name).string());
  return c;
}

/// Opens the first of `candidates` that loads and whose `entry(abi)` returns a table `accept`s;
/// returns that table. Throws Error("cannot load <what> ...") listing every path tried and why.
/// The library stays open for the life of the process (RTLD_LOCAL: its dependencies' symbols never
/// take the place of the executable's).
template <class Api, class Accept>
const Api* open_plugin_library(const std::vector<std::string>& candidates, const char* entry, int abi, Accept accept,
                               const std::string& what, std::string* opened_path) {
  namespace fs = std::filesystem;
  std::string tried;
  for (const auto& path : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      tried += "\n  " + path + ": no such file";
      continue;
    }
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      tried += "\n  " + path + ": " + (e ? e : "cannot be loaded");
      continue;
    }
    using Entry = const Api* (*)(int);
    auto f = reinterpret_cast<Entry>(::dlsym(h, entry));
    const Api* api = f ? f(abi) : nullptr;
    if (!api || !accept(*api)) {  // left open: a library's static objects may not survive dlclose
      tried += "\n  " + path + ": another version of vecbench's library (rebuild)";
      continue;
    }
    if (opened_path) *opened_path = path;
    return api;
  }
  throw Error("cannot load " + what + ":" + tried);
}

}  // namespace vecbench
