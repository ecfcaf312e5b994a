// Atomic file writes (temp file + rename + directory fsync) and safe output names.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"

namespace vecbench {

namespace fs = std::filesystem;

/// Cache root (generated image sets, the stores `vecbench stats`/`fid` make from images, the
/// oneDNN weights cache, machine profiles): $VECBENCH_CACHE, else $XDG_CACHE_HOME/vecbench, else
/// ~/.cache/vecbench (an empty variable counts as unset).
inline fs::path cache_dir() {
  if (const char* c = std::getenv("VECBENCH_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "vecbench";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "vecbench";
  return fs::temp_directory_path() / "vecbench-cache";
}

/// Directories synced so far by sync_directory (in this process): what the tests count.
inline std::atomic<std::size_t>& directory_syncs() {
  static std::atomic<std::size_t> n{0};
  return n;
}

/// Puts `dir`'s entries on disk (fsync of the directory, as SQLite does after creating or
/// renaming a file): without it a power loss can lose a rename that a manifest line already
/// points at. An I/O error is thrown; a directory that cannot be opened or a filesystem that
/// does not sync directories (EINVAL) is left as it is.
inline void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err == EIO)
    throw IoError(dir.string(), "cannot sync the directory: " + std::string(std::strerror(err)), err);
  directory_syncs().fetch_add(1, std::memory_order_relaxed);
}

/// Writes a file atomically: the bytes `write(f)` puts on an open temp file in the same
/// directory (it returns false when a write failed; a large file is streamed, never held whole)
/// are flushed to disk, then the temp file is renamed over `path`, and the directory is synced. A
/// reader never sees a partial file; a kill at any point leaves either the old file, no file, or
/// the complete new one; after a power loss the rename is there once this returned. An exception
/// from `write` removes the temp file and goes on up.
inline void atomic_write_with(const fs::path& path, const std::function<bool(std::FILE*)>& write) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // The temp name stays short whatever the target's length (a long file name must not fail here).
  static std::atomic<unsigned long> seq{0};
  const std::string base = path.filename().string().substr(0, 100);
  const fs::path tmp =
      path.parent_path() / ("." + base + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(seq.fetch_add(1)));
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
      const int err = errno;
      throw IoError(path.string(), std::string("cannot create file: ") + std::strerror(err), err);
    }
    errno = 0;
    bool ok = false;
    try {
      ok = write(f) && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    } catch (...) {
      std::fclose(f);
      fs::remove(tmp, ec);
      throw;
    }
    const int err = errno;
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) {
      fs::remove(tmp, ec);
      throw IoError(path.string(),
                    std::string("write failed: ") + (err != 0 ? std::strerror(err) : "short write (disk full?)"), err);
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw IoError(path.string(), "cannot rename temp file into place");
  }
  sync_directory(path.parent_path());
}

/// atomic_write_with of a file made of several buffers, written in order (no copy into one).
inline void atomic_write(const fs::path& path, const std::vector<std::pair<const void*, std::size_t>>& pieces) {
  atomic_write_with(path, [&](std::FILE* f) {
    for (const auto& [data, size] : pieces)
      if (std::fwrite(data, 1, size, f) != size) return false;
    return true;
  });
}

inline void atomic_write(const fs::path& path, const void* data, std::size_t size) {
  atomic_write(path, {{data, size}});
}

inline void atomic_write(const fs::path& path, const std::string& text) {
  atomic_write(path, text.data(), text.size());
}

/// Removes leftovers of atomic writes killed mid-way (".NAME.tmp.PID[.SEQ]") below `dir`; with
/// `min_age_s` > 0 only those last written at least that long ago (other processes may be
/// writing the younger ones right now).
inline std::size_t remove_stale_temp_files(const fs::path& dir, double min_age_s = 0) {
  std::size_t n = 0;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos && it->is_regular_file(ec)) {
      if (min_age_s > 0) {
        const auto t = fs::last_write_time(it->path(), ec);
        if (ec || std::chrono::duration<double>(fs::file_time_type::clock::now() - t).count() < min_age_s) continue;
      }
      fs::remove(it->path(), ec);
      ++n;
    }
  }
  return n;
}

/// Maps an input path to a relative output path that cannot escape the output directory:
/// the path is made relative to `root` when it lies below it; otherwise root-name, "." and ".."
/// components are dropped or replaced ("..", "~" become "_up_"), and empty results become "_".
inline fs::path safe_relative_name(const fs::path& input, const fs::path& root) {
  fs::path p = input.lexically_normal();
  if (!root.empty()) {
    const fs::path rel = p.lexically_relative(root.lexically_normal());
    if (!rel.empty() && *rel.begin() != "..") p = rel;
  }
  fs::path out;
  for (const auto& part : p.relative_path()) {
    const std::string s = part.string();
    if (s.empty() || s == ".") continue;
    if (s == ".." || s == "~") {
      out /= "_up_";
    } else {
      out /= s;
    }
  }
  if (out.empty()) out = "_";
  return out;
}

}  // namespace vecbench
