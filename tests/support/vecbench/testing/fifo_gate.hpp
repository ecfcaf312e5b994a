// A FIFO among a run's input files, as the test's gate (issue #63): the run's read of that input
// blocks until the test feeds it, so the test, not the machine's speed, decides when the run
// gets past it (a second writer meets the first still running; a kill or an interrupt lands
// mid-run). Every wait here has a guard that only a hang reaches.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

namespace vecbench::testing {

/// How long a gate waits before it calls it a hang.
inline constexpr std::chrono::seconds kGateGuard{120};

/// Makes a FIFO at `path`; false (errno set) when it cannot.
inline bool make_fifo(const std::filesystem::path& path) { return ::mkfifo(path.c_str(), 0600) == 0; }

/// Polls `ready()` every 10 ms until it holds (true) or `give_up()` does or the guard passes (false).
inline bool wait_until(const std::function<bool()>& ready, const std::function<bool()>& give_up = {},
                       std::chrono::seconds guard = kGateGuard) {
  const auto end = std::chrono::steady_clock::now() + guard;
  while (!ready()) {
    if ((give_up && give_up()) || std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// Once a reader has the FIFO `path` open, writes `bytes` into it and closes it (the reader then
/// reads to its end). False when no reader came before `give_up()` held or the guard passed.
inline bool feed_fifo(const std::filesystem::path& path, const std::string& bytes,
                      const std::function<bool()>& give_up = {}, std::chrono::seconds guard = kGateGuard) {
  int fd = -1;
  const bool opened = wait_until(
      [&] {  // ENXIO until the reader has opened its end
        fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        return fd >= 0;
      },
      give_up, guard);
  if (!opened) return false;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
    if (n <= 0) break;
    put += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return put == bytes.size();
}

}  // namespace vecbench::testing
