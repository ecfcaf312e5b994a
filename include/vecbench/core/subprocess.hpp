// Runs a shell command and captures what it prints: the one popen read loop of the project
// (external peers of an experiment, git in result metadata, the CLI tests).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

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

}  // namespace vecbench
