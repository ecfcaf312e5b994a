// One writer per output folder: an advisory lock (flock) held for the whole run.
// A single process takes OUT/.vecbench.lock exclusively. The processes of one multi-process
// job (MPI ranks, --shard-index shards) share it (shared lock) and each takes its own
// OUT/.vecbench.lock-rRRRR exclusively, so two processes never write the same per-rank files
// and a one-process run never runs beside a multi-process one. The holder writes its pid and
// host into the lock file it holds exclusively, for the message a second process gets.
// The lock goes with the process (a kill -9 releases it); no stale lock is left behind.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/system/host.hpp"

namespace vecbench {

class OutputLock {
 public:
  OutputLock() = default;
  /// Locks `dir` for writer `rank` (-1: the only writer). Throws OutputFolderError naming the
  /// holder when another process has it.
  OutputLock(const std::filesystem::path& dir, int rank) {
    const auto main = dir / ".vecbench.lock";
    if (rank < 0) {
      main_ = take(main, LOCK_EX, dir, "another vecbench is writing to it");
      note_holder(main_);
      return;
    }
    main_ = take(main, LOCK_SH, dir, "a one-process vecbench is writing to it");
    char name[40];
    std::snprintf(name, sizeof name, ".vecbench.lock-r%04d", rank);
    rank_ = take(dir / name, LOCK_EX, dir, "another process is writing rank " + std::to_string(rank) + "'s files");
    note_holder(rank_);
  }
  ~OutputLock() { release(); }
  OutputLock(OutputLock&& o) noexcept : main_(o.main_), rank_(o.rank_) { o.main_ = o.rank_ = -1; }
  OutputLock& operator=(OutputLock&& o) noexcept {
    if (this != &o) {
      release();
      main_ = o.main_;
      rank_ = o.rank_;
      o.main_ = o.rank_ = -1;
    }
    return *this;
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  bool held() const { return main_ >= 0; }

 private:
  static int take(const std::filesystem::path& file, int how, const std::filesystem::path& dir,
                  const std::string& why) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError(file.string(), std::string("cannot open lock file: ") + std::strerror(errno));
    if (::flock(fd, how | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err != EWOULDBLOCK) throw IoError(file.string(), std::string("cannot lock: ") + std::strerror(err));
      std::string holder;
      if (how == LOCK_EX && shared_holders(file)) {
        holder = "a multi-process job (MPI ranks or --shard-index shards)";
      } else {
        std::ifstream in(file);
        std::getline(in, holder);
      }
      throw OutputFolderError(dir.string(), "in use: " + why + (holder.empty() ? "" : " (" + holder + ")") +
                                                "; wait for it to finish, or write to another --out");
    }
    return fd;
  }
  /// True when `file` is held by shared locks only (a shared lock can be had beside them).
  static bool shared_holders(const std::filesystem::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool shared = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    ::close(fd);
    return shared;
  }
  static void note_holder(int fd) {
    std::ostringstream s;
    s << "pid " << ::getpid() << " on host " << host_name() << "\n";
    const std::string t = s.str();
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, t.data(), t.size(), 0);
  }
  void release() {
    for (int* fd : {&rank_, &main_})
      if (*fd >= 0) {
        ::close(*fd);  // closing the descriptor releases the flock
        *fd = -1;
      }
  }
  int main_ = -1;
  int rank_ = -1;
};

}  // namespace vecbench
