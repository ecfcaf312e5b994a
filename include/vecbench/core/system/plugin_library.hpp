// Opening one of vecbench's own shared libraries on first use (dlopen): the parts that need a
// heavy third-party library (LibTorch: engine/torch_plugin.hpp; OpenCV: input/opencv_plugin.hpp)
// live in a library of their own, so that a process that never needs them never loads them
// (loading LibTorch and OpenCV's shared libraries took 1.0 s of every start on 2 cores).
// Where a library NAME is looked for, first found wins: $ENV_VAR (a file: nothing else is
// tried); the running executable's folder, its parent (a build folder's tests/ and bench/), and
// <parent>/lib/vecbench; `build_dir` (the build folder that compiled the caller).
#pragma once
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/system/host.hpp"

namespace vecbench {

/// Where the library `name` is looked for, in order (see above).
inline std::vector<std::string> plugin_library_candidates(const std::string& name, const char* env_var,
                                                          const std::string& build_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> c;
  if (const char* env = std::getenv(env_var); env && *env) return {env};
  if (const fs::path exe = running_executable(); !exe.empty()) {
    c.push_back((exe.parent_path() / name).string());
    c.push_back((exe.parent_path().parent_path() / name).string());
    c.push_back((exe.parent_path().parent_path() / "lib" / "vecbench" / name).string());
  }
  if (!build_dir.empty()) c.push_back((fs::path(build_dir) / name).string());
  return c;
}

/// One of vecbench's own libraries, opened on the first get() (thread-safe) and kept open for
/// the life of the process (RTLD_LOCAL: its dependencies' symbols never take the place of the
/// executable's). `Api` is the library's table, with `abi` and `size` members; `entry(abi)` is
/// the library's one exported function. A failure is remembered: later get()s throw the same
/// Error without trying again (a run of many files that need a missing library tries once).
template <class Api>
class PluginLibrary {
 public:
  /// `name` (libvecbench_X.so), `env_var` naming a file that replaces the search, `entry`, the
  /// caller's `abi`, `what` the error names ("cannot load <what>: ..."), `build_dir` searched last.
  PluginLibrary(std::string name, const char* env_var, const char* entry, int abi, std::string what,
                std::string build_dir)
      : name_(std::move(name)),
        env_var_(env_var),
        entry_(entry),
        abi_(abi),
        what_(std::move(what)),
        build_dir_(std::move(build_dir)) {}

  /// The table; throws Error listing every path tried and why when no candidate opens.
  const Api& get() {
    if (const Api* a = api_.load(std::memory_order_acquire)) return *a;
    std::lock_guard<std::mutex> lk(mu_);
    if (const Api* a = api_.load(std::memory_order_acquire)) return *a;
    if (!failure_.empty()) throw Error(failure_);
    std::string tried;
    for (const auto& path : plugin_library_candidates(name_, env_var_, build_dir_)) {
      if (const Api* a = open(path, tried)) {
        path_ = path;
        api_.store(a, std::memory_order_release);
        return *a;
      }
    }
    failure_ = "cannot load " + what_ + ":" + tried;
    throw Error(failure_);
  }
  /// The table when the library is already open, else null (opens nothing).
  const Api* if_loaded() const { return api_.load(std::memory_order_acquire); }
  /// The file it was opened from ("" while it is not open).
  std::string path() const {
    std::lock_guard<std::mutex> lk(mu_);
    return path_;
  }

 private:
  /// The table of the library at `path`, or null with the reason appended to `tried`.
  const Api* open(const std::string& path, std::string& tried) const {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += "\n  " + path + ": no such file";
      return nullptr;
    }
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      tried += "\n  " + path + ": " + (e ? e : "cannot be loaded");
      return nullptr;
    }
    using Entry = const Api* (*)(int);
    auto f = reinterpret_cast<Entry>(::dlsym(h, entry_));
    const Api* a = f ? f(abi_) : nullptr;
    if (!a || a->abi != abi_ || a->size != sizeof(Api)) {  // left open: static objects may not survive dlclose
      tried += "\n  " + path + ": another version of vecbench's library (rebuild)";
      return nullptr;
    }
    return a;
  }

  const std::string name_;
  const char* const env_var_;
  const char* const entry_;
  const int abi_;
  const std::string what_;
  const std::string build_dir_;
  mutable std::mutex mu_;
  std::atomic<const Api*> api_{nullptr};  ///< set once, never cleared: the library is never closed
  std::string path_;
  std::string failure_;  ///< the Error of the failed attempt, thrown again
};

}  // namespace vecbench
