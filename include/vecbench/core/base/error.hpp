// Error types: every error names the file (or setting) and the cause.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace vecbench {

/// Base of all vecbench errors.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A bad input image or input list: `file` is the path, `cause` a one-line reason.
struct InputError : Error {
  InputError(std::string file_, std::string cause_)
      : Error(file_ + ": " + cause_), file(std::move(file_)), cause(std::move(cause_)) {}
  std::string file;
  std::string cause;
};

/// A file that cannot be read or written; `error_number`: the errno behind it where there was one
/// (0 otherwise), for callers that act on the cause (a full disk) rather than on the message.
struct IoError : Error {
  IoError(const std::string& file, const std::string& cause, int error_number_ = 0)
      : Error(file + ": " + cause), error_number(error_number_) {}
  int error_number = 0;
};

/// A bad setting (CLI flag or experiment key): `key` names it.
struct ConfigError : Error {
  ConfigError(std::string key_, std::string cause_)
      : Error(key_ + ": " + cause_), key(std::move(key_)), cause(std::move(cause_)) {}
  std::string key;
  std::string cause;
};

/// The output folder refuses this run: another process holds its lock, or it holds vectors
/// made under another fingerprint. Nothing was written. `vecbench` exits with status 3.
struct OutputFolderError : Error {
  OutputFolderError(const std::string& dir, const std::string& cause) : Error(dir + ": " + cause) {}
};

/// Raised by a model replica (load, warm-up or forward); the run stops cleanly.
struct ReplicaError : Error {
  using Error::Error;
};

}  // namespace vecbench
