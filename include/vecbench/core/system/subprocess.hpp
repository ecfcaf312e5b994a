// Runs other programs: a shell command line whose output is captured (external peers of an
// experiment, whose commands are shell text by design; the CLI tests), or a program with an
// argument vector and no shell at all (the report's plot script).
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace vecbench {

/// What a finished shell command left.
struct CommandResult {
  int exit_code = -1;  ///< the command's exit status; -1 when it could not start or was killed by a signal
  std::string output;  ///< what it printed (stdout, plus stderr when asked)
  bool ok() const { return exit_code == 0; }
};

/// How a command's standard error is handled.
enum class Stderr {
  merge,    ///< captured with stdout (`2>&1`)
  discard,  ///< thrown away (`2>/dev/null`)
  inherit,  ///< left on the caller's stderr
};

/// Runs `command` through /bin/sh and waits for it.
inline CommandResult run_command(const std::string& command, Stderr err = Stderr::merge) {
  const char* redirect = err == Stderr::merge ? " 2>&1" : err == Stderr::discard ? " 2>/dev/null" : "";
  CommandResult r;
  std::FILE* f = ::popen((command + redirect).c_str(), "r");
  if (!f) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) r.output.append(buf, n);
  const int status = ::pclose(f);
  r.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs `argv[0]` (looked up in PATH) with the arguments `argv`, no shell involved (nothing to
/// quote), its stdout and stderr written to the file `log` ("": inherited), and waits for it.
/// Returns its exit status; -1 when it could not start or was killed by a signal.
inline int run_program(const std::vector<std::string>& argv, const std::string& log = "") {
  if (argv.empty()) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace vecbench
